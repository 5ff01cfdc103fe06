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


def repeated_step(steps: int, repeated: int | None, iteration: int) -> int:
    """The step whose types iteration `iteration` has, of `steps` steps computed, the last of which
    repeats step `repeated` (every later step then repeats the steps after it)."""
    if iteration < steps:
        return iteration
    assert repeated is not None  # steps stop being computed only once they repeat
    return repeated + (iteration - repeated) % (steps - 1 - repeated)


@dataclass(frozen=True)
class TypeSchedule:
    """The types of every iteration as a value (a ResultTypes) a Spark task can be given: each step's
    until one repeats an earlier one, the steps after that one repeating from there on."""

    steps: tuple[Mapping[str, RelationTypes], ...]
    repeated: int

    def __call__(self, iteration: int) -> Mapping[str, RelationTypes]:
        return self.steps[repeated_step(len(self.steps), self.repeated, iteration)]
