"""The SQL words Tab offers: only constructs recsql accepts, so completion never leads to a statement the
engine then refuses.

Left out on purpose, because the translator rejects them (translator/translate.py raises UnsupportedError):
RIGHT, FULL and NATURAL joins; window functions (OVER, PARTITION BY, row_number, rank, dense_rank, lag,
lead); INTERSECT ALL and EXCEPT ALL. tests/test_completion.py runs a query per offered join kind, clause
and function through recsql, and checks that each rejected construct is still rejected and not offered,
so a list here cannot drift from what the engine does.
"""

from __future__ import annotations

CLAUSES = ("SELECT", "FROM", "WHERE", "GROUP BY", "HAVING", "ORDER BY", "LIMIT", "WITH", "RECURSIVE")
SET_OPERATIONS = ("UNION", "UNION ALL", "INTERSECT", "EXCEPT")
MODIFIERS = ("DISTINCT", "ALL", "AS")
JOINS = ("JOIN", "INNER JOIN", "LEFT JOIN", "CROSS JOIN", "LEFT SEMI JOIN", "LEFT ANTI JOIN")
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
    CLAUSES + SET_OPERATIONS + MODIFIERS + JOINS + JOIN_CONDITIONS + OPERATORS + STATEMENTS + RECURSION + LITERALS
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
FUNCTIONS = tuple(sorted(AGGREGATE_FUNCTIONS + SCALAR_FUNCTIONS))
