"""The Spark session recsql runs on: starting it (or attaching to a master or a Spark Connect server) in the
background, its defaults and logs, shipping recsql to executors that lack it, a preflight of the machine, the
questions classic and Connect sessions answer differently (`session_kinds`), and Spark's errors as recsql's.

May import: `recsql.errors`, `recsql.cancellation`, `translator.errors`. Nothing here plans or evaluates.
"""
