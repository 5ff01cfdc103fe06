-- Shortest road distances: how many kilometres from Amsterdam to every town of a small Dutch road
-- network (each road is listed once per direction). min() keeps the shortest distance found for each
-- town, and only towns whose distance improved are explored again.
--
--   recsql run examples/shortest_paths.sql

DROP TABLE IF EXISTS road;

CREATE TABLE road (src STRING, dst STRING, km INT)
USING csv OPTIONS (path 'data/roads.csv', header 'true');

WITH RECURSIVE dist(town, min() AS km) AS
  (SELECT 'Amsterdam', 0)
  UNION
  (SELECT r.dst, d.km + r.km FROM dist d, road r WHERE d.town = r.src)
SELECT town, km
FROM dist
ORDER BY km, town;
