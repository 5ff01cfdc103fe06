-- Reachability in a flight network: every city you can fly to from Amsterdam, with the fewest flights
-- it takes (min() keeps the best count found so far, so the cycle Amsterdam -> ... -> Istanbul ->
-- Amsterdam does not stop the recursion from terminating). Tokyo, Seoul and Sydney are not reachable.
--
--   recsql run examples/reachability.sql

DROP TABLE IF EXISTS flight;

CREATE TABLE flight (src STRING, dst STRING)
USING csv OPTIONS (path 'data/flights.csv', header 'true');

WITH RECURSIVE reach(city, min() AS flights) AS
  (SELECT 'Amsterdam', 0)
  UNION
  (SELECT f.dst, r.flights + 1 FROM reach r, flight f WHERE r.city = f.src)
SELECT city, flights
FROM reach
ORDER BY flights, city;
