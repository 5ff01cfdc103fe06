"""The planner: an optimized program made into a plan (`plan`): its strata in order, the semi-naive delta
variants of each recursive rule, the strategy each stratum runs under, and when a recursion may stop early
for a LIMIT (`first_rows`) or must run on Spark for Spark's own functions (`spark_valued`).

May import: `translator`, `recsql.optimizer`, `recsql.analysis`, `recsql.settings`, `recsql.errors`.
"""
