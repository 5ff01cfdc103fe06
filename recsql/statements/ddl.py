"""CREATE and DROP of tables and views (materialized views: statements/materialized.py)."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql.types import DataType, StructField, StructType
from sqlglot import exp

from recsql.engine.types.type_syntax import UnknownTypeName, spark_type
from recsql.errors import NotSupportedError, ProgrammingError
from recsql.services import Services
from recsql.spark.errors import first_line
from recsql.statements import materialized
from recsql.statements.handler import Result
from recsql.statements.queries import QUERY_TYPES, rows_of
from recsql.storage.entries import Kind, view_query_of
from recsql.storage.writes import Rows
from translator.core import table_name

EXTERNAL_FORMATS = ("csv", "parquet", "json", "orc")


def create(session: Services, create: exp.Create, sql: str) -> Result:
    """CREATE [OR REPLACE] TABLE | VIEW [IF NOT EXISTS]."""
    kind = (create.args.get("kind") or "").upper()
    if kind not in ("TABLE", "VIEW"):
        raise NotSupportedError(f"CREATE {kind} is not supported")
    target = create.this.this if isinstance(create.this, exp.Schema) else create.this
    name = table_name(target, session.catalog)
    replace = bool(create.args.get("replace"))
    if create.args.get("exists") and (
        session.catalog.entry(name) is not None or session.catalog.table_columns(name) is not None
    ):
        return Result()
    if kind == "VIEW" and materialized.is_materialized(create):
        return materialized.create(session, create, name, replace, sql)
    if kind == "VIEW":
        return create_view(session, create, name, replace, sql)
    if "." in name:
        return create_spark_table(session, create, name, replace)
    return create_table(session, create, name, replace, sql)


def create_view(session: Services, create: exp.Create, name: str, replace: bool, sql: str) -> Result:
    """A view is stored as its statement's text, once its query compiles."""
    if "." in name:
        raise NotSupportedError(
            f"CREATE VIEW {name}: recsql's views have one-part names (Spark's catalog "
            "cannot hold a view of recsql's SQL)"
        )
    query = create.expression
    if not isinstance(query, QUERY_TYPES):
        raise ProgrammingError("CREATE VIEW needs AS followed by a query")
    if query.find(exp.Placeholder):
        raise ProgrammingError("a view cannot hold query parameters (?)")
    session.plan(view_query_of(create))  # a view must compile now, not at its first use
    session.catalog.create_view(name, sql, replace)
    return Result()


def create_table(session: Services, create: exp.Create, name: str, replace: bool, sql: str) -> Result:
    """A managed table (from a column list, or AS SELECT with its rows), or with USING a table over
    external files."""
    file_format, options = table_properties(create.args.get("properties"))
    if create.expression is not None:
        if file_format:
            raise NotSupportedError("CREATE TABLE ... USING ... AS SELECT is not supported")
        schema, rows = query_rows(session, create)
        return Result(rowcount=session.catalog.create_table(name, schema, rows, replace, sql))
    schema = table_schema(session, create.this) if isinstance(create.this, exp.Schema) else None
    if file_format:
        create_external(session, name, file_format, options, schema)
        return Result()
    if schema is None:
        raise ProgrammingError(f"CREATE TABLE {name} needs a column list, AS SELECT, or USING")
    session.catalog.create_table(name, schema, None, replace, sql)
    return Result()


def create_spark_table(session: Services, create: exp.Create, name: str, replace: bool) -> Result:
    """CREATE TABLE db.t: a table of Spark's catalog, made by Spark (its rows computed by recsql)."""
    if create.expression is None:
        session.spark.sql(create.sql(dialect="spark"))
        return Result()
    _, rows = query_rows(session, create)
    return Result(rowcount=session.catalog.spark_tables.create(name, rows, replace))


def query_rows(session: Services, create: exp.Create) -> tuple[StructType, Rows]:
    """The rows of CREATE TABLE t [(a, b)] AS query, their columns named by the list if there is one. The
    list takes names only, as in PostgreSQL and Spark: the query gives the types."""
    names = None
    if isinstance(create.this, exp.Schema):
        typed = [column.name for column in create.this.expressions if column.args.get("kind") is not None]
        if typed:
            raise NotSupportedError(
                f"CREATE TABLE ... AS query takes column names without types (the query gives "
                f"them), but column '{typed[0]}' has one"
            )
        names = [column.name for column in create.this.expressions]
    return rows_of(session, create.expression, names)


def create_external(
    session: Services, name: str, file_format: str, options: dict[str, str], schema: StructType | None
) -> None:
    """CREATE TABLE ... USING format OPTIONS (path '...'): a relative path is taken from the session's
    base directory."""
    if file_format not in EXTERNAL_FORMATS:
        raise NotSupportedError(f"USING {file_format} is not supported (csv, parquet, json, orc are)")
    if "path" not in options:
        raise ProgrammingError(f"CREATE TABLE {name} USING {file_format} needs OPTIONS (path '...')")
    path = Path(options.pop("path")).expanduser()
    path = path if path.is_absolute() else session.base_dir / path
    if file_format == "csv" and schema is None and options.get("header", "false").lower() != "true":
        raise ProgrammingError(f"CSV table {name} needs a column list or OPTIONS (header 'true')")
    session.catalog.create_external(name, file_format, str(path.resolve()), options, schema)


def drop(session: Services, drop: exp.Drop, sql: str) -> Result:
    """DROP TABLE | VIEW [IF EXISTS] name, ..."""
    kind = (drop.args.get("kind") or "").lower()
    if kind not in (Kind.TABLE, Kind.VIEW):
        raise NotSupportedError(f"DROP {kind.upper()} is not supported")
    if drop.args.get("materialized"):
        kind = Kind.MATERIALIZED
    exists = bool(drop.args.get("exists"))
    for table in drop.args.get("tables") or [drop.this]:
        name = table_name(table, session.catalog)
        if session.catalog.is_spark_table(name):
            session.spark.sql(f"DROP {kind.upper()} {'IF EXISTS ' if exists else ''}{table.sql(dialect='spark')}")
        else:
            session.catalog.drop(name, Kind(kind), exists)
    return Result()


def table_properties(properties: exp.Properties | None) -> tuple[str | None, dict[str, str]]:
    """USING format and OPTIONS (key 'value', ...) of a CREATE TABLE."""
    file_format, options = None, {}
    for prop in properties.expressions if properties else []:
        if isinstance(prop, exp.FileFormatProperty):
            file_format = prop.name.lower()
        elif isinstance(prop, exp.OptionsProperty):
            for option in prop.expressions:
                options[option.name.lower()] = option.args["value"].name
    return file_format, options


def table_schema(session: Services, schema: exp.Schema) -> StructType:
    """A column list as a Spark schema; a type name recsql does not translate itself is left to Spark's
    parser (which checks it)."""
    untyped = [column.name for column in schema.expressions if column.args.get("kind") is None]
    if untyped:
        raise ProgrammingError(f"column '{untyped[0]}' needs a type (only CREATE TABLE ... AS query takes names alone)")
    try:
        return StructType([StructField(c.name, spark_type(c.args["kind"])) for c in schema.expressions])
    except UnknownTypeName:
        pass
    ddl = ", ".join(f"`{c.name}` {c.args['kind'].sql(dialect='spark')}" for c in schema.expressions)
    try:
        _ = session.spark  # Spark's parser runs in its JVM
        return DataType.fromDDL(ddl)
    except Exception as error:
        raise ProgrammingError(f"bad column list ({ddl}): {first_line(str(error))}") from None
