"""What maintaining a view's relation gives: its facts after the change, and what the maintenance did."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.types import DataType

from recsql.views.closure_arrays import Index


@dataclass
class Maintained:
    """What maintaining one relation did, for EXPLAIN ANALYZE."""

    relation: str
    how: str  # DRed, insertion, or computed (and why)
    added: int = 0
    removed: int = 0
    over_deleted: int = 0
    rederived: int = 0
    seconds: float = 0.0

    def __str__(self) -> str:
        counts = f"+{self.added} -{self.removed}"
        if self.how.startswith("DRed"):
            counts += f" (over-deleted {self.over_deleted}, re-derived {self.rederived})"
        return f"{self.relation}: {self.how}, {counts}, {self.seconds:.3f} s"


@dataclass
class Result:
    """A relation after the change: all its facts, the facts it gained and lost (None: none)."""

    facts: pa.Table
    plus: pa.Table | None
    minus: pa.Table | None
    types: list[DataType] | None = None  # Spark's types of the columns, when computed from scratch
    index: Index | Future | None = None  # a closure's, when maintained in memory (or being made)


def nonempty(facts: pa.Table) -> pa.Table | None:
    return facts if facts.num_rows else None
