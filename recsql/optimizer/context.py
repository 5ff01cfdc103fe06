"""What an optimizer pass receives and returns.

A pass is a plain function from a `Context` (the program so far, its estimates, the session's settings,
the cost model) to an `Outcome` (the program it makes, the estimates that go with that program, and what
it decided, in words, for EXPLAIN). Passes share nothing else, so the pipeline can run, record, reorder or
switch off any of them by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from recsql.optimizer.cardinality import Estimator, StatisticsProvider
from recsql.optimizer.join_search import CostModel
from translator.ir import Program


class Magic(StrEnum):
    """Where the magic sets pass keeps its rewrite (`recsql.magic`)."""

    AUTO = "auto"  # where the estimates say it derives fewer facts
    ON = "on"  # always
    OFF = "off"  # never


class OptimizerSettings(Protocol):
    """The settings the passes read. `recsql.settings.Settings` has them; it is not imported here because
    the settings validate `disable_passes` against the pipeline's pass names."""

    magic: Magic
    disable_passes: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    program: Program
    estimator: Estimator  # estimates of `program`
    note: str = ""  # what the pass decided, for EXPLAIN


@dataclass(frozen=True)
class Context:
    program: Program
    estimator: Estimator  # estimates of `program`
    statistics: StatisticsProvider
    settings: OptimizerSettings
    model: CostModel

    def estimate(self, program: Program) -> Estimator:
        """Estimates for a program that derives other facts than this one (estimates are per program)."""
        return Estimator(program, self.statistics)

    def unchanged(self, note: str = "") -> Outcome:
        """The outcome of a pass that keeps the program as it is."""
        return Outcome(self.program, self.estimator, note)


Pass = Callable[[Context], Outcome]
