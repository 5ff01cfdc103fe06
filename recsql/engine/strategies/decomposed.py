"""The decomposed strategy: a recursive component with a pivot (optimizer/decomposition.py) evaluated as
ONE Spark job, with no job per iteration.

The exit rules' facts are computed on Spark and hash-partitioned on the pivot (the one shuffle). The
relations the recursive rules read go to every task once, as Arrow IPC inside the task's function (which
Spark broadcasts when it is large). Each task then runs the local evaluator (LocalFixpoint: semi-naive
evaluation, DuckDB over Arrow) from its part of the exit facts to its fixpoint and returns that part of
the result (as rows, or on a local master in a file; part_output.py), then one row of its statistics.
The parts are disjoint (each fact keeps its pivot value), so their union is the component's fixpoint.
Nothing here needs a SparkContext: it runs on Spark Connect as on a driver in this process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType
from sqlglot import exp

from recsql.engine.columns import column_names
from recsql.engine.fixpoint import Limits, Reached, contributor_terms, rule_ids, rule_key
from recsql.engine.local.database import Database, part_of
from recsql.engine.local.engine import LocalFixpoint
from recsql.engine.progress import Progress
from recsql.engine.relation_types import SETTLED, TypeSchedule
from recsql.engine.spark.context import StratumRun
from recsql.engine.spark.engine import SPARK, checkpoint, empty_frame
from recsql.engine.spark.types import AnyStratumTypes, cast_to, stratum_types
from recsql.engine.spark_settings import SparkSettings
from recsql.engine.sql.printing import Dialect, LocalLimit, Printer, inlined
from recsql.engine.sql.queries import DERIVED, contributions_of, union_all
from recsql.engine.sql.rules import aliased, column, nested, rule_query, select, table
from recsql.engine.strategies.handover import HandOver, worth_handing_over
from recsql.engine.strategies.part_output import (
    ITERATIONS,
    STATISTICS,
    STATISTICS_FIELDS,
    PartOutput,
    parts_balance,
    parts_progress,
    raise_failure,
    storable_in_files,
)
from recsql.engine.strategies.reduction import Reduction, reduction
from recsql.engine.types import exact_meaning
from recsql.engine.types.errors import NotInferred
from recsql.engine.types.result_types import row_of, struct
from recsql.optimizer.decomposition import Decomposition
from recsql.planner.plan import Stratum
from recsql.settings import Settings
from recsql.spark.session_kinds import default_parallelism, is_connect, local_slots
from translator.ir import Program, Rule

TASKS_PER_CORE = 1  # each part pays the per-iteration overhead of the local evaluator: one part per core


# what every task is given (the first fields of PartEvaluation and of the exchanged strategy's evaluation)
TaskInputs = tuple[
    Program, Stratum, Settings, SparkSettings, TypeSchedule, pa.Schema, Mapping[str, bytes], PartOutput, bool
]


@dataclass(frozen=True)
class PartEvaluation:
    """What a task runs: its part of the exit facts to fixpoint. Pickled to the Python workers."""

    program: Program
    stratum: Stratum
    settings: Settings
    spark_settings: SparkSettings
    types: TypeSchedule
    seed_schema: pa.Schema  # the exit facts (for sum()/count(): their contributions)
    inputs: Mapping[str, bytes]  # relation -> Arrow IPC stream of its facts
    output: PartOutput
    exit_in_tasks: bool  # each task derives the exit facts and keeps its part (the seeds are part numbers)
    handed_over: HandOver | None = None  # the seeds are part numbers of where a local evaluation stopped
    parts: int = 0  # how many parts the tasks derive the exit facts for

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        task = TaskContext.get()
        assert task is not None  # run by a Spark task
        (name,) = self.stratum.relations
        seeds = seed_table(batches, self.seed_schema)
        if not seeds.num_rows:
            return
        inputs = {relation: pa.ipc.open_stream(data).read_all() for relation, data in self.inputs.items()}
        database = Database(self.spark_settings.timezone, threads=1)
        reached = None
        if self.handed_over is not None:
            reached = self.handed_over.read(name, seeds.column(0).to_pylist())
        history: list[Progress] = []
        fixpoint = LocalFixpoint(
            self.program,
            self.stratum,
            inputs,
            self.settings,
            history.append,
            types=self.types,
            spark_settings=self.spark_settings,
            seeds={name: seeds} if reached is None and not self.exit_in_tasks else None,
            reached=reached,
            database=database,
            exit_filter=self.part_filter(database, task.partitionId()) if self.exit_in_tasks else None,
        )
        try:
            result = fixpoint.run()[name]
        except Exception as error:
            yield self.output.failure(error)
            return
        finally:
            database.close()
        yield from self.output.batches(result, fixpoint.iterations, task.partitionId(), history)

    def part_filter(self, database: Database, part: int) -> str:
        """The condition of the exit facts of this task's part: their pivot value hashes to it."""
        (name,) = self.stratum.relations
        assert self.stratum.decomposition is not None
        pivot = self.stratum.decomposition.pivots[name]
        pivot_type = database.types_of(self.types(SETTLED)[name].full)[pivot]
        return f"{part_of(column_names(pivot + 1)[pivot], pivot_type, self.parts)} = {part}"


def seed_table(batches: Iterator[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    """A task's exit facts with `schema` (Spark may mark a column non-null in some batches only)."""
    return pa.Table.from_batches([batch.cast(schema) for batch in batches], schema=schema)


def run_decomposed(run: StratumRun, stratum: Stratum) -> dict[str, DataFrame] | None:
    """The stratum as one Spark job when it has a pivot (each part stops after its own number of
    iterations, its column types those of Spark's evaluation in each); else None. A local evaluation of
    the stratum that outgrew its capacity is gone on from where it stopped (handover.py), its facts
    handed over in files of the statement's scratch space (in the warehouse off a local master), where
    its types have settled from the start and the executors see those files (not over Spark Connect)."""
    if stratum.decomposition is None:
        return None
    types = stratum_types(run, stratum)
    reached = run.outgrown.get(stratum.relations)
    if reached is not None:
        why = (
            "its tasks may not see this process's files (Spark Connect)"
            if is_connect(run.spark)
            else "its column types change while it iterates"
            if not types.settled_from_start()
            else None
            if worth_handing_over(reached)
            else "that costs less than moving its facts"
        )
        if why is not None:
            run.note(handover_note(stratum, reached, f"started again decomposed on Spark: {why}"))
            reached = None
    if reached is None:
        return Decomposed(run, stratum, types).run()
    return Decomposed(run, stratum, types, reached, task_directory(run, "handover-")).run()


def task_directory(run: StratumRun, prefix: str) -> str:
    """A new directory of the statement's scratch space that the tasks see: on this machine for a local
    master's tasks, in the warehouse for a cluster's."""
    return run.scratch.directory(prefix, shared=local_slots(run.spark) is None)


def handover_note(stratum: Stratum, reached: Reached[pa.Table], outcome: str) -> str:
    """EXPLAIN ANALYZE's line on a local evaluation that outgrew recsql.local_rows."""
    return (
        f"{', '.join(stratum.relations)}: {reached.facts:,} facts after iteration {reached.iterations} in "
        f"this process ({reached.seconds:.3f} s), ~{reached.expected:,} expected after the next: past "
        f"recsql.local_rows; {outcome}"
    )


class Decomposed:
    """Runs one decomposable stratum as a single Spark job (see the module docstring), from its exit
    rules or from where a local evaluation stopped (`reached`)."""

    def __init__(
        self,
        run: StratumRun,
        stratum: Stratum,
        types: AnyStratumTypes,
        reached: Reached[pa.Table] | None = None,
        directory: str | None = None,
    ):
        """`reached`: where a local evaluation stopped, handed over through files in `directory`."""
        self.context = run
        self.spark = run.spark
        self.program = run.program
        self.stratum = replace(stratum, capacity=None)  # a part is never moved elsewhere
        self.types = types
        self.reached = reached
        self.handed_over = HandOver(directory, reached.iterations) if reached is not None and directory else None
        self.rule_ids = rule_ids(run.program)
        self.exit_in_tasks = stratum.exit_in_tasks and reached is None and self.exit_rules_exact()

    def exit_rules_exact(self) -> bool:
        """Whether DuckDB derives the exit facts as Spark does (annotated as a non-recursive relation's
        rules, from the types of what they read), so that the tasks can."""
        rules = self.stratum.exit_rules
        try:
            exact_meaning.annotate_rules(rules, lambda name: row_of(self.context.schema(name)))
        except NotInferred:
            return False
        return duckdb_prints(rules, self.context.spark_settings.ansi)

    @property
    def decomposition(self) -> Decomposition:
        """The stratum's pivot and the relations every part reads: what this strategy was planned for."""
        assert self.stratum.decomposition is not None
        return self.stratum.decomposition

    def run(self) -> dict[str, DataFrame]:
        """The stratum's relation, or the aggregate relation its tasks reduce it to (reduction.py)."""
        started = time.monotonic()
        (name,) = self.stratum.relations
        schema = struct(self.types.spark(SETTLED)[name])
        exit_schema = struct(self.types.spark(0)[name])
        reduced = reduction(self.stratum.part_aggregate, self.types.spark(0)[name], self.types.spark(SETTLED)[name])
        if self.handed_over is not None:
            seeds = self.hand_over(name)
        elif self.exit_in_tasks:
            seeds = self.part_numbers()
        else:
            seeds = self.partitioned(self.exit_facts(name, exit_schema))
        seed_schema = to_arrow_schema(seeds.schema, timezone=self.context.spark_settings.timezone)
        output = self.part_output(schema, reduced)
        rows = schema if reduced is None else reduced.schema
        fields = rows.fields if output.directory is None else []
        tasks = seeds.mapInArrow(
            self.evaluation(seed_schema, output), StructType([*fields, *STATISTICS_FIELDS]), barrier=self.barrier
        )
        if reduced is not None and reduced.brought_here(self.context.settings):
            result: DataFrame | pa.Table
            result, statistics = self.brought_here(tasks)
        else:
            result, statistics = self.collected(tasks, rows, output.directory)
        raise_failure(row[2] for row in statistics)
        iterations = max((row[0] for row in statistics), default=0)
        facts = sum(row[1] for row in statistics)
        Limits(self.program, self.stratum, self.context.settings).check_rows(facts, iterations)
        self.report_end(statistics, time.monotonic() - started)
        balance = parts_balance(self.stratum.relations, statistics)
        if balance is not None:
            self.context.note(balance)
        types = self.types.spark(iterations)[name]  # as Spark's last iteration types it
        if reduced is not None:
            self.context.note(f"{name}: its tasks aggregated their facts for {reduced.aggregate.relation}")
            return {reduced.aggregate.relation: reduced.combined(self.context, result, types)}
        assert isinstance(result, DataFrame)
        return {name: cast_to(result, types)}

    def part_output(self, schema: StructType, reduced: Reduction | None) -> PartOutput:
        """What each task returns: its facts (in a file, where they can be), or their partial aggregates."""
        (name,) = self.stratum.relations
        if reduced is None:
            return PartOutput(self.types.arrow(SETTLED)[name].full, self.files_directory(schema))
        settings = self.context.spark_settings
        columns = self.program.relations[reduced.aggregate.relation].columns
        task = reduced.task(settings.timezone, settings.ansi, columns)
        return PartOutput(task.schema, reduce=task)

    def files_directory(self, schema: StructType) -> str | None:
        """Where the parts write their facts (part_output.py) when Parquet holds the relation's types: a
        directory of the statement's scratch space, on this machine for a local master's tasks, else in
        the warehouse, which a cluster's executors see (they write tables there). None (the facts come
        back as rows of the job, kept in a checkpoint) over Spark Connect, whose executors need not see
        this process's warehouse."""
        if is_connect(self.spark) or not storable_in_files(schema):
            return None
        return task_directory(self.context, "parts-")

    def collected(self, tasks: DataFrame, schema: StructType, directory: str | None) -> tuple[DataFrame, list[Row]]:
        """Run the job (once): the stratum's facts, and the parts' statistics rows. A barrier stage ends
        with a shuffle: Spark runs a failed barrier stage again only when it is not the job's last, and
        every job reading a barrier stage's output runs as one unless a shuffle ends it."""
        if directory is not None:
            statistics = (tasks.repartition(1) if self.barrier else tasks).collect()
            return self.spark.read.schema(schema).parquet(directory), statistics  # listed once the files exist
        if self.barrier:
            tasks = tasks.repartition(self.parts(), F.col(schema.fields[0].name))
        parts = checkpoint(tasks, eager=False)  # filled by the job below: one job
        statistics = parts.where(F.col(ITERATIONS).isNotNull()).select(*STATISTICS).collect()  # a row a part
        return parts.where(F.col(ITERATIONS).isNull()).drop(*STATISTICS), statistics

    def brought_here(self, tasks: DataFrame) -> tuple[pa.Table, list[Row]]:
        """Run the job (once) and bring its rows to this process: a reduction's partial rows, and the
        parts' statistics rows."""
        rows = (tasks.repartition(1) if self.barrier else tasks).toArrow()
        statistics = pc.is_valid(rows.column(ITERATIONS))
        parts = rows.filter(statistics).select(list(STATISTICS)).to_pylist()  # a row a part
        return rows.filter(pc.invert(statistics)).drop_columns(list(STATISTICS)), [Row(**part) for part in parts]

    def report_end(self, statistics: list[Row], elapsed: float) -> None:
        """The progress listener hears of the parts' fixpoint once every part has reached its own: of each
        iteration, the facts all parts derived in it."""
        before = self.reached.seconds if self.reached is not None and self.handed_over is not None else 0.0
        for event in parts_progress(self.stratum.relations, statistics, elapsed, before):
            self.context.report(event)

    barrier = False  # the tasks run independently

    def partitioned(self, seeds: DataFrame) -> DataFrame:
        """The exit facts in the parts the tasks evaluate: hashed on the pivot."""
        (name,) = self.stratum.relations
        pivot = column_names(len(self.program.relations[name].columns))[self.decomposition.pivots[name]]
        return seeds.repartition(self.parts(), F.col(pivot))

    def evaluation(
        self, seed_schema: pa.Schema, output: PartOutput
    ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
        """What each task runs over its part of the exit facts."""
        return PartEvaluation(*self.task_inputs(seed_schema, output), self.handed_over, self.parts())

    def task_inputs(self, seed_schema: pa.Schema, output: PartOutput) -> TaskInputs:
        """What every task is given, whatever it runs: the program, its settings and types, the relations
        broadcast to it, where its output goes."""
        return (
            self.program,
            self.stratum,
            self.context.settings,
            self.context.spark_settings,
            self.types.schedule(),
            seed_schema,
            self.broadcast_inputs(),
            output,
            self.exit_in_tasks,
        )

    def hand_over(self, name: str) -> DataFrame:
        """The part files of where the local evaluation stopped, and a frame of one part number per
        partition: the tasks' seeds."""
        assert self.reached is not None and self.handed_over is not None
        parts = self.parts()
        facts = self.handed_over.write(
            self.reached,
            name,
            self.types.arrow(SETTLED)[name].full,
            self.decomposition.pivots[name],
            parts,
            self.context.spark_settings.timezone,
        )
        self.context.note(
            handover_note(self.stratum, self.reached, f"went on from there decomposed on Spark ({facts:,} facts)")
        )
        return self.part_numbers()

    def part_numbers(self) -> DataFrame:
        """A frame of one part number per partition: the seeds of tasks that find their facts themselves."""
        parts = self.parts()
        return self.spark.range(0, parts, 1, parts)

    def exit_facts(self, name: str, schema: StructType) -> DataFrame:
        """The facts of the exit rules with the relation's types, before deduplication (each task absorbs
        its part); for sum()/count(), as the contributions the local evaluator absorbs."""
        relation = self.program.relations[name]
        if not self.stratum.exit_rules:
            return empty_frame(self.spark, len(relation.columns))
        summed = relation.aggregate is not None and relation.aggregate.function.is_sum
        parts = []
        for rule in self.stratum.exit_rules:
            named, extra = contributor_terms(self.program, self.stratum, rule) if summed else (rule, ())
            derived: exp.Query = typed(rule_query(named, lambda _, atom: self.context.atom_source(atom), extra), schema)
            if summed:
                contributions = contributions_of(relation, self.rule_ids[rule_key(rule)], len(extra))
                derived = inlined(contributions.tree, {DERIVED: derived})
            parts.append(derived)
        return self.context.views.sql(SPARK.sql(union_all(parts)))

    def broadcast_inputs(self) -> dict[str, bytes]:
        """Each relation the recursive rules read, as an Arrow IPC stream (columns c0 .. cN)."""
        streams = {}
        tables = self.context.local_inputs(self.stratum, self.sent())
        for relation, facts in tables.items():
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, facts.schema) as writer:
                writer.write_table(facts)
            streams[relation] = sink.getvalue().to_pybytes()
        return streams

    def sent(self) -> set[str]:
        """The relations every task is sent: those its rules read in full, and those its exit rules read
        where the tasks derive the exit facts."""
        exit_inputs = {atom.relation for rule in self.stratum.exit_rules for atom in rule.atoms}
        return set(self.broadcast()) | (exit_inputs if self.exit_in_tasks else set())

    def broadcast(self) -> tuple[str, ...]:
        """The relations every task reads in full."""
        return self.decomposition.broadcast

    def parts(self) -> int:
        return default_parallelism(self.spark) * TASKS_PER_CORE


def duckdb_prints(rules: Sequence[Rule], ansi: bool) -> bool:
    """Whether DuckDB computes the rules as Spark does (a task can derive their facts)."""
    printer = Printer(Dialect.DUCKDB, ansi)
    try:
        for rule in rules:
            printer.sql(rule_query(rule, lambda _, atom: table(atom.relation)))
    except LocalLimit:
        return False
    return True


def typed(query: exp.Query, schema: StructType) -> exp.Select:
    """`query` with its first columns cast to the types of `schema` (the columns after them as they are)."""
    items: list[exp.Expr] = [
        aliased(
            exp.Cast(this=column(field.name), to=exp.DataType.build(field.dataType.simpleString(), dialect="spark")),
            field.name,
        )
        for field in schema.fields
    ]
    extra: list[exp.Expr] = [column(item.alias_or_name) for item in query.selects[len(schema.fields) :]]
    return select(items + extra, nested(query, "r"))
