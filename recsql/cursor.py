"""DB-API 2.0 cursor over a session: results are held as an Arrow table and converted on fetch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recsql.errors import InterfaceError, internal_errors
from recsql.session import Session
from recsql.statements.handler import Result


class Cursor:
    arraysize: int = 1

    def __init__(self, session: Session):
        self._session: Session | None = session
        self._result: Result | None = None
        self._statement = ""  # the SQL whose result is held, for the errors of its fetches
        self._position = 0
        self.arraysize = 1

    # -------------------------------------------------------------- execution

    def execute(self, sql: str, parameters: Sequence[Any] | None = None) -> Cursor:
        self._set(self._open().execute(sql, parameters), sql)
        return self

    def executemany(self, sql: str, seq_of_parameters: Sequence[Sequence[Any]]) -> Cursor:
        self._set(self._open().execute_many(sql, list(seq_of_parameters)), sql)
        return self

    @property
    def description(self) -> list[tuple] | None:
        if self._result is None or self._result.table is None:
            return None
        return [
            (name, kind, None, None, None, None, True) for name, kind in zip(self._result.names, self._result.types)
        ]

    @property
    def rowcount(self) -> int:
        return self._result.rowcount if self._result is not None else -1

    # -------------------------------------------------------------- fetching

    def fetchone(self) -> tuple | None:
        rows = self._fetch(1)
        return rows[0] if rows else None

    def fetchmany(self, size: int | None = None) -> list[tuple]:
        return self._fetch(self.arraysize if size is None else size)

    def fetchall(self) -> list[tuple]:
        return self._fetch(None)

    def fetch_arrow(self):
        """The remaining rows as a pyarrow Table (no per-row conversion)."""
        table = self._rows_table()
        remaining = table.slice(self._position)
        self._position = table.num_rows
        return remaining.rename_columns(self._result.names)

    def __iter__(self):
        return iter(self.fetchone, None)

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

    def _rows_table(self):
        self._open()
        if self._result is None or self._result.table is None:
            raise InterfaceError("no result to fetch: the last statement returned no rows")
        return self._result.table

    def _fetch(self, size: int | None) -> list[tuple]:
        table = self._rows_table()
        end = table.num_rows if size is None else min(self._position + size, table.num_rows)
        chunk = table.slice(self._position, end - self._position)
        with internal_errors(self._statement):
            columns = [column.to_pylist() for column in chunk.columns]
        self._position = end
        return list(zip(*columns)) if columns else [() for _ in range(chunk.num_rows)]
