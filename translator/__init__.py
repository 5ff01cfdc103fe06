"""SQL to Datalog: the SQL dialect (sqlglot's Spark dialect extended with recursive CTE headers, SEARCH / CYCLE,
EXPLAIN), the Datalog IR (`ir`) and the translation of a statement into a program of rules (`translate`, with
FROM and joins, conditions and subqueries, aggregation, ORDER BY / LIMIT in modules of their own).

The bottom layer: imports nothing of recsql.
"""
