-- Org chart: employees and their managers.
--   1. How many people work under each manager, directly or not? count() adds up the size of each
--      report's team (plus one for the report): on a tree this is the ordinary head count.
--   2. The management chain of Mo, from the direct manager up to the top, with plain UNION.
--
--   recsql run examples/org_chart.sql

DROP TABLE IF EXISTS employee;

CREATE TABLE employee (name STRING, title STRING, manager STRING)
USING csv OPTIONS (path 'data/employees.csv', header 'true');

-- 1. Head count under each manager.
WITH RECURSIVE team(name, count() AS members) AS
  (SELECT name, 1 FROM employee)
  UNION
  (SELECT e.manager, t.members FROM team t, employee e WHERE e.name = t.name AND e.manager IS NOT NULL)
SELECT name AS manager, members - 1 AS head_count
FROM team
WHERE members > 1
ORDER BY head_count DESC, manager;

-- 2. Mo's chain of managers, one step up at a time.
WITH RECURSIVE chain(step, boss) AS
  (SELECT 1, manager FROM employee WHERE name = 'Mo')
  UNION
  (SELECT c.step + 1, e.manager FROM chain c, employee e WHERE e.name = c.boss AND e.manager IS NOT NULL)
SELECT c.step, c.boss, e.title
FROM chain c JOIN employee e ON e.name = c.boss
ORDER BY c.step;
