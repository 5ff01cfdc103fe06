"""Which handler runs a statement: a table from the statement's syntax node class to its handler. A
statement is handled by the entry of its own class or else of its nearest base class (exp.Query covers
SELECT, UNION, ...). Adding a statement is one handler and one line here."""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from recsql.errors import NotSupportedError
from recsql.services import Services
from recsql.statements import admin, ddl, materialized, queries, writes
from recsql.statements.handler import Handler, Result
from translator.dialect import Explain, RecSQL, Vacuum

WRITES = (exp.Insert, exp.Delete, exp.Update, exp.Merge)


def explain(session: Services, statement: Explain, sql: str) -> Result:
    """EXPLAIN [ANALYZE] of a query, or EXPLAIN ANALYZE of a write."""
    if isinstance(statement.this, WRITES):
        return explain_write(session, statement, sql)
    return queries.explain(session, statement, sql)


def explain_write(session: Services, statement: Explain, sql: str) -> Result:
    """EXPLAIN ANALYZE of a write: runs it, and says how many rows it changed and what maintaining the
    materialized views reading its table did (facts added, removed, over-deleted, re-derived; time)."""
    if not statement.args.get("analyze"):
        raise NotSupportedError("EXPLAIN of a write: use EXPLAIN ANALYZE, which runs it")
    write = statement.this
    session.maintenance = []
    try:
        result = handler_for(write)(session, write, write.sql(dialect=RecSQL))
        traces = session.maintenance
    finally:
        session.maintenance = None
    lines = [f"rows changed: {result.rowcount}"]
    for trace in traces:
        lines += trace.report()
    if not traces:
        lines.append("no materialized view reads the table")
    return Result.of(pa.table({"plan": lines}), ["string"])


HANDLERS: dict[type[exp.Expression], Handler] = {
    exp.Query: queries.select,
    exp.Values: queries.select,
    Explain: explain,
    exp.Create: ddl.create,
    exp.Drop: ddl.drop,
    exp.Refresh: materialized.refresh,
    exp.Insert: writes.insert,
    exp.MultitableInserts: writes.multitable_insert,
    exp.Delete: writes.change,
    exp.Update: writes.change,
    exp.Merge: writes.change,
    exp.Set: admin.set_option,
    exp.Show: admin.show_tables,
    exp.Describe: admin.describe,
    exp.Analyze: admin.analyze,
    Vacuum: admin.vacuum,
}


def handler_for(statement: exp.Expression) -> Handler:
    """The handler of a statement; an error naming its keyword when it has none."""
    for node_class in type(statement).__mro__:
        handler = HANDLERS.get(node_class)
        if handler is not None:
            return handler
    keyword = (statement.sql(dialect=RecSQL).split() or ["?"])[0].upper()
    raise NotSupportedError(f"{keyword} statements are not supported")
