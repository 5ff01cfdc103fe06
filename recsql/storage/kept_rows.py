"""Rows of table versions kept in memory, by version: a version of a managed table (or of a relation a
materialized view stores) read by one statement, or just written by it, is not read from its Parquet
files again by the next while it stays in the budget. The least recently used go first. What is
computed from a version's rows (a closure's index) is kept the same way, in a budget of its own."""

from __future__ import annotations

from typing import Protocol, TypeVar

from recsql.storage.bounded_cache import BoundedCache

BUDGET_BYTES = 1 << 30
INDEX_BUDGET_BYTES = 1 << 29


class Sized(Protocol):
    @property
    def nbytes(self) -> int: ...


Kept = TypeVar("Kept", bound=Sized)


class KeptRows(BoundedCache[str, Kept]):
    """By a snapshot's identity (`Snapshot.identity`), what is kept of that version."""

    def __init__(self, budget: int = BUDGET_BYTES):
        super().__init__(budget, lambda rows: rows.nbytes)
