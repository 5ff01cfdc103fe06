"""What a strategy sees of the plan's evaluation on Spark (runner.py's SparkRun), and what a strategy is:
a function from a recursive stratum to the DataFrames of its relations, or None when it cannot run that
stratum (the next strategy of the registry, strategies/__init__.py, then does)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType
from sqlglot import exp

from recsql.engine.fixpoint import CapacityExceeded, Reached
from recsql.engine.progress import Progress
from recsql.engine.scratch import Scratch
from recsql.engine.spark.engine import Views
from recsql.engine.spark_settings import SparkSettings
from recsql.engine.trace import Trace
from recsql.planner.plan import Plan, Stratum
from recsql.settings import Settings
from translator.ir import Atom, Program


class StratumRun(Protocol):
    spark: SparkSession
    settings: Settings
    spark_settings: SparkSettings
    plan: Plan
    program: Program
    views: Views
    outgrown: dict[tuple[str, ...], Reached[pa.Table] | None]  # strata past their local capacity: where they stopped
    scratch: Scratch  # the statement's files, on this machine or where every executor sees them
    trace: Trace | None  # EXPLAIN ANALYZE's record of the evaluation, if it is analysed

    def report(self, event: Progress) -> None:
        """Progress of a recursive component (to the listener and EXPLAIN ANALYZE's trace)."""

    def outgrow(self, exceeded: CapacityExceeded) -> None:
        """A stratum run in this process outgrew its capacity: it goes on (or starts again) on Spark."""

    def note(self, text: str) -> None:
        """A line for EXPLAIN ANALYZE: what happened beside the iterations."""

    def source(self, relation: str) -> str:
        """The view a rule's SQL reads for a relation outside the stratum."""

    def atom_source(self, atom: Atom) -> exp.Expr:
        """What a rule's query reads for an atom outside the stratum (a view, a table function)."""

    def atom_frame(self, atom: Atom) -> DataFrame:
        """The DataFrame an atom outside the stratum reads."""

    def materialize_inputs(self, stratum: Stratum) -> None:
        """Compute once what the stratum reads from outside itself."""

    def local_inputs(self, stratum: Stratum, names: Iterable[str] | None = None) -> dict[str, pa.Table]:
        """What the stratum reads from outside itself (or those of `names`), as Arrow."""

    def schema(self, name: str) -> StructType:
        """A relation's or a table's Spark schema."""


StrategyRun = Callable[[StratumRun, Stratum], "dict[str, DataFrame] | None"]
