"""The warehouse on disk: managed tables as Delta tables (`delta`), their atomic writes (`writes`) and files
(`files`), the catalog's entry files (`entries`) and the relation names that address versions and stored
view relations (`names`), the layout version and its upgrades (`format`), statistics files, and what a commit
leaves the next statements (`commits`, `kept_rows`).

May import: `recsql.errors`, `recsql.statistics`, `translator` (names only). It knows nothing of Spark
sessions, plans or statements.
"""
