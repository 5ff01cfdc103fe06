"""Statements about the catalog and the settings rather than rows: SET, SHOW TABLES, DESCRIBE [HISTORY],
ANALYZE TABLE, VACUUM."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from sqlglot import exp

from recsql.errors import NotSupportedError, ProgrammingError
from recsql.services import Services
from recsql.settings import PREFIX, SparkStart
from recsql.statements.handler import Result
from recsql.statements.queries import relation_columns
from recsql.storage.entries import Kind
from recsql.views import upkeep
from recsql.views.stored import Reflected
from translator.core import table_name
from translator.dialect import Vacuum

VACUUM_RETAIN_HOURS = 168  # Delta's default: a week of versions stays readable


def set_option(session: Services, statement: exp.Set, sql: str) -> Result:
    """SET key = value: a recsql setting (`recsql.*`) or a Spark one (given to Spark when it starts, if it
    has not yet); SET alone lists recsql's."""
    items = statement.expressions
    if not items:
        pairs = session.settings.items()
        return Result.of(pa.table({"key": [k for k, _ in pairs], "value": [v for _, v in pairs]}), ["string", "string"])
    for item in items:
        assignment = item.this
        if not isinstance(assignment, exp.EQ):
            raise ProgrammingError("SET takes key = value")
        key = assignment.this.sql(dialect="spark").replace("`", "")
        value = assignment.expression
        text = value.name if isinstance(value, exp.Literal) else value.sql(dialect="spark")
        if key.startswith(PREFIX):
            session.settings.set(key, text)
            if key == f"{PREFIX}spark_start" and session.settings.spark_start == SparkStart.BACKGROUND:
                session.lazy_spark.start()
        else:
            session.lazy_spark.set_setting(key, text)
    return Result()


def show_tables(session: Services, statement: exp.Show, sql: str) -> Result:
    """SHOW TABLES [IN database]: every table and view with its kind and column names, and for a
    materialized view the versions of the tables it reflects (IN: the tables of one of Spark's
    databases)."""
    database = statement.args.get("db")
    catalog = session.catalog
    names = catalog.names(database.name.lower() if database is not None else None)
    columns = [list(relation_columns(catalog, name)) for name in names]
    reflects = [
        Reflected.of(catalog.entry(name)).describe() if kind == Kind.MATERIALIZED else None
        for name, kind in names.items()
    ]
    data = pa.table(
        {
            "name": list(names),
            "kind": [str(kind) for kind in names.values()],
            "columns": pa.array(columns, pa.list_(pa.string())),
            "reflects": pa.array(reflects, pa.string()),
        }
    )
    return Result.of(data, ["string", "string", "array<string>", "string"])


def describe(session: Services, statement: exp.Describe, sql: str) -> Result:
    """DESCRIBE name: the columns of a table or view and their types (a view's types are derived from
    its plan; only when they cannot be is its recursion computed). DESCRIBE HISTORY name: its versions."""
    name = table_name(statement.this, session.catalog)
    if (statement.args.get("style") or "").upper() == "HISTORY":
        return history(session, name)
    view = session.catalog.view_query(name)
    if view is not None:
        plan = session.plan(view)
        names: Sequence[str] = plan.program.output_columns
        types = session.executor().output_types(plan)
    else:
        fields = session.catalog.schema(name).fields
        names, types = [field.name for field in fields], [field.dataType for field in fields]
    data = pa.table({"column": list(names), "type": [data_type.simpleString() for data_type in types]})
    return Result.of(data, ["string", "string"])


def history(session: Services, name: str) -> Result:
    """DESCRIBE HISTORY t: the table's versions, newest first."""
    commits = session.catalog.history(name)
    data = pa.table(
        {
            "version": pa.array([c.version for c in commits], pa.int64()),
            "timestamp": pa.array([c.timestamp for c in commits], pa.timestamp("us")),
            "operation": [c.operation for c in commits],
            "statement": [c.statement for c in commits],
        }
    )
    return Result.of(data, ["bigint", "timestamp", "string", "string"])


def analyze(session: Services, statement: exp.Analyze, sql: str) -> Result:
    """ANALYZE TABLE t [COMPUTE STATISTICS]: gather the optimizer's statistics now; returns them."""
    if (statement.args.get("kind") or "").upper() != "TABLE" or not statement.args.get("tables"):
        raise NotSupportedError("ANALYZE takes TABLE name")
    names, rows, distinct = [], [], []
    for table in statement.args["tables"]:
        name = table_name(table, session.catalog)
        gathered = session.catalog.analyze(name)
        columns = session.catalog.table_columns(name) or ()
        for column, column_statistics in zip(columns, gathered.columns):
            names.append(f"{name}.{column}")
            rows.append(gathered.rows)
            distinct.append(column_statistics.distinct)
    data = pa.table({"column": names, "rows": pa.array(rows, pa.int64()), "distinct": pa.array(distinct, pa.int64())})
    return Result.of(data, ["string", "bigint", "bigint"])


def vacuum(session: Services, statement: Vacuum, sql: str) -> Result:
    """VACUUM t [RETAIN n HOURS]: remove the files no version of the last n hours (default 168) reads,
    and files that writers left without committing them (of each table of a materialized view); the
    rowcount is the files removed."""
    hours = statement.args.get("hours")
    retain = int(hours.name) if hours is not None else VACUUM_RETAIN_HOURS
    name = table_name(statement.this, session.catalog)
    entry = session.catalog.entry(name)
    if entry is not None and entry.kind == Kind.MATERIALIZED:
        return Result(rowcount=upkeep.vacuum(session, name, retain))
    return Result(rowcount=session.catalog.vacuum(name, retain))
