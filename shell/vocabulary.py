"""The SQL words Tab offers: constructs recsql accepts, so completion never leads to a statement the engine
then refuses. Most are modelled by recsql's translation; the windows, the outer join kinds beyond LEFT,
grouping sets and the set operations keeping duplicates run as Spark SQL (translator/opaque.py).
tests/test_completion.py runs a query per offered join kind, clause and function through recsql, so a list
here cannot drift from what the engine does.
"""

from __future__ import annotations

CLAUSES = ("SELECT", "FROM", "WHERE", "GROUP BY", "HAVING", "ORDER BY", "LIMIT", "WITH", "RECURSIVE")
SET_OPERATIONS = ("UNION", "UNION ALL", "INTERSECT", "INTERSECT ALL", "EXCEPT", "EXCEPT ALL")
WINDOWS = ("OVER", "PARTITION BY", "ROWS BETWEEN", "UNBOUNDED PRECEDING", "CURRENT ROW")
GROUPINGS = ("ROLLUP", "CUBE", "GROUPING SETS")
MODIFIERS = ("DISTINCT", "ALL", "AS")
JOINS = (
    "JOIN",
    "INNER JOIN",
    "LEFT JOIN",
    "RIGHT JOIN",
    "FULL JOIN",
    "FULL OUTER JOIN",
    "NATURAL JOIN",
    "CROSS JOIN",
    "LEFT SEMI JOIN",
    "LEFT ANTI JOIN",
)
JOIN_CONDITIONS = ("ON", "USING")
OPERATORS = (
    "AND",
    "OR",
    "NOT",
    "IN",
    "EXISTS",
    "BETWEEN",
    "LIKE",
    "IS",
    "NULL",
    "TRUE",
    "FALSE",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "ASC",
    "DESC",
    "NULLS FIRST",
    "NULLS LAST",
)
STATEMENTS = (
    "CREATE",
    "TABLE",
    "VIEW",
    "OR REPLACE",
    "IF NOT EXISTS",
    "IF EXISTS",
    "DROP",
    "INSERT INTO",
    "VALUES",
    "OPTIONS",
    "EXPLAIN",
    "ANALYZE",
    "COMPUTE STATISTICS",
    "SET",
    "SHOW TABLES",
    "DESCRIBE",
)
RECURSION = ("MAX RECURSION LEVEL",)  # RaSQL's recursion limit, between a CTE's name and AS
LITERALS = ("INTERVAL", "DATE", "TIMESTAMP")

KEYWORDS = (
    *CLAUSES,
    *SET_OPERATIONS,
    *WINDOWS,
    *GROUPINGS,
    *MODIFIERS,
    *JOINS,
    *JOIN_CONDITIONS,
    *OPERATORS,
    *STATEMENTS,
    *RECURSION,
    *LITERALS,
)

AGGREGATE_FUNCTIONS = (
    "avg",
    "collect_list",
    "collect_set",
    "count",
    "first",
    "last",
    "max",
    "min",
    "stddev",
    "sum",
    "variance",
)
SCALAR_FUNCTIONS = (
    "abs",
    "array",
    "array_contains",
    "cast",
    "ceil",
    "coalesce",
    "concat",
    "concat_ws",
    "current_date",
    "current_timestamp",
    "date_add",
    "date_format",
    "date_sub",
    "datediff",
    "day",
    "dayofweek",
    "element_at",
    "exp",
    "explode",
    "extract",
    "floor",
    "greatest",
    "hour",
    "if",
    "ifnull",
    "instr",
    "isnotnull",
    "isnull",
    "least",
    "length",
    "ln",
    "log",
    "lower",
    "lpad",
    "ltrim",
    "md5",
    "minute",
    "mod",
    "month",
    "named_struct",
    "nullif",
    "nvl",
    "pow",
    "regexp_extract",
    "regexp_replace",
    "replace",
    "round",
    "rpad",
    "rtrim",
    "sign",
    "size",
    "split",
    "sqrt",
    "struct",
    "substr",
    "substring",
    "to_date",
    "to_timestamp",
    "trim",
    "trunc",
    "upper",
    "year",
)
WINDOW_FUNCTIONS = ("cume_dist", "dense_rank", "lag", "lead", "ntile", "percent_rank", "rank", "row_number")
FUNCTIONS = tuple(sorted(AGGREGATE_FUNCTIONS + SCALAR_FUNCTIONS + WINDOW_FUNCTIONS))
