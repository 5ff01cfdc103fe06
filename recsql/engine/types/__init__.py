"""Column types: Spark's types derived for every relation of a plan, and the checks that DuckDB computes a
rule with Spark's exact meaning."""
