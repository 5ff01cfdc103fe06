"""An in-process DuckDB reading Arrow tables by name, and its failures as recsql exceptions: what the local
strategy evaluates with."""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import ClassVar

import duckdb
import pyarrow as pa
from duckdb import sqltypes
from sqlglot import exp

from recsql.cancellation import interruptible
from recsql.engine.sql.printing import INEXACT, LocalLimit
from recsql.errors import DataError, OperationalError

ROUND_FUNCTION = "__recsql_round"  # what a query run by Database.query_by_rounds calls with each round's rows
LIMIT_ERROR = "[RECSQL_LIMIT] "  # tags the message of error() where a query checks a limit of recsql's
COPIED_ROWS = 100_000  # rows of a registered table past which a recursive query reads a copy (Database.as_table)


def quote(name: str) -> str:
    """`name` as a quoted DuckDB identifier."""
    return '"' + name.replace('"', '""') + '"'


def part_of(column: str, column_type: str | None, parts: int) -> str:
    """DuckDB's expression of the part (of `parts`) a value of `column` belongs to, hashed as a value of
    `column_type` (so that a value hashes alike whatever the type it has in an iteration)."""
    key = f"CAST({quote(column)} AS {column_type})" if column_type else quote(column)
    return f"hash({key}) % {parts}"


def kept_exit_facts(sql: str, condition: str | None) -> str:
    """The exit facts of `sql` that meet `condition` (all of them without one)."""
    return sql if condition is None else f"SELECT * FROM ({sql}) AS exit_facts WHERE {condition}"


class Database:
    """An in-process DuckDB connection reading Arrow tables registered by name.

    Opening a DuckDB connection costs about as much as a small query: a closed Database leaves its
    connection (every table unregistered) for the next one opened in the same thread."""

    idle = threading.local()
    sql_types: ClassVar[dict[pa.Schema, tuple[str | None, ...]]] = {}  # DuckDB's types of Arrow's, everywhere alike
    empty_casts: ClassVar[dict[tuple[pa.Schema, pa.Schema], pa.Table]] = {}  # cast_columns's answers for no rows

    def __init__(self, timezone: str, threads: int | None = None):
        """`threads`: how many threads each query may use (DuckDB's default: every core)."""
        self.reusable = threads is None
        self.timezone: str | None
        idle = self.idle.__dict__.pop("connection", None) if self.reusable else None
        if idle is None:
            self.connection = duckdb.connect(config={"threads": threads} if threads else {})
            self.timezone, self.rounds = None, RoundHook()
            self.connection.create_function(
                ROUND_FUNCTION, self.rounds, [sqltypes.BIGINT], sqltypes.BOOLEAN, side_effects=True
            )
        else:
            self.connection, self.timezone, self.rounds = idle
        if timezone != self.timezone:
            self.connection.execute(f"SET TimeZone = {exp.Literal.string(timezone).sql(dialect='duckdb')}")
            self.timezone = timezone
        self.registered: dict[str, pa.Table] = {}
        self.copies: dict[str, pa.Table] = {}  # DuckDB tables holding registered ones, by name (as_table)
        self.casts: dict[tuple[tuple[str, ...], pa.Schema], str] = {}

    def register(self, name: str, table: pa.Table) -> None:
        """Make `table` readable as `name` (registering costs about as much as a small query: skipped
        when `name` already reads this table)."""
        if self.registered.get(name) is not table:
            self.connection.register(name, table)
            self.registered[name] = table

    def query(self, sql: str, params: Mapping[str, object] | None = None, **tables: pa.Table) -> pa.Table:
        """The result of `sql` reading the given tables by their keyword names, its `$name` parameters
        `params` (DuckDB's failures as recsql's)."""
        for name, table in tables.items():
            self.register(name, table)
        with duckdb_errors(), interruptible(self.connection.interrupt):
            relation = self.connection.sql(sql, params=params)
            # newer DuckDB calls it to_arrow_table and deprecates fetch_arrow_table
            fetch = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
            return fetch()

    def as_table(self, name: str) -> str:
        """The name of the registered table `name` as a recursive query reads it: where it is large, a copy
        in a DuckDB table (each round of the query scans it again, and DuckDB builds a join's hash table
        from its own table many times faster than from Arrow: reachability over 1.3 million edges, 0.22
        -> 0.05 s, the copy 4 ms), else the registration itself."""
        table = self.registered[name]
        if table.num_rows < COPIED_ROWS:
            return name
        copy = f"{name}__copy"
        if self.copies.get(copy) is not table:
            self.connection.execute(f"CREATE OR REPLACE TEMP TABLE {quote(copy)} AS SELECT * FROM {quote(name)}")
            self.copies[copy] = table
        return copy

    def query_by_rounds(self, sql: str, on_round: Callable[[int], None], **tables: pa.Table) -> pa.Table:
        """The result of the recursive query `sql`, which calls ROUND_FUNCTION with the rows of each round
        before deriving the next: `on_round` is called with them, and what it raises stops the query and
        is raised here (DuckDB would report it as an error of its own)."""
        self.rounds.callback, self.rounds.raised = on_round, None
        try:
            return self.query(sql, **tables)
        except Exception:
            raised = self.rounds.raised
            if raised is not None:
                raise raised from None
            raise
        finally:
            self.rounds.callback, self.rounds.raised = None, None

    def cast_columns(self, table: pa.Table, schema: pa.Schema | None) -> pa.Table:
        """`table` with the column types of `schema`, cast as SQL casts (as is without a schema)."""
        if schema is None or self.types_of(table.schema) == self.types_of(schema):
            return table
        key = (table.schema, schema) if table.num_rows == 0 else None
        if key in self.empty_casts:  # no rows: DuckDB's answer kept, as a query costs as much as a small join
            return self.empty_casts[key]
        conformed = self.query(self.cast("SELECT * FROM _conform", table.column_names, schema), _conform=table)
        if key is not None:
            self.empty_casts[key] = conformed
        return conformed

    def cast(self, sql: str, names: list[str], schema: pa.Schema | None) -> str:
        """The query `sql` (columns `names`) with the column types of `schema` (as is without one)."""
        if schema is None:
            return sql
        key = (tuple(names), schema)
        if key not in self.casts:
            self.casts[key] = ", ".join(
                f"CAST({quote(name)} AS {kind}) AS {quote(name)}" if kind else quote(name)
                for name, kind in zip(names, self.types_of(schema))
            )
        return f"SELECT {self.casts[key]} FROM ({sql}) AS q"

    def types_of(self, schema: pa.Schema) -> tuple[str | None, ...]:
        """DuckDB's SQL type of each column of `schema`; None for a column of NULLs (no type to cast to)."""
        if schema not in self.sql_types:
            self.register("_schema", schema.empty_table())
            types = self.connection.sql("SELECT * FROM _schema").types
            self.sql_types[schema] = tuple(None if str(t) == '"NULL"' else str(t) for t in types)
        return self.sql_types[schema]

    def close(self) -> None:
        if not self.reusable or "connection" in self.idle.__dict__:
            self.connection.close()
            return
        for name in self.registered:
            self.connection.unregister(name)
        for name in self.copies:
            self.connection.execute(f"DROP TABLE {quote(name)}")
        self.idle.connection = self.connection, self.timezone, self.rounds


class RoundHook:
    """ROUND_FUNCTION of a connection: calls the callback of the query running (Database.query_by_rounds),
    keeping what it raises."""

    def __init__(self) -> None:
        self.callback: Callable[[int], None] | None = None
        self.raised: BaseException | None = None

    def __call__(self, rows: int) -> bool:
        if self.callback is not None:
            try:
                self.callback(rows)
            except BaseException as error:
                self.raised = error
                raise
        return True


def null_table(names: list[str]) -> pa.Table:
    """No rows, untyped columns (Spark's empty_frame): unions take the other side's types."""
    return pa.table({name: pa.array([], pa.null()) for name in names})


class ArithmeticLimit(DataError):
    """A number past what DuckDB computes (an overflow of its integer or decimal types, a decimal division
    it cannot round exactly as Spark): Spark, whose arithmetic is wider, may still compute it, or
    raises its own error. A DataError wherever Spark cannot take over."""


OUT_OF_RANGE = ("out of range", "could not cast value")  # a number a cast cannot hold (not a bad string)
# DuckDB's words around a message: the kind of error ("Conversion Error: "), the condition a message of
# recsql's own names as Spark does ("[DIVIDE_BY_ZERO] "), its names of integer types
DUCKDB_KIND = re.compile(r"^(?:\[[A-Z_.]+\]\s*|(?:[A-Za-z]+ ){0,3}Error: )+")
DUCKDB_INTEGERS = re.compile(r"\bINT(8|16|32|64)\b")
SQL_INTEGERS = {"8": "TINYINT", "16": "SMALLINT", "32": "INT", "64": "BIGINT"}


@contextlib.contextmanager
def duckdb_errors() -> Iterator[None]:
    """DuckDB failures as recsql exceptions: bad values are the data's fault, SQL DuckDB does not know
    is a limit of the local strategy, anything else an operational failure."""
    try:
        yield
    except (duckdb.OutOfRangeException, duckdb.ConversionException, duckdb.InvalidInputException) as error:
        message = duckdb_message(error)
        if LIMIT_ERROR in first_line(error):
            raise OperationalError(message) from None
        if (
            isinstance(error, duckdb.OutOfRangeException)
            or INEXACT in message
            or (isinstance(error, duckdb.ConversionException) and any(m in message.lower() for m in OUT_OF_RANGE))
        ):
            raise ArithmeticLimit(message) from None
        raise DataError(message) from None
    except duckdb.DataError as error:
        raise DataError(duckdb_message(error)) from None
    except (
        duckdb.CatalogException,
        duckdb.BinderException,
        duckdb.ParserException,
        duckdb.NotImplementedException,
    ) as error:
        raise LocalLimit.because(duckdb_message(error)) from None
    except duckdb.Error as error:
        raise OperationalError(f"local evaluation failed: {duckdb_message(error)}") from None


def duckdb_message(error: duckdb.Error) -> str:
    """What a DuckDB error says, in recsql's words: without DuckDB's kind of error or a condition's tag,
    integer types by their SQL names."""
    message = DUCKDB_KIND.sub("", first_line(error))
    return DUCKDB_INTEGERS.sub(lambda match: SQL_INTEGERS[match.group(1)], message)


def first_line(error: Exception) -> str:
    lines = [line for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__
