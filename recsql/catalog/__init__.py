"""Names to data: the `Catalog` a statement reads its tables through, whether they are the warehouse's own
(`recsql.storage`), registered by the session (`registered`), files named in the query (`path_tables`, read
in this process by `readers` when they can), or tables of Spark's catalog (`spark_tables`).

May import: `recsql.storage`, `recsql.spark`, `recsql.statistics`, `recsql.errors`, `translator.dialect`.
"""
