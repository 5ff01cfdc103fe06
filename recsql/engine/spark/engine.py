"""The Spark engine of a fixpoint: rules and merges (the trees of sql/) printed as Spark SQL and run with
`spark.sql` over temporary views of the facts, one materialization per relation and iteration.

Each iteration's delta is computed once (a lazy local checkpoint, filled by counting it); `full` grows as a
union of the materialized deltas, copied into one frame every ROUNDS_PER_CUT iterations to keep its plan
short; a merge that replaces `full` cuts its lineage lazily, so no iteration recomputes an earlier one.

A schema-only engine keeps, instead of each frame, an empty frame of its columns and types: stepping it
runs no Spark job, and tells the types the distributed evaluation gives after each iteration (which
Spark's union widening can change while iterating) to the local strategy.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from sqlglot import exp

from recsql.engine.columns import column_names
from recsql.engine.fixpoint import Versions
from recsql.engine.sql.printing import Dialect, Printer
from recsql.engine.sql.queries import DERIVED, Query
from recsql.engine.sql.rules import rule_query, versioned_sources
from recsql.engine.states import MergeOutput
from recsql.planner.plan import Variant, Version
from recsql.spark.session_kinds import checkpoint_dir, is_connect, made_active
from translator.ir import Atom, Rule

NOT_A_WORD = re.compile(r"\W")
ROUNDS_PER_CUT = 32  # iterations between copies of `full` into one frame (see append)
SPARK = Printer(Dialect.SPARK)


def empty_frame(spark: SparkSession, width: int) -> DataFrame:
    """No rows, `width` untyped columns: unions and joins widen them to the other side's types."""
    return spark.range(0).select(*[F.lit(None).alias(name) for name in column_names(width)])


def schema_frame(spark: SparkSession, schema: StructType) -> DataFrame:
    """No rows, the columns and types of `schema`: a frame's type without its plan or data."""
    return spark.range(0).select(*[F.lit(None).cast(field.dataType).alias(field.name) for field in schema])


def checkpoint(frame: DataFrame, eager: bool) -> DataFrame:
    """`frame` with its lineage cut. With a checkpoint directory (`spark.checkpoint.dir`), in files there,
    which outlive an executor: a fixpoint survives losing one. Else in the executors' memory (local
    checkpoints), faster, but a lost executor fails the query: they cannot be computed again."""
    with made_active(frame.sparkSession):
        if checkpoint_dir(frame.sparkSession):
            return frame.checkpoint(eager=eager)
        return frame.localCheckpoint(eager=eager)


CONSTRAINTS = "spark.sql.constraintPropagation.enabled"


def without_constraints(spark: SparkSession) -> contextlib.AbstractContextManager[None]:
    """Spark's constraint propagation off while a fixpoint plans its queries and checkpoints.

    A checkpoint keeps the constraints Spark inferred for its plan, and a query reading two checkpoints
    of one plan (a delta, and the full relation grown from it) fails in the union's constraint rewriting
    ("key not found"). Planned without constraint propagation, the queries infer no such constraints and
    the checkpoints keep none, so the relations a fixpoint returns are safe to read afterwards. A query
    that another thread plans meanwhile only infers fewer filters."""
    return setting_while(spark, CONSTRAINTS, "false")


@contextlib.contextmanager
def setting_while(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    """The session's setting `key` at `value` while the block runs, as it was after."""
    previous = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, previous)


class Views:
    """Temporary views of the frames a query's SQL reads, under names no other query uses; dropped when the
    query ends (the DataFrames built from them keep their plans).

    On Spark Connect a DataFrame made from SQL is analysed again each time it runs, on the server, by
    which time a view may show another frame or be gone: there the frames go with each query instead, as
    its relations, and no view is made."""

    def __init__(self, spark: SparkSession):
        self.spark = spark
        self.prefix = f"recsql_{uuid.uuid4().hex[:12]}_"
        self.shown: dict[str, DataFrame] = {}
        self.connect = is_connect(spark)
        self.names = re.compile(re.escape(self.prefix) + r"\w+")

    def show(self, name: str, frame: DataFrame) -> str:
        """`frame` as the view `name` (made unique); the view's name."""
        view = self.prefix + view_name(name)
        if self.shown.get(view) is not frame:
            if not self.connect:
                frame.createOrReplaceTempView(view)
            self.shown[view] = frame
        return view

    def sql(self, query: str) -> DataFrame:
        """The Spark SQL `query`, which reads views shown here, as a DataFrame."""
        if not self.connect:
            return self.spark.sql(query)
        frames: dict[str, DataFrame] = {}

        def relation(match: re.Match[str]) -> str:
            key = f"v{len(frames)}"
            frames[key] = self.shown[match.group(0)]
            return "{" + key + "}"

        text = self.names.sub(relation, query.replace("{", "{{").replace("}", "}}"))
        frame = self.spark.sql(text, **frames)  # type: ignore[arg-type]  # keys v0, v1...: none binds `args`
        # the server's plan of `frame` names the server-side data of checkpointed frames by id, which the
        # client releases once nothing refers to those frames: the plan's client-side node keeps them, and
        # every frame derived from `frame` keeps that node
        setattr(frame._plan, "recsql_reads", list(frames.values()))  # noqa: B010 (an attribute of recsql's own)
        return frame

    def drop(self) -> None:
        if not self.connect:
            for view in self.shown:
                self.spark.catalog.dropTempView(view)
        self.shown.clear()


@dataclass(frozen=True)
class SparkFacts:
    frame: DataFrame
    rows: int = 0  # known for a delta (counted when it is materialized)


class SparkEngine:
    """Keeps facts as DataFrames and derives them with Spark SQL (states.Engine, fixpoint.RuleEngine).
    `source`: the view a rule reads for an atom outside the component; `arrange`: the variants' joins
    ordered for deltas of the given sizes."""

    outer_join_merges = False  # Spark estimates an outer join's size as its sides' product (queries.improves)

    def __init__(
        self,
        spark: SparkSession,
        views: Views,
        source: Callable[[Atom], str],
        arrange: Callable[[Variant, Mapping[str, float]], Variant],
        schema_only: bool = False,
    ):
        self.spark = spark
        self.views = views
        self.source = source
        self.order = arrange
        self.schema_only = schema_only
        self.partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or 200)  # set, if only to Spark's default
        self.rounds: dict[str, int] = {}
        self.rules: dict[tuple[Rule, Versions], str] = {}
        self.printed: dict[tuple[int, tuple[tuple[str, str], ...]], str] = {}
        self.candidate_schemas: dict[str, StructType] = {}  # schema-only: the candidates' of the last step

    # ------------------------------------------------------------------ facts (states.Engine)

    def empty(self, width: int) -> SparkFacts:
        return SparkFacts(empty_frame(self.spark, width))

    def run(self, query: Query, relation: str, result: MergeOutput, **inputs: object) -> SparkFacts:
        names = {
            name: self.views.show(f"m_{relation}_{name}", value.frame)
            for name, value in inputs.items()
            if isinstance(value, SparkFacts)
        }
        inline = {name: value for name, value in inputs.items() if isinstance(value, str)}
        key = (id(query), tuple(sorted(names.items())))
        if key not in self.printed:  # the same names every iteration: printed once per evaluation
            self.printed[key] = query.sql(SPARK, names)
        frame = self.views.sql(SPARK.with_inputs(self.printed[key], inline))
        if result is MergeOutput.DELTA:
            return self.materialize(frame)
        return SparkFacts(self.accumulate(frame))

    def append(self, relation: str, full: SparkFacts, delta: SparkFacts) -> SparkFacts:
        """full + delta without copying full: the union of the materialized deltas, copied into one frame
        (lineage cut) every ROUNDS_PER_CUT iterations."""
        frame = full.frame.unionAll(delta.frame)
        self.rounds[relation] = self.rounds.get(relation, 0) + 1
        if self.rounds[relation] == ROUNDS_PER_CUT:
            self.rounds[relation] = 0
            frame = self.cut(frame)
        return SparkFacts(frame)

    def recast(self, facts: SparkFacts, relation: str, result: MergeOutput) -> SparkFacts:
        return facts

    def rows(self, facts: SparkFacts) -> int:
        return facts.rows

    def materialize(self, frame: DataFrame) -> SparkFacts:
        """Compute a delta once (one Spark job: the lazy checkpoint is filled by the count)."""
        if self.schema_only:
            return SparkFacts(schema_frame(self.spark, frame.schema))
        delta = checkpoint(frame, eager=False)
        return SparkFacts(delta, delta.count())

    def cut(self, frame: DataFrame) -> DataFrame:
        if self.schema_only:
            return schema_frame(self.spark, frame.schema)
        return checkpoint(frame.coalesce(self.partitions), eager=True)

    def accumulate(self, frame: DataFrame) -> DataFrame:
        """`frame` as a new full relation. Its lineage is cut lazily: the checkpoint is filled by the next
        job that reads it, so no job runs for it here and no iteration recomputes an earlier one."""
        if self.schema_only:
            return schema_frame(self.spark, frame.schema)
        return checkpoint(frame.coalesce(self.partitions), eager=False)

    # ------------------------------------------------------------------ rules (fixpoint.RuleEngine)

    def begin(self, iteration: int) -> None:
        self.candidate_schemas.clear()

    def arrange(self, variants: Sequence[Variant], delta_rows: Mapping[str, float]) -> Sequence[Variant]:
        return [self.order(variant, delta_rows) for variant in variants]

    def publish(self, relation: str, version: Version, facts: SparkFacts) -> None:
        self.views.show(version_view(relation, version), facts.frame)

    def derive(self, rule: Rule, versions: Versions, extra_terms: tuple[exp.Expr, ...]) -> str:
        """The Spark SQL of a rule reading the given versions (printed once: the view names stay the same)."""
        key = (rule, versions)
        if key not in self.rules:
            source = versioned_sources(
                versions, self.source, lambda relation, version: self.views.prefix + version_view(relation, version)
            )
            self.rules[key] = SPARK.sql(rule_query(rule, source, extra_terms))
        return self.rules[key]

    def contribute(self, query: Query, derived: str) -> str:
        return SPARK.with_inputs(query.sql(SPARK), {DERIVED: derived})

    def union(self, relation: str, parts: list[str]) -> str:
        sql = SPARK.union_all(parts)
        if self.schema_only:
            self.candidate_schemas[relation] = self.views.sql(sql).schema
        return sql

    def seeded(self, facts: SparkFacts) -> str:
        raise NotImplementedError("the Spark engine derives its exit rules' facts itself")

    def count(self, derived: str) -> int:
        return self.views.sql(derived).count()


def view_name(name: str) -> str:
    """`name` as one part of a view's name: a relation of Spark's catalog or a path table (`db.t`,
    parquet.`/data`) has characters that a view's name cannot hold; a digest of the name keeps it apart
    from another that differs only in those."""
    if NOT_A_WORD.search(name) is None:
        return name
    return f"{NOT_A_WORD.sub('_', name)[:40]}_{hashlib.sha1(name.encode()).hexdigest()[:8]}"


def version_view(relation: str, version: Version) -> str:
    return f"v_{relation}_{version.value}"
