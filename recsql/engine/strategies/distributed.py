"""The distributed strategy, for components too big for one process and without a pivot: one Spark job
whose tasks exchange candidates (exchanged.py) where that applies, else a semi-naive loop on Spark, a
Spark job per relation and iteration (spark/engine.py)."""

from __future__ import annotations

from pyspark.sql import DataFrame

from recsql.engine.fixpoint import Fixpoint, Limits
from recsql.engine.spark.context import StratumRun
from recsql.engine.spark.engine import SparkEngine, without_constraints
from recsql.engine.spark.types import settled_frames
from recsql.engine.strategies.exchanged import run_exchanged
from recsql.planner.plan import Stratum


def run_distributed(run: StratumRun, stratum: Stratum) -> dict[str, DataFrame]:
    exchanged = run_exchanged(run, stratum)
    if exchanged is not None:
        return exchanged
    run.materialize_inputs(stratum)
    engine = SparkEngine(run.spark, run.views, lambda atom: run.source(atom.relation), run.plan.order_variant)
    with without_constraints(run.spark):
        facts = Fixpoint(engine, run.program, stratum).run(Limits(run.program, stratum, run.settings), run.report)
    return settled_frames(run, stratum, {name: relation.frame for name, relation in facts.items()})
