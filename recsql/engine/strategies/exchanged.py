"""The distributed strategy's one-job evaluation: a linear recursion without a pivot (reachability,
connected components, shortest paths: the value moves) as ONE Spark job of one barrier stage.

Each task owns the facts whose owner column hashes to it, keeps them in its own DuckDB from the first
iteration to the last, and evaluates the delta rules over its delta and the relations the recursive rules
read (sent to every task, as under the decomposed strategy). Each iteration, every task sends the
candidates it derived to their owners and merges the candidates it received into its own facts (sets,
min/max and sum/count alike: a group lives in one task): the accumulated facts never move, only the new
candidates, once. The tasks run in lockstep and stop together, when no task derived a new fact.

Spark's barrier call waits in steps of a second, so the tasks exchange through files in a directory
(local/exchange.py): this evaluation runs where the tasks share the driver's file system (a local
master); elsewhere the distributed strategy runs its Spark job per iteration.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, Row

from recsql.engine.columns import column_names
from recsql.engine.fixpoint import Ahead, Fixpoint, Limits, iterate
from recsql.engine.local.database import Database, duckdb_errors, quote
from recsql.engine.local.engine import DuckDBEngine
from recsql.engine.local.exchange import DirectoryExchange, Stopped, TotalsReader, remove, stop
from recsql.engine.progress import Progress, ProgressListener
from recsql.engine.relation_types import SETTLED, ResultTypes, TypeSchedule
from recsql.engine.spark.context import StratumRun
from recsql.engine.spark.types import AnyStratumTypes, stratum_types
from recsql.engine.spark_settings import SparkSettings
from recsql.engine.sql.printing import Dialect, Printer
from recsql.engine.strategies.decomposed import Decomposed, seed_table
from recsql.engine.strategies.part_output import PartOutput
from recsql.planner.plan import Stratum
from recsql.settings import Settings
from recsql.spark.session_kinds import local_slots
from translator.ir import Program

ANSWER_SECONDS = 600.0  # how long a task waits for the others in one round before it fails the stage
WATCH_SECONDS = 0.1  # how often the driver looks for iterations the tasks completed


def run_exchanged(run: StratumRun, stratum: Stratum) -> dict[str, DataFrame] | None:
    """The stratum as one Spark job, or None when it cannot run so (without an owner column, see
    optimizer/ownership.py, or where the tasks do not share this machine's files)."""
    slots = local_slots(run.spark)
    if stratum.owner is None or slots is None:
        return None
    types = stratum_types(run, stratum)
    directory = tempfile.mkdtemp(prefix="recsql-exchange-")
    try:
        return Exchanged(run, stratum, types, directory, slots).run()
    finally:
        remove(directory)


class Exchanged(Decomposed):
    """Runs one stratum as a single barrier stage of tasks that exchange candidates (module docstring)."""

    barrier = True  # every task starts together: each waits for the others' candidates

    def __init__(self, run: StratumRun, stratum: Stratum, types: AnyStratumTypes, directory: str, slots: int):
        super().__init__(run, stratum, types)
        self.directory = directory
        self.slots = slots

    def run(self) -> dict[str, DataFrame]:
        watcher = IterationWatcher(
            TotalsReader(self.directory, self.parts()), self.stratum.relations, self.context.report
        )
        try:
            return super().run()
        finally:
            watcher.finish()

    def report_end(self, statistics: list[Row], elapsed: float) -> None:
        """Nothing more: the watcher reported every iteration as the tasks completed it."""

    def parts(self) -> int:
        """A task per part, all running at once: no more parts than Spark runs tasks together."""
        return min(super().parts(), self.slots)

    def partitioned(self, seeds: DataFrame) -> DataFrame:
        """The exit facts spread evenly: the tasks send them to their owners first."""
        return seeds.repartition(self.parts())

    def evaluation(
        self, seed_schema: pa.Schema, output: PartOutput
    ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
        return ExchangedEvaluation(*self.task_inputs(seed_schema, output), self.directory, self.parts())

    def broadcast(self) -> tuple[str, ...]:
        (name,) = self.stratum.relations
        return tuple(
            sorted(
                {
                    atom.relation
                    for variant in self.stratum.variants
                    for atom in variant.rule.atoms
                    if atom.relation != name and not atom.call_args
                }
            )
        )


@dataclass(frozen=True)
class ExchangedEvaluation:
    """What each task of the barrier stage runs. Pickled to the Python workers."""

    program: Program
    stratum: Stratum
    settings: Settings
    spark_settings: SparkSettings
    types: TypeSchedule
    seed_schema: pa.Schema
    inputs: Mapping[str, bytes]  # relation -> Arrow IPC stream of its facts
    output: PartOutput
    directory: str
    parts: int

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import BarrierTaskContext

        task = BarrierTaskContext.get()
        exchange = DirectoryExchange(
            self.directory, task.attemptNumber(), task.partitionId(), self.parts, ANSWER_SECONDS
        )
        try:
            result, iterations = self.evaluate(seed_table(batches, self.seed_schema), exchange)
        except Stopped as stopped:
            yield self.output.failure(stopped)  # the task or the driver that stopped it says why
            return
        except Exception as error:
            exchange.stop()
            yield self.output.failure(error)
            return
        except BaseException:
            exchange.stop()  # killed: the others stop waiting for this task
            raise
        yield from self.output.batches(result, iterations, task.partitionId())

    def evaluate(self, seeds: pa.Table, exchange: DirectoryExchange) -> tuple[pa.Table, int]:
        """This task's facts at the fixpoint of all tasks, and the number of iterations."""
        (name,) = self.stratum.relations
        owner = self.stratum.owner
        assert owner is not None
        inputs = {relation: pa.ipc.open_stream(data).read_all() for relation, data in self.inputs.items()}
        db = Database(self.spark_settings.timezone, threads=1)
        try:
            with duckdb_errors():
                engine = ExchangingEngine(
                    db,
                    inputs,
                    self.types,
                    Printer(Dialect.DUCKDB, self.spark_settings.ansi),
                    exchange,
                    column_names(owner + 1)[owner],
                    db.types_of(self.types(SETTLED)[name].full)[owner],  # one type to hash in every iteration
                )
                fixpoint = Fixpoint(engine, self.program, self.stratum, {name: engine.routed(seeds)})
                iterate(Lockstep(fixpoint, exchange), Limits(self.program, self.stratum, self.settings), None)
                return fixpoint.states[name].full, fixpoint.iterations
        finally:
            db.close()


class ExchangingEngine(DuckDBEngine):
    """The local engine of one task: the candidates of each iteration go to the tasks owning them before
    they are merged."""

    def __init__(
        self,
        db: Database,
        inputs: Mapping[str, pa.Table],
        types: ResultTypes,
        printer: Printer,
        exchange: DirectoryExchange,
        owner: str,
        owner_type: str | None,
    ):
        super().__init__(db, inputs, types, printer)
        self.exchange = exchange
        key = f"CAST({quote(owner)} AS {owner_type})" if owner_type else quote(owner)
        self.owners = f"SELECT hash({key}) % {exchange.parts} AS part FROM _routed"

    def union(self, relation: str, parts: list[str]) -> str:
        received = self.routed(self.db.query(super().union(relation, parts)))
        self.db.register("_received", received)
        return "SELECT * FROM _received"

    def routed(self, facts: pa.Table) -> pa.Table:
        """`facts` sent to their owners; the facts this task owns, from every task."""
        owners = self.db.query(self.owners, _routed=facts).column(0)
        return self.exchange.route(facts, owners)


class IterationWatcher:
    """Reports each iteration when every task has counted its new facts (the shell's progress line,
    EXPLAIN ANALYZE), reading the counts the tasks exchange, as the job runs."""

    def __init__(self, reader: TotalsReader, relations: tuple[str, ...], report: ProgressListener):
        self.reader = reader
        self.relations = relations
        self.report = report
        self.started = time.monotonic()
        self.derived = 0
        self.failure: Exception | None = None  # what the listener raised (the statement was cancelled)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.watch, name="recsql-iterations", daemon=True)
        self.thread.start()

    def watch(self) -> None:
        while not self.stopped.wait(WATCH_SECONDS):
            try:
                self.report_new()
            except Exception as error:
                self.failure = error
                stop(self.reader.directory)  # cancelled: the tasks stop at their next round
                return

    def report_new(self) -> None:
        (name,) = self.relations
        for iteration, new_facts in self.reader.new_totals():
            self.derived = new_facts if iteration == 0 else self.derived + new_facts
            self.report(
                Progress(
                    self.relations,
                    iteration,
                    new_facts,
                    self.derived,
                    time.monotonic() - self.started,
                    {name: new_facts},
                )
            )

    def finish(self) -> None:
        """Stop watching, once the iterations not yet reported are."""
        self.stopped.set()
        self.thread.join()
        if self.failure is not None:
            raise self.failure
        self.report_new()


class Lockstep:
    """A task's fixpoint advancing with the others': each start and step counts the new facts of all
    tasks, and the rows watched for a LIMIT (Fixpoint.watched), so every task sees the same numbers and
    stops (or fails a limit) in the same iteration."""

    def __init__(self, fixpoint: Fixpoint[pa.Table, str], exchange: DirectoryExchange):
        self.fixpoint = fixpoint
        self.exchange = exchange
        self.counted: list[int] = []

    def start(self) -> int:
        return self.summed(self.fixpoint.start())

    def step(self) -> int:
        return self.summed(self.fixpoint.step())

    def summed(self, new_facts: int) -> int:
        """All tasks' new facts; all tasks' watched rows kept for `watched`."""
        new_facts, *self.counted = self.exchange.totals((new_facts, *self.fixpoint.watched()))
        return new_facts

    def watched(self) -> tuple[int, ...]:
        return tuple(self.counted)

    def ahead(self) -> Ahead | None:
        return None

    def facts(self) -> dict[str, int]:
        return self.fixpoint.facts()
