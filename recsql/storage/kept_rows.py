"""Rows of table versions kept in memory, by version: a version of a managed table (or of a relation a
materialized view stores) read by one statement, or just written by it, is not read from its Parquet
files again by the next while it stays in the budget. The least recently used go first. What is
computed from a version's rows (a closure's index) is kept the same way, in a budget of its own."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

BUDGET_BYTES = 1 << 30
INDEX_BUDGET_BYTES = 1 << 29


class Sized(Protocol):
    @property
    def nbytes(self) -> int: ...


Kept = TypeVar("Kept", bound=Sized)


class KeptRows(Generic[Kept]):
    def __init__(self, budget: int = BUDGET_BYTES):
        self.budget = budget
        self.kept: OrderedDict[str, Kept] = OrderedDict()
        self.size = 0  # the bytes of the tables kept (summing them at each put would cost a walk of all)

    def get(self, version: str, read: Callable[[], Kept]) -> Kept:
        """The rows of `version` (a snapshot's identity), read with `read()` unless kept."""
        rows = self.kept.get(version)
        if rows is None:
            rows = read()
            self.put(version, rows)
        else:
            self.kept.move_to_end(version)
        return rows

    def find(self, version: str) -> Kept | None:
        """What is kept of `version`, if anything (not read)."""
        return self.kept.get(version)

    def put(self, version: str, rows: Kept) -> None:
        replaced = self.kept.get(version)
        self.size += rows.nbytes - (replaced.nbytes if replaced is not None else 0)
        self.kept[version] = rows
        self.kept.move_to_end(version)
        while len(self.kept) > 1 and self.size > self.budget:
            self.size -= self.kept.popitem(last=False)[1].nbytes
