"""The warehouse on disk: managed tables as Delta tables (`delta`: a table's log state, snapshots and
commits), what a reader of a version sees (`snapshots`: its files, its rows as Arrow, rows as the files
store them), the transaction log's entries, errors and checkpoints (`delta_log`), atomic writes (`writes`)
and files (`files`), the catalog's entry files (`entries`) and the relation names that address versions
and stored view relations (`names`), the layout version and its upgrades (`format`), statistics files
(`statistics_files`), and what a commit leaves the next statements (`commits`, `kept_rows`, in the
byte-bounded least-recently-used cache of `bounded_cache`).

May import: `recsql.errors`, `recsql.statistics`, `translator` (names only). It knows nothing of Spark
sessions, plans or statements.
"""
