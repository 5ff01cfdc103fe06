"""The local strategy: evaluation in this process by DuckDB over Arrow, with Spark's types and meaning."""
