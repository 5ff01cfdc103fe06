"""Statement handlers: one function per kind of statement, found through the table in `dispatch.py`.

A handler takes the services of the session running it (`recsql.services.Services`), the statement's syntax
tree and its text, and returns a `Result`. Handlers do not know the session's class: the session
imports them, never the reverse.

May import: everything below the session (views, catalog, storage, engine, planner, translator); never the
session: it reaches it through `recsql.services.Services`.
"""
