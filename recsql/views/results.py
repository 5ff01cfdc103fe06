"""What maintaining a view's relation gives: its facts after the change, and what the maintenance did."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from enum import Enum

import pyarrow as pa
from pyspark.sql.types import DataType

from recsql.views.closure_arrays import Index


class Method(Enum):
    """How a relation was brought up to date, named as EXPLAIN ANALYZE prints it. `rederives`: the method
    over-deletes facts and derives again those still derivable (DRed), and reports both counts."""

    COMPUTED = ("computed", False)  # a view computed from its tables
    RECOMPUTED = ("computed again", False)  # a stratum DRed does not maintain (printed with why)
    IMPROVEMENT = ("improvement", False)  # min()/max() groups replaced by better values
    INSERTION = ("insertion", False)
    INSERTION_IN_MEMORY = ("insertion (in memory)", False)
    DRED = ("DRed", True)
    DRED_IN_MEMORY = ("DRed (in memory)", True)

    def __init__(self, text: str, rederives: bool):
        self.text = text
        self.rederives = rederives


@dataclass
class Maintained:
    """What maintaining one relation did, for EXPLAIN ANALYZE."""

    relation: str
    method: Method
    why: str = ""  # why it was computed again (Method.RECOMPUTED)
    added: int = 0
    removed: int = 0
    over_deleted: int = 0
    rederived: int = 0
    seconds: float = 0.0

    def __str__(self) -> str:
        how = f"{self.method.text}: {self.why}" if self.method is Method.RECOMPUTED else self.method.text
        counts = f"+{self.added} -{self.removed}"
        if self.method.rederives:
            counts += f" (over-deleted {self.over_deleted}, re-derived {self.rederived})"
        return f"{self.relation}: {how}, {counts}, {self.seconds:.3f} s"


@dataclass
class ChangedRelation:
    """A relation after the change: all its facts, the facts it gained and lost (None: none)."""

    facts: pa.Table
    plus: pa.Table | None
    minus: pa.Table | None
    types: list[DataType] | None = None  # Spark's types of the columns, when computed from scratch
    index: Index | Future | None = None  # a closure's, when maintained in memory (or being made)


def nonempty(facts: pa.Table) -> pa.Table | None:
    return facts if facts.num_rows else None
