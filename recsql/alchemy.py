"""A SQLAlchemy 2 dialect registered as `recsql`, so that SQLAlchemy-based tools (pandas.read_sql,
JupySQL's %sql, query builders) connect to recsql:

    create_engine("recsql:///path/to/warehouse?master=local[4]")
    create_engine("recsql:///path/to/warehouse?remote=sc://host:15002")

The URL's path is the warehouse (none: recsql's default); `master`, `remote` and `log_level` are
connect()'s arguments, every other query parameter a setting (`recsql.strategy=local`,
`spark.sql.shuffle.partitions=8`). Reflection reads recsql's catalog: SHOW TABLES and DESCRIBE. Every
statement commits as it runs, so a transaction's end does nothing.
"""

from __future__ import annotations

import re
from importlib.metadata import version
from types import ModuleType
from typing import Any

from sqlalchemy import types as sqltypes
from sqlalchemy.engine import URL, default
from sqlalchemy.engine.interfaces import ReflectedColumn
from sqlalchemy.sql import compiler

CONNECT_ARGUMENTS = ("master", "remote", "log_level")
TABLE_KINDS = ("table", "external", "registered", "spark")

SIMPLE_TYPES: dict[str, type[sqltypes.TypeEngine]] = {
    "boolean": sqltypes.Boolean,
    "tinyint": sqltypes.SmallInteger,
    "smallint": sqltypes.SmallInteger,
    "int": sqltypes.Integer,
    "bigint": sqltypes.BigInteger,
    "float": sqltypes.Float,
    "double": sqltypes.Double,
    "string": sqltypes.String,
    "binary": sqltypes.LargeBinary,
    "date": sqltypes.Date,
    "timestamp": sqltypes.DateTime,
    "timestamp_ntz": sqltypes.DateTime,
}
DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")
SIZED_STRING = re.compile(r"(?:var)?char\((\d+)\)")


def column_type(spark_type: str) -> sqltypes.TypeEngine:
    """The SQLAlchemy type of a column of Spark type `spark_type` (its simpleString)."""
    if spark_type in SIMPLE_TYPES:
        return SIMPLE_TYPES[spark_type]()
    if decimal := DECIMAL.fullmatch(spark_type):
        return sqltypes.Numeric(int(decimal.group(1)), int(decimal.group(2)))
    if sized := SIZED_STRING.fullmatch(spark_type):
        return sqltypes.String(int(sized.group(1)))
    return sqltypes.NullType()  # arrays, maps, structs, intervals: values pass through as they are


class IdentifierPreparer(compiler.IdentifierPreparer):
    """Names quoted as Spark SQL quotes them (a double-quoted word is a string there)."""

    def __init__(self, dialect: default.DefaultDialect):
        super().__init__(dialect, initial_quote="`", escape_quote="`")


class TypeCompiler(compiler.GenericTypeCompiler):
    """Types in CREATE TABLE and CAST as Spark SQL names them."""

    def visit_string(self, type_: Any, **kw: Any) -> str:
        return "STRING"

    visit_VARCHAR = visit_unicode = visit_text = visit_unicode_text = visit_TEXT = visit_string

    def visit_datetime(self, type_: Any, **kw: Any) -> str:
        return "TIMESTAMP"

    def visit_large_binary(self, type_: Any, **kw: Any) -> str:
        return "BINARY"


class RecsqlDialect(default.DefaultDialect):
    name = "recsql"
    driver = "recsql"
    preparer = IdentifierPreparer
    type_compiler_cls = TypeCompiler
    supports_statement_cache = True
    default_paramstyle = "qmark"
    supports_native_boolean = True
    supports_native_decimal = True
    supports_alter = False
    supports_sequences = False
    supports_sane_rowcount = False
    supports_sane_multi_rowcount = False
    postfetch_lastrowid = False
    default_schema_name = "default"

    @classmethod
    def import_dbapi(cls) -> ModuleType:
        import recsql

        return recsql

    def create_connect_args(self, url: URL) -> tuple[list[Any], dict[str, Any]]:
        options = dict(url.query)
        arguments: dict[str, Any] = {key: options.pop(key) for key in CONNECT_ARGUMENTS if key in options}
        if url.database:
            arguments["warehouse"] = url.database
        if options:
            arguments["conf"] = options
        return [], arguments

    # -------------------------------------------------------------- transactions: each statement commits

    def do_begin(self, dbapi_connection: Any) -> None:
        pass

    def do_rollback(self, dbapi_connection: Any) -> None:
        pass

    def get_isolation_level(self, dbapi_connection: Any) -> str:
        return "AUTOCOMMIT"

    def _get_server_version_info(self, connection: Any) -> tuple[int, ...]:
        return tuple(int(part) for part in version("recsql").split(".") if part.isdigit())

    def _get_default_schema_name(self, connection: Any) -> str:
        return self.default_schema_name

    # -------------------------------------------------------------- reflection: recsql's catalog

    def relations(self, connection: Any) -> dict[str, str]:
        """Every table and view by name, with its kind (SHOW TABLES)."""
        rows = connection.exec_driver_sql("SHOW TABLES").fetchall()
        return {row[0]: row[1] for row in rows}

    def get_schema_names(self, connection: Any, **kw: Any) -> list[str]:
        return [self.default_schema_name]

    def has_table(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> bool:
        return table_name.lower() in self.relations(connection)

    def get_table_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        return [name for name, kind in self.relations(connection).items() if kind in TABLE_KINDS]

    def get_view_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        return [name for name, kind in self.relations(connection).items() if kind == "view"]

    def get_materialized_view_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        return [name for name, kind in self.relations(connection).items() if kind == "materialized view"]

    def get_columns(
        self, connection: Any, table_name: str, schema: str | None = None, **kw: Any
    ) -> list[ReflectedColumn]:
        rows = connection.exec_driver_sql(f"DESCRIBE {self.identifier_preparer.quote(table_name)}").fetchall()
        return [{"name": name, "type": column_type(kind), "nullable": True, "default": None} for name, kind in rows]

    def get_pk_constraint(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> dict:
        return {"constrained_columns": [], "name": None}

    def get_foreign_keys(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list:
        return []

    def get_indexes(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list:
        return []


dialect = RecsqlDialect
