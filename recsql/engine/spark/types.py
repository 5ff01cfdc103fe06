"""The column types of a recursive stratum's relations, iteration by iteration: derived in Python where
spark_types.py covers the rules (types/result_types.py), else read from Spark's analysis of the same
queries (`DistributedTypes`)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql.types import NullType

from recsql.engine.fixpoint import Fixpoint
from recsql.engine.relation_types import SETTLED
from recsql.engine.spark.context import StratumRun
from recsql.engine.spark.engine import SparkEngine, SparkFacts
from recsql.engine.types.errors import NotInferred
from recsql.engine.types.result_types import InferredTypes, StratumTypes, row_of
from recsql.engine.types.widening import Row
from recsql.planner.plan import Stratum
from translator.ir import Program


class DistributedTypes(StratumTypes[SparkFacts, str]):
    """Types read from a schema-only fixpoint on Spark stepped as far as asked (no Spark job runs, but
    every step is a round of Spark analysis): for the expressions spark_types.py does not cover."""

    def __init__(self, run: StratumRun, program: Program, stratum: Stratum, timezone: str):
        super().__init__(program, stratum, timezone)
        self.engine = SparkEngine(
            run.spark, run.views, lambda atom: run.source(atom.relation), lambda variant, _: variant, schema_only=True
        )
        self.fixpoint = Fixpoint(self.engine, program, stratum)

    def row(self, facts: SparkFacts) -> Row:
        return row_of(facts.frame.schema)

    def candidates(self, relation: str) -> Row | None:
        schema = self.engine.candidate_schemas.get(relation)
        return row_of(schema) if schema is not None else None


AnyStratumTypes = InferredTypes | DistributedTypes  # what stratum_types gives


def stratum_types(run: StratumRun, stratum: Stratum) -> AnyStratumTypes:
    """The types of the stratum's relations, iteration by iteration: derived in Python when
    spark_types covers the rules, else from Spark's analysis."""
    timezone = run.spark_settings.timezone
    inferred = InferredTypes(run.program, stratum, lambda name: row_of(run.schema(name)), timezone)
    try:
        inferred.at(SETTLED)
    except NotInferred:
        return DistributedTypes(run, run.program, stratum, timezone)
    return inferred


def settled_frames(run: StratumRun, stratum: Stratum, frames: dict[str, DataFrame]) -> dict[str, DataFrame]:
    """A stratum's frames with each column of NULL type (a relation no rule derived from, whose frame
    took no type) cast to the type the stratum's types settle on, as StratumTypes.typed gives them in
    this process: a relation is typed by its rules whether it holds facts or not."""
    if not any(isinstance(field.dataType, NullType) for frame in frames.values() for field in frame.schema):
        return frames
    settled = stratum_types(run, stratum).spark(SETTLED)
    return {name: cast_nulls(frame, settled[name]) for name, frame in frames.items()}


def cast_nulls(frame: DataFrame, types: Row) -> DataFrame:
    """`frame` with each column of NULL type cast to its type in `types`."""
    fields = frame.schema.fields
    return cast_to(frame, tuple(t if isinstance(f.dataType, NullType) else f.dataType for f, t in zip(fields, types)))


def cast_to(frame: DataFrame, types: Row) -> DataFrame:
    """`frame` with its columns of `types` (the frame itself where they have them, whether or not they
    may hold NULLs: Spark's cast does not make a nullable element non-null)."""
    fields = frame.schema.fields
    same = [field.dataType.simpleString() == data_type.simpleString() for field, data_type in zip(fields, types)]
    if all(same):
        return frame
    return frame.select(
        *[
            frame[field.name] if kept else frame[field.name].cast(data_type)
            for field, data_type, kept in zip(fields, types, same)
        ]
    )
