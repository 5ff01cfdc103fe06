-- Bill of materials of a bicycle. Basic parts are bought (delivery days, unit cost); assemblies are
-- made of parts and other assemblies, some shared (bolts and bearings go into several assemblies):
-- a row (part, sub, qty) of `component` says that one `part` takes `qty` of `sub`.
--   1. When can each assembly be built? When its slowest part arrives: max() of the days below it.
--   2. What does each assembly cost? The sum of quantity x cost of its direct parts, rolled up:
--      sum() over the DAG of parts.
--
--   recsql run examples/bill_of_materials.sql

DROP TABLE IF EXISTS basic_part;
DROP TABLE IF EXISTS component;

CREATE TABLE basic_part (part STRING, days INT, cost DOUBLE)
USING csv OPTIONS (path 'data/basic_parts.csv', header 'true');

CREATE TABLE component (part STRING, sub STRING, qty INT)
USING csv OPTIONS (path 'data/components.csv', header 'true');

-- 1. Days until each assembly can be built.
WITH RECURSIVE ready(part, max() AS days) AS
  (SELECT part, days FROM basic_part)
  UNION
  (SELECT c.part, r.days FROM ready r, component c WHERE r.part = c.sub)
SELECT part AS assembly, days
FROM ready
WHERE part IN (SELECT part FROM component)
ORDER BY assembly;

-- 2. Cost of each assembly.
WITH RECURSIVE price(part, sum() AS total) AS
  (SELECT part, cost FROM basic_part)
  UNION
  (SELECT c.part, c.qty * p.total FROM price p, component c WHERE p.part = c.sub)
SELECT part AS assembly, total AS cost
FROM price
WHERE part IN (SELECT part FROM component)
ORDER BY assembly;
