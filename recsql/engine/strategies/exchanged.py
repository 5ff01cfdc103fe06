"""The distributed strategy's one-job evaluation: a linear recursion without a pivot (reachability,
connected components, shortest paths: the value moves) as ONE Spark job of one barrier stage.

Each task owns the facts whose owner column hashes to it, keeps them in its own DuckDB from the first
iteration to the last, and evaluates the delta rules over its delta and the relations the recursive rules
read (sent to every task, as under the decomposed strategy). Each iteration, every task sends the
candidates it derived to their owners and merges the candidates it received into its own facts (sets,
min/max and sum/count alike: a group lives in one task): the accumulated facts never move, only the new
candidates, once. The tasks run in lockstep and stop together, when no task derived a new fact.

The tasks exchange over TCP connections between them (local/exchange.py), wherever they run; they learn
where the others listen from the driver (local/rendezvous.py), which hears of each iteration as it ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, Row

from recsql.engine.columns import column_names
from recsql.engine.fixpoint import Ahead, Fixpoint, Limits, iterate
from recsql.engine.local.database import Database, duckdb_errors, part_of
from recsql.engine.local.engine import DuckDBEngine
from recsql.engine.local.exchange import SocketExchange, Stopped
from recsql.engine.local.rendezvous import Coordinator, Registration, Rendezvous
from recsql.engine.progress import Progress, ProgressListener
from recsql.engine.relation_types import SETTLED, ResultTypes, TypeSchedule
from recsql.engine.spark.context import StratumRun
from recsql.engine.spark.engine import setting_while
from recsql.engine.spark.reachability import coordinator_host
from recsql.engine.spark.types import AnyStratumTypes, stratum_types
from recsql.engine.spark_settings import SparkSettings
from recsql.engine.sql.printing import Dialect, Printer
from recsql.engine.strategies.decomposed import Decomposed, seed_table
from recsql.engine.strategies.part_output import PartOutput
from recsql.planner.plan import Stratum
from recsql.settings import Settings
from recsql.spark.session_kinds import task_slots
from translator.ir import Program

ANSWER_SECONDS = 600.0  # how long a task waits for the others in one round before it fails the stage
ADAPTIVE = "spark.sql.adaptive.enabled"


def run_exchanged(run: StratumRun, stratum: Stratum) -> dict[str, DataFrame] | None:
    """The stratum as one Spark job, or None when it cannot run so (without an owner column, see
    optimizer/ownership.py)."""
    if stratum.owner is None:
        return None
    return Exchanged(run, stratum, stratum_types(run, stratum), task_slots(run.spark)).run()


class Exchanged(Decomposed):
    """Runs one stratum as a single barrier stage of tasks that exchange candidates (module docstring)."""

    barrier = True  # every task starts together: each waits for the others' candidates

    def __init__(self, run: StratumRun, stratum: Stratum, types: AnyStratumTypes, slots: int):
        super().__init__(run, stratum, types)
        self.slots = slots
        self.coordinator: Coordinator | None = None

    def run(self) -> dict[str, DataFrame]:
        """The job, planned without adaptive execution: Spark then checks the slots a barrier stage needs
        as it submits the job, waiting for an executor being replaced, where adaptive execution submits
        the stage alone and fails (and with it the SparkContext) when one is missing."""
        host = coordinator_host(self.spark)
        with setting_while(self.spark, ADAPTIVE, "false"):
            if host is None:  # Spark Connect, this process out of the executors' reach: through the barrier
                return super().run()
            reports = IterationReports(self.stratum.relations, self.context.report)
            self.coordinator = Coordinator(self.parts(), host, reports)
            try:
                return super().run()
            finally:
                self.coordinator.close()

    def report_end(self, statistics: list[Row], elapsed: float) -> None:
        """Without a coordinator, the iterations the first task recorded; else nothing more: the
        coordinator reported every iteration as the tasks completed it."""
        if self.coordinator is None:
            super().report_end(statistics, elapsed)

    def parts(self) -> int:
        """A task per part, all running at once: no more parts than Spark runs tasks together."""
        return min(super().parts(), self.slots)

    def partitioned(self, seeds: DataFrame) -> DataFrame:
        """The exit facts spread evenly: the tasks send them to their owners first."""
        return seeds.repartition(self.parts())

    def evaluation(
        self, seed_schema: pa.Schema, output: PartOutput
    ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
        rendezvous = self.coordinator.rendezvous if self.coordinator is not None else Rendezvous.barrier()
        return ExchangedEvaluation(*self.task_inputs(seed_schema, output), rendezvous, self.parts())

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
    exit_in_tasks: bool  # the tasks derive the exit facts (the first task sends them to their owners)
    rendezvous: Rendezvous
    parts: int

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import BarrierTaskContext

        task = BarrierTaskContext.get()
        part = task.partitionId()
        host = task.getTaskInfos()[part].address.rpartition(":")[0]  # where Spark reaches this executor
        exchange = SocketExchange(part, self.parts, self.rendezvous.token, ANSWER_SECONDS)
        registration: Registration | None = None
        try:
            seeds = seed_table(batches, self.seed_schema)
            registration = self.rendezvous.join(exchange, host)
            result, iterations, history = self.evaluate(seeds, registration)
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
        finally:
            exchange.close()
            if registration is not None:
                registration.close()
        yield from self.output.batches(result, iterations, part, history)

    def evaluate(self, seeds: pa.Table, registration: Registration) -> tuple[pa.Table, int, list[Progress]]:
        """This task's facts at the fixpoint of all tasks, the number of iterations, and the progress of
        all tasks iteration by iteration (recorded by the first task)."""
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
                    registration.exchange,
                    column_names(owner + 1)[owner],
                    db.types_of(self.types(SETTLED)[name].full)[owner],  # one type to hash in every iteration
                )
                seeded = None if self.exit_in_tasks else {name: engine.routed(seeds)}
                fixpoint = Fixpoint(engine, self.program, self.stratum, seeded)
                lockstep = Lockstep(fixpoint, registration)
                iterate(lockstep, Limits(self.program, self.stratum, self.settings), None)
                return fixpoint.states[name].full, fixpoint.iterations, lockstep.history
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
        exchange: SocketExchange,
        owner: str,
        owner_type: str | None,
    ):
        # where the tasks derive the exit facts, the first sends them all to their owners
        super().__init__(db, inputs, types, printer, None if exchange.part == 0 else "FALSE")
        self.exchange = exchange
        self.owners = f"SELECT {part_of(owner, owner_type, exchange.parts)} AS part FROM _routed"

    def union(self, relation: str, parts: list[str]) -> str:
        received = self.routed(self.db.query(super().union(relation, parts)))
        self.db.register("_received", received)
        return "SELECT * FROM _received"

    def routed(self, facts: pa.Table) -> pa.Table:
        """`facts` sent to their owners; the facts this task owns, from every task."""
        owners = self.db.query(self.owners, _routed=facts).column(0)
        return self.exchange.route(facts, owners)


class IterationReports:
    """Turns the first task's report of each iteration into a progress event (the shell's progress line,
    EXPLAIN ANALYZE) as the job runs; an attempt of the stage after a failed one counts afresh."""

    def __init__(self, relations: tuple[str, ...], report: ProgressListener):
        self.relations = relations
        self.report = report
        self.started = time.monotonic()
        self.attempt: int | None = None
        self.iteration = 0
        self.derived = 0

    def __call__(self, attempt: int, new_facts: int) -> None:
        if attempt != self.attempt:
            self.attempt, self.iteration, self.derived = attempt, 0, 0
        self.derived += new_facts
        (name,) = self.relations
        elapsed = time.monotonic() - self.started
        self.report(Progress(self.relations, self.iteration, new_facts, self.derived, elapsed, {name: new_facts}))
        self.iteration += 1


class Lockstep:
    """A task's fixpoint advancing with the others': each start and step counts the new facts of all
    tasks, and the rows watched for a LIMIT (Fixpoint.watched), so every task sees the same numbers and
    stops (or fails a limit) in the same iteration. The first task tells the driver and keeps a history."""

    def __init__(self, fixpoint: Fixpoint[pa.Table, str], registration: Registration):
        self.fixpoint = fixpoint
        self.registration = registration
        self.counted: list[int] = []
        self.history: list[Progress] = []
        self.started = time.monotonic()

    def start(self) -> int:
        return self.summed(self.fixpoint.start())

    def step(self) -> int:
        return self.summed(self.fixpoint.step())

    def summed(self, new_facts: int) -> int:
        """All tasks' new facts; all tasks' watched rows kept for `watched`."""
        new_facts, *self.counted = self.registration.exchange.totals((new_facts, *self.fixpoint.watched()))
        self.registration.progress(new_facts)
        if self.registration.exchange.part == 0:
            relations = self.fixpoint.stratum.relations
            derived = (self.history[-1].total_rows if self.history else 0) + new_facts
            elapsed = time.monotonic() - self.started
            new = dict.fromkeys(relations, new_facts)
            self.history.append(Progress(relations, len(self.history), new_facts, derived, elapsed, new))
        return new_facts

    def watched(self) -> tuple[int, ...]:
        return tuple(self.counted)

    def ahead(self) -> Ahead | None:
        return None

    def facts(self) -> dict[str, int]:
        return self.fixpoint.facts()
