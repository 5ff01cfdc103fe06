"""SQL printed from rules: the DuckDB and Spark SQL text of a rule body, its joins, aggregates and arrays."""
