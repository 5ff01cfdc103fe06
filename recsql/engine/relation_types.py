"""The Arrow types of a relation's facts in each iteration: what the type derivation (types/result_types.py)
gives the local evaluator (local/engine.py), which casts its candidates and results to them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pyarrow as pa


@dataclass(frozen=True)
class RelationTypes:
    """The column types of a relation's candidates, delta and full facts in some iteration."""

    full: pa.Schema
    delta: pa.Schema
    candidates: pa.Schema | None = None


ResultTypes = Callable[[int], Mapping[str, RelationTypes]]  # iteration (0: the exit rules) -> types
SETTLED = 1000  # iterations by which the types of any stratum have stopped changing
