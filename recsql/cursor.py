"""DB-API 2.0 cursor over a session. A query's answer is held as an Arrow table, or, on a cursor made to
hand answers on to Spark, on Spark's executors until it is fetched; it leaves as Python rows, Arrow,
pandas, polars or a Spark DataFrame (the fetches DuckDB's Python API names, beside PEP 249's)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from recsql import notebook
from recsql.errors import InterfaceError, NotSupportedError, internal_errors
from recsql.session import Session
from recsql.spark.errors import spark_errors
from recsql.spark.session_kinds import arrow_frame
from recsql.statements.handler import Result

if TYPE_CHECKING:
    import pandas
    import polars
    from pyspark.sql import DataFrame

DEFAULT_BATCH_ROWS = 1_000_000  # fetch_record_batch's batches, as DuckDB's
DRAINED = sys.maxsize  # the position once a record batch reader has taken the remaining rows


class Cursor:
    arraysize: int = 1

    def __init__(self, session: Session, on_spark: bool = False):
        self._session: Session | None = session
        self.on_spark = on_spark  # answers Spark computes stay on its executors (Connection.cursor)
        self._result: Result | None = None
        self._statement = ""  # the SQL whose result is held, for the errors of its fetches
        self._position = 0
        self._outputs: dict[str, Result] = {}  # the answers of the last Datalog program, by relation
        self.arraysize = 1

    # -------------------------------------------------------------- execution

    def execute(self, sql: str, parameters: Sequence[Any] | None = None) -> Cursor:
        self._set(self._open().execute(sql, parameters, self.on_spark), sql)
        self._outputs = {}
        return self

    def execute_datalog(self, program: str) -> Cursor:
        """Run a Datalog program (BigDatalog / DeALS rules, Soufflé's .decl / .input / .output): each
        `.output` is an answer, the last one the cursor's current result (`use_output` picks another)."""
        self._outputs = dict(self._open().execute_datalog(program, self.on_spark))
        self._set(list(self._outputs.values())[-1], program)
        return self

    @property
    def outputs(self) -> list[str]:
        """The relations the last Datalog program output, in its order."""
        return list(self._outputs)

    def use_output(self, relation: str) -> Cursor:
        """Make the answer of the last Datalog program's `.output relation` the current result."""
        if relation not in self._outputs:
            known = ", ".join(self._outputs) or "none"
            raise InterfaceError(f"the last program has no .output {relation} (it has {known})")
        self._set(self._outputs[relation], self._statement)
        return self

    def executemany(self, sql: str, seq_of_parameters: Sequence[Sequence[Any]]) -> Cursor:
        self._set(self._open().execute_many(sql, list(seq_of_parameters)), sql)
        self._outputs = {}
        return self

    @property
    def description(self) -> list[tuple] | None:
        if self._result is None or not self._result.has_rows:
            return None
        return [
            (name, kind, None, None, None, None, True) for name, kind in zip(self._result.names, self._result.types)
        ]

    @property
    def rowcount(self) -> int:
        """The rows of the answer (counted on Spark for an answer kept there), or those a write changed."""
        if self._result is None:
            return -1
        if self._result.answer is not None:
            with self._fetching():
                return self._result.answer.rows
        return self._result.rowcount

    # -------------------------------------------------------------- fetching (PEP 249)

    def fetchone(self) -> tuple | None:
        rows = self._fetch(1)
        return rows[0] if rows else None

    def fetchmany(self, size: int | None = None) -> list[tuple]:
        return self._fetch(self.arraysize if size is None else size)

    def fetchall(self) -> list[tuple]:
        return self._fetch(None)

    def __iter__(self):
        return iter(self.fetchone, None)

    # -------------------------------------------------------------- fetching (Arrow, pandas, polars, Spark)

    def fetch_arrow_table(self) -> pa.Table:
        """The remaining rows as a pyarrow Table (no per-row conversion)."""
        remaining = self._remaining()
        self._position = DRAINED
        return remaining.rename_columns(self._names())

    fetch_arrow = arrow = fetch_arrow_table

    def fetch_record_batch(self, rows_per_batch: int = DEFAULT_BATCH_ROWS) -> pa.RecordBatchReader:
        """The remaining rows as a stream of record batches of `rows_per_batch` rows (the last one fewer).
        An answer kept on Spark comes partition by partition, never whole in this process."""
        if rows_per_batch < 1:
            raise InterfaceError(f"fetch_record_batch() takes a positive number of rows, not {rows_per_batch}")
        result = self._held()
        with self._fetching():
            if result.answer is not None and self._position == 0:
                schema, batches = result.answer.batches()
            else:
                table = self._remaining()
                schema, batches = table.schema, iter(table.to_batches())
        self._position = DRAINED
        names = pa.schema([field.with_name(name) for field, name in zip(schema, self._names())])
        return pa.RecordBatchReader.from_batches(names, self._renamed(exactly(batches, rows_per_batch), names))

    def fetchdf(self) -> pandas.DataFrame:
        """The remaining rows as a pandas DataFrame."""
        table = self.fetch_arrow_table()
        with internal_errors(self._statement):
            return table.to_pandas()

    df = fetch_df = fetchdf

    def pl(self) -> polars.DataFrame:
        """The remaining rows as a polars DataFrame (needs polars installed)."""
        try:
            import polars
        except ImportError:
            raise NotSupportedError("pl() needs polars: pip install polars") from None
        table = self.fetch_arrow_table()
        with internal_errors(self._statement):
            return polars.from_arrow(table)

    def fetch_spark(self) -> DataFrame:
        """The whole answer as a Spark DataFrame of the connection's session, whatever was fetched of it
        (the cursor's position stays). On a cursor made with `on_spark=True`, an answer Spark computed
        stays on its executors (the statement checkpointed it there) and the DataFrame reads it there;
        otherwise, and for an answer computed in this process, the rows are sent to Spark. The DataFrame
        stays valid after the cursor moves on or closes, while the Spark session runs."""
        result = self._held()
        spark = self._open().spark
        with self._fetching():
            if result.answer is not None:
                frame = result.answer.frame(spark)
            else:
                frame = arrow_frame(spark, result.rows_table().rename_columns(result.names))
        return frame

    def _repr_html_(self) -> str | None:
        """Jupyter shows a cursor holding an answer as a table of its first rows (fetching none)."""
        result = self._result
        if self._session is None or result is None or not result.has_rows:
            return None
        with self._fetching():
            head = result.head(notebook.SHOWN_ROWS)
        return notebook.html_table(result.names, result.types, head, self.rowcount)

    # -------------------------------------------------------------- closing

    def close(self) -> None:
        self._session = None
        self._result = None

    def setinputsizes(self, sizes) -> None:
        """No-op (PEP 249)."""

    def setoutputsize(self, size, column=None) -> None:
        """No-op (PEP 249)."""

    # -------------------------------------------------------------- helpers

    def _open(self) -> Session:
        if self._session is None:
            raise InterfaceError("the cursor is closed")
        return self._session

    def _set(self, result: Result, sql: str) -> None:
        self._result = result
        self._statement = sql
        self._position = 0

    def _names(self) -> list[str]:
        assert self._result is not None
        return self._result.names

    @contextlib.contextmanager
    def _fetching(self) -> Iterator[None]:
        """Errors of a fetch that reads an answer kept on Spark, as recsql errors naming the statement."""
        with internal_errors(self._statement), spark_errors("fetching the answer"):
            yield

    def _renamed(self, batches: Iterator[pa.RecordBatch], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """The batches with the answer's column names, their errors as recsql errors."""
        with self._fetching():
            for batch in batches:
                yield pa.RecordBatch.from_arrays(batch.columns, schema=schema)

    def _held(self) -> Result:
        """The result holding rows, or an InterfaceError saying there is none."""
        self._open()
        if self._result is None or not self._result.has_rows:
            raise InterfaceError("no result to fetch: the last statement returned no rows")
        return self._result

    def _remaining(self) -> pa.Table:
        """The rows not fetched yet (columns as the result holds them)."""
        result = self._held()
        with self._fetching():
            if self._position == DRAINED:  # a reader took them: only the columns are left to say
                return result.head(0)
            return result.rows_table().slice(self._position)

    def _fetch(self, size: int | None) -> list[tuple]:
        remaining = self._remaining()
        chunk = remaining if size is None else remaining.slice(0, size)
        with internal_errors(self._statement):
            columns = [column.to_pylist() for column in chunk.columns]
        if self._position != DRAINED:
            self._position += chunk.num_rows
        return list(zip(*columns)) if columns else [() for _ in range(chunk.num_rows)]


def exactly(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """The rows of `batches` again, in batches of `rows` rows (the last one fewer)."""
    pending: list[pa.RecordBatch] = []
    held = 0
    for batch in batches:
        while batch.num_rows:
            taken = batch.slice(0, rows - held)
            pending.append(taken)
            held += taken.num_rows
            batch = batch.slice(taken.num_rows)
            if held == rows:
                yield pa.Table.from_batches(pending).combine_chunks().to_batches()[0]
                pending, held = [], 0
    if held:
        yield pa.Table.from_batches(pending).combine_chunks().to_batches()[0]
