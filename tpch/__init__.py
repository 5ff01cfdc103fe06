"""TPC-H: data generation, the 22 queries, and a runner comparing recsql with Spark SQL and DuckDB."""
