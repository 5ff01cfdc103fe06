"""Names to data: the `Catalog` a statement reads its tables through (`catalog`: lookups for the translator,
rows for the engine, statistics for the optimizer), and the DDL and DML changes it makes (`changes`), whether
the tables are the warehouse's own (`recsql.storage`), registered by the session (`registered`), files named
in the query (`path_tables`, read in this process by `readers` when they can, the reads kept by `file_reads`),
or tables of Spark's catalog (`spark_tables`).

May import: `recsql.storage`, `recsql.spark`, `recsql.statistics`, `recsql.errors`, `translator.dialect`.
"""
