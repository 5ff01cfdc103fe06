"""Rows of table versions kept in memory, by version: a version of a managed table (or of a relation a
materialized view stores) read by one statement, or just written by it, is not read from its Parquet
files again by the next while it stays in the budget. The least recently used go first."""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable

import pyarrow as pa

BUDGET_BYTES = 1 << 30


class KeptRows:
    def __init__(self, budget: int = BUDGET_BYTES):
        self.budget = budget
        self.kept: OrderedDict[str, pa.Table] = OrderedDict()
        self.size = 0  # the bytes of the tables kept (summing them at each put would cost a walk of all)

    def get(self, version: str, read: Callable[[], pa.Table]) -> pa.Table:
        """The rows of `version` (a snapshot's identity), read with `read()` unless kept."""
        rows = self.kept.get(version)
        if rows is None:
            rows = read()
            self.put(version, rows)
        else:
            self.kept.move_to_end(version)
        return rows

    def put(self, version: str, rows: pa.Table) -> None:
        replaced = self.kept.get(version)
        self.size += rows.nbytes - (replaced.nbytes if replaced is not None else 0)
        self.kept[version] = rows
        self.kept.move_to_end(version)
        while len(self.kept) > 1 and self.size > self.budget:
            self.size -= self.kept.popitem(last=False)[1].nbytes
