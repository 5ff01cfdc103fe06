"""The column types of a recursive stratum's relations, iteration by iteration: derived in Python where
spark_types.py covers the rules (types/result_types.py), else read from Spark's analysis of the same
queries (`DistributedTypes`)."""

from __future__ import annotations

from recsql.engine.fixpoint import Fixpoint
from recsql.engine.spark.context import StratumRun
from recsql.engine.spark.engine import SparkEngine
from recsql.engine.sql.queries import CANDIDATES
from recsql.engine.types.result_types import SETTLED, InferredTypes, StratumTypes, Versions, row_of
from recsql.engine.types.spark_types import NotInferred
from recsql.planner import Stratum, Version
from translator.ir import Program


class DistributedTypes(StratumTypes):
    """Types read from a schema-only fixpoint on Spark stepped as far as asked (no Spark job runs, but
    every step is a round of Spark analysis): for the expressions spark_types.py does not cover."""

    def __init__(self, run: StratumRun, program: Program, stratum: Stratum, timezone: str):
        super().__init__(program, stratum, timezone)
        self.engine = SparkEngine(run.spark, run.views, lambda atom: run.source(atom.relation),
                                  lambda variant, _: variant, schema_only=True)
        self.fixpoint = Fixpoint(self.engine, program, stratum)

    def advance(self) -> dict[str, Versions]:
        if self.steps:
            self.fixpoint.step()
        else:
            self.fixpoint.start()
        candidates = self.engine.candidate_schemas
        return {
            name: {Version.FULL: row_of(state.full.frame.schema), Version.DELTA: row_of(state.delta.frame.schema),
                   Version.OLD: row_of(state.old.frame.schema),
                   CANDIDATES: row_of(candidates[name]) if name in candidates else None}
            for name, state in self.fixpoint.states.items()
        }


def stratum_types(run: StratumRun, stratum: Stratum) -> StratumTypes:
    """The types of the stratum's relations, iteration by iteration: derived in Python when
    spark_types covers the rules, else from Spark's analysis."""
    timezone = run.spark_settings.timezone
    inferred = InferredTypes(run.program, stratum, lambda name: row_of(run.schema(name)), timezone)
    try:
        inferred.at(SETTLED)
    except NotInferred:
        return DistributedTypes(run, run.program, stratum, timezone)
    return inferred
