"""How each kind of recursive relation absorbs newly derived candidate facts in one iteration.

Every state keeps `full` (all facts so far), `delta` (what changed in the last iteration, the input of the
next one) and `old` (`full` before the last iteration). All frames have positional columns c0 .. cN.

* SetRelation: UNION, set semantics. delta = candidates not yet known.
* ExtremumRelation: min()/max() in the CTE header. A group's value improves or stays; delta holds only
  the groups whose value improved, with the new value.
* SumRelation: sum()/count() in the CTE header (monotonic sum/count). Candidates are contributions
  (group, rule, contributor key, value); for each contributor only its largest (latest) value counts, a
  group's value is the sum over its contributors, and delta holds the groups whose sum changed.
* BagRelation: UNION ALL, the SQL standard's iteration: delta is the last round's rows, full all rounds.

A schema-only state keeps, instead of each frame, an empty frame of its columns and types: stepping it
runs no Spark job, and tells the types the distributed evaluation gives after each iteration (which
Spark's union widening can change while iterating) to the local strategy.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from recsql.engine.render import column_names, null_safe_join
from translator.ir import Relation

RULE_ID, CONTRIBUTOR, VALUE = "__rule", "__contributor", "__value"


def empty_frame(spark: SparkSession, width: int) -> DataFrame:
    """No rows, `width` untyped columns: unions and joins widen them to the other side's types."""
    return spark.range(0).select(*[F.lit(None).alias(name) for name in column_names(width)])


def schema_frame(spark: SparkSession, schema: StructType) -> DataFrame:
    """No rows, the columns and types of `schema`: a frame's type without its plan or data."""
    return spark.range(0).select(*[F.lit(None).cast(field.dataType).alias(field.name) for field in schema])


class RelationState:
    ROUNDS_PER_CUT = 32  # iterations between copies of `full` into one frame (see grow)

    def __init__(self, spark: SparkSession, relation: Relation, schema_only: bool = False):
        self.spark = spark
        self.relation = relation
        self.schema_only = schema_only
        self.names = column_names(len(relation.columns))
        self.partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
        self.full = self.delta = self.old = empty_frame(spark, len(relation.columns))
        self.delta_rows = 0
        self.rounds_since_cut = 0

    def merge(self, candidates: DataFrame | None) -> None:
        raise NotImplementedError

    def empty(self) -> DataFrame:
        return empty_frame(self.spark, len(self.names))

    def materialize_delta(self, frame: DataFrame) -> None:
        """Compute the delta once (one Spark job: the lazy checkpoint is filled by the count)."""
        if self.schema_only:
            self.delta, self.delta_rows = schema_frame(self.spark, frame.schema), 0
            return
        self.delta = frame.localCheckpoint(eager=False)
        self.delta_rows = self.delta.count()

    def grow(self) -> None:
        """full = full + delta, without copying full: the union of the materialized deltas, copied into one
        frame (lineage cut) every ROUNDS_PER_CUT iterations."""
        self.full = self.full.unionAll(self.delta)
        self.rounds_since_cut += 1
        if self.rounds_since_cut == self.ROUNDS_PER_CUT:
            self.full = self.cut(self.full)
            self.rounds_since_cut = 0

    def cut(self, frame: DataFrame) -> DataFrame:
        if self.schema_only:
            return schema_frame(self.spark, frame.schema)
        return frame.coalesce(self.partitions).localCheckpoint(eager=True)

    def accumulate(self, frame: DataFrame) -> DataFrame:
        """`frame` as the new full relation. Its lineage is cut lazily: the checkpoint is filled by the next
        job that reads it, so no job runs for it here and no iteration recomputes an earlier one."""
        if self.schema_only:
            return schema_frame(self.spark, frame.schema)
        return frame.coalesce(self.partitions).localCheckpoint(eager=False)


class SetRelation(RelationState):
    def merge(self, candidates: DataFrame | None) -> None:
        self.old = self.full
        if candidates is None:
            self.delta, self.delta_rows = self.empty(), 0
            return
        self.materialize_delta(candidates.subtract(self.full))
        self.grow()


class BagRelation(RelationState):
    def merge(self, candidates: DataFrame | None) -> None:
        self.old = self.full
        if candidates is None:
            self.delta, self.delta_rows = self.empty(), 0
            return
        self.materialize_delta(candidates)
        self.grow()


class ExtremumRelation(RelationState):
    def __init__(self, spark: SparkSession, relation: Relation, schema_only: bool = False):
        super().__init__(spark, relation, schema_only)
        self.keys = [self.names[i] for i in relation.group_key]
        self.value = self.names[relation.aggregate.column]
        self.function = F.min if relation.aggregate.function == "min" else F.max

    def merge(self, candidates: DataFrame | None) -> None:
        self.old = self.full
        if candidates is None:
            self.delta, self.delta_rows = self.empty(), 0
            return
        best = self.aggregate(candidates)
        if not self.keys:
            merged = self.accumulate(self.aggregate(self.full.unionAll(best)))
            self.materialize_delta(merged.subtract(self.full))
            self.full = merged
            return
        known = self.full.select(*self.keys, F.col(self.value).alias("__known"))
        joined = null_safe_join(best, known, self.keys, "left")
        better = F.col(self.value) < F.col("__known") if self.function is F.min else F.col(self.value) > F.col("__known")
        self.materialize_delta(joined.filter(F.col("__known").isNull() | better).select(*self.names))
        unchanged = null_safe_join(self.full, self.delta, self.keys, "left_anti")
        self.full = self.accumulate(unchanged.unionAll(self.delta))

    def aggregate(self, frame: DataFrame) -> DataFrame:
        grouped = frame.groupBy(*self.keys) if self.keys else frame.groupBy()
        return grouped.agg(self.function(self.value).alias(self.value)).select(*self.names)


class SumRelation(RelationState):
    """Candidates arrive as contribution frames: group key columns, RULE_ID, CONTRIBUTOR, VALUE."""

    def __init__(self, spark: SparkSession, relation: Relation, schema_only: bool = False):
        super().__init__(spark, relation, schema_only)
        self.keys = [self.names[i] for i in relation.group_key]
        self.value = self.names[relation.aggregate.column]
        self.contributions: DataFrame | None = None

    def merge(self, candidates: DataFrame | None) -> None:
        self.old = self.full
        if candidates is None:
            self.delta, self.delta_rows = self.empty(), 0
            return
        identity = self.keys + [RULE_ID, CONTRIBUTOR]
        merged = candidates if self.contributions is None else self.contributions.unionAll(candidates)
        merged = self.accumulate(merged.groupBy(*identity).agg(F.max(VALUE).alias(VALUE)))
        if self.contributions is None:
            self.materialize_delta(self.totals(merged))
            self.full = self.delta
        else:
            changed = merged.subtract(self.contributions).select(*self.keys).distinct()
            affected = null_safe_join(merged, changed, self.keys, "left_semi") if self.keys else merged
            self.materialize_delta(self.totals(affected))
            unchanged = null_safe_join(self.full, self.delta, self.keys, "left_anti") if self.keys else self.empty()
            self.full = self.accumulate(unchanged.unionAll(self.delta))
        self.contributions = merged

    def totals(self, contributions: DataFrame) -> DataFrame:
        grouped = contributions.groupBy(*self.keys) if self.keys else contributions.groupBy()
        return grouped.agg(F.sum(VALUE).alias(self.value)).select(*self.names)

    def contributions_of(self, derived: DataFrame, rule_id: int) -> DataFrame:
        """A rule's output (head columns, then contributor columns) as contributions."""
        width = len(self.names)
        contributor = F.to_json(F.array(*[F.col(c).cast("string") for c in derived.columns[width:]]))
        return derived.select(
            *self.keys, F.lit(rule_id).alias(RULE_ID), contributor.alias(CONTRIBUTOR), F.col(self.value).alias(VALUE)
        )


def state_for(spark: SparkSession, relation: Relation, bag: bool, schema_only: bool = False) -> RelationState:
    if relation.aggregate is not None:
        kind = ExtremumRelation if relation.aggregate.function in ("min", "max") else SumRelation
    else:
        kind = BagRelation if bag else SetRelation
    return kind(spark, relation, schema_only)
