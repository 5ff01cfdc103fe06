"""Runs a plan: entirely in this process when it can (every stratum planned LOCAL, every table at hand as
Arrow, every type derivable in Python: no Spark job at all), else on Spark (spark/runner.py), each
recursive stratum by its strategy."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import DataType
from sqlglot import exp

from recsql.engine.answer import Answer, StoredAnswer
from recsql.engine.columns import column_names
from recsql.engine.fixpoint import CapacityExceeded, Reached
from recsql.engine.local.database import ArithmeticLimit
from recsql.engine.local.program import LocalProgram
from recsql.engine.progress import ProgressListener
from recsql.engine.relation_types import SETTLED
from recsql.engine.scratch import Scratch
from recsql.engine.spark.engine import checkpoint, without_constraints
from recsql.engine.spark.runner import SparkRun, TableSource
from recsql.engine.spark_settings import ANSI, SparkSettings
from recsql.engine.sql.printing import LocalLimit
from recsql.engine.trace import Trace
from recsql.engine.types import exact_meaning
from recsql.engine.types.errors import NotInferred
from recsql.engine.types.plan_types import PlanTyping
from recsql.engine.types.result_types import row_of
from recsql.engine.types.widening import Row, changes_values
from recsql.planner.plan import Plan
from recsql.settings import Settings, SparkUse, Strategy
from recsql.spark.defaults import TIME_ZONE
from recsql.spark.errors import lost_checkpoint
from recsql.spark.lazy import LazySpark
from translator.ir import Program

A = TypeVar("A")
FEW_ROWS = 10_000  # an answer bounded to so few rows comes to this process at once, not kept on Spark
FEW_RULES = 100  # an answer of aggregates without groups: at most a row per rule
RESTARTS = 2  # evaluations started again after losing local checkpoints


class Executor:
    def __init__(
        self,
        spark: LazySpark,
        tables: TableSource,
        settings: Settings,
        scratch: Scratch,
        progress: ProgressListener | None = None,
        trace: Trace | None = None,
    ):
        self.spark = spark
        self.source = tables
        self.settings = settings
        self.progress = progress
        self.trace = trace
        self.scratch = scratch  # the statement's files on this machine
        self.outgrown: dict[
            tuple[str, ...], Reached[pa.Table] | None
        ] = {}  # strata past their capacity: where they stopped

    def fetch(self, plan: Plan) -> Answer:
        """The answer of the plan's program as Arrow (collected from Spark when it ran there)."""
        return self.restarting(lambda: self.in_hand(self.result(plan)))

    def keep(self, plan: Plan) -> Answer | StoredAnswer:
        """The answer of the plan's program: as Arrow when it ran in this process or when its query
        bounds it to a few rows, else checkpointed on Spark's executors, where it outlives the statement
        and stays until its rows are asked for."""
        if few_rows(plan.program):
            return self.fetch(plan)
        return self.restarting(lambda: self.stored(self.result(plan)))

    @staticmethod
    def in_hand(result: Answer | DataFrame) -> Answer:
        return result if isinstance(result, Answer) else Answer.of(result)

    @staticmethod
    def stored(result: Answer | DataFrame) -> Answer | StoredAnswer:
        if isinstance(result, Answer):
            return result
        with without_constraints(result.sparkSession):  # its readers may join it with itself
            return StoredAnswer(checkpoint(result, eager=True))

    def restarting(self, evaluation: Callable[[], A]) -> A:
        """Run an evaluation, again if it lost local checkpoints.

        Spark keeps a fixpoint's iterations in local checkpoints unless the session has a checkpoint
        directory: an executor lost meanwhile takes some with it, and the evaluation starts again (at
        most RESTARTS times) rather than fail."""
        restarts = 0
        while True:
            try:
                return evaluation()
            except Exception as error:
                if restarts == RESTARTS or not lost_checkpoint(error):
                    raise
                restarts += 1
                if self.trace is not None:
                    self.trace.restart("an executor holding local checkpoints was lost")

    def result(self, plan: Plan) -> Answer | DataFrame:
        """The answer computed in this process when the whole plan can be (no Spark job at all), else
        on Spark, as a DataFrame not yet collected."""
        local = self.in_process(plan)
        if not isinstance(local, str):
            program, tables = local
            try:
                table, types = program.run(tables)
                return Answer(list(plan.program.output_columns), list(types), table)
            except CapacityExceeded as exceeded:
                self.outgrown[exceeded.relations] = exceeded.reached
            except (ArithmeticLimit, LocalLimit) as limit:
                if isinstance(limit, LocalLimit) and self.settings.strategy == Strategy.LOCAL:
                    raise
                if self.trace is not None:
                    self.trace.notes.append(f"run again on Spark: {limit.message}")
        return self.run(plan)

    def in_process(self, plan: Plan) -> tuple[LocalProgram[DataType], dict[str, pa.Table]] | str:
        """The plan as a LocalProgram and the tables it reads as Arrow, when it can run in this process
        without Spark; else why it cannot (for EXPLAIN)."""
        if self.settings.spark == SparkUse.ALWAYS:
            return "recsql.spark = always"
        for stratum in plan.strata:
            if stratum.strategy != Strategy.LOCAL:
                names = ", ".join(plan.program.relations[name].display_name for name in stratum.relations)
                return f"{names} planned there ({stratum.reason})"
        spark_settings = self.spark_settings()
        typing = PlanTyping(plan.program, spark_settings.timezone)
        table_types = self.table_types(plan)
        try:
            exact_meaning.annotate(plan, typing.derived(plan, table_types))
        except NotInferred as error:
            return f"a type only Spark derives: {error}"
        tables = self.arrow_inputs(plan)
        if isinstance(tables, str):
            return tables
        program = LocalProgram(plan, table_types, typing, self.settings, self.progress, spark_settings, self.trace)
        return program, tables

    def run(self, plan: Plan) -> DataFrame:
        """The answer of the plan's program on Spark, as a DataFrame named after the output columns."""
        return SparkRun(
            self.spark.session(),
            self.source,
            self.settings,
            plan,
            self.scratch,
            self.progress,
            self.trace,
            self.outgrown,
        ).answer()

    def typing(self, plan: Plan) -> PlanTyping:
        return PlanTyping(plan.program, self.spark_settings().timezone)

    def spark_settings(self) -> SparkSettings:
        """The Spark settings that decide what expressions mean, as Spark has or will have them."""
        return SparkSettings(
            ansi=(self.spark.get_setting(ANSI) or "").lower() == "true",
            timezone=self.spark.get_setting(TIME_ZONE) or "UTC",
        )

    def table_types(self, plan: Plan) -> dict[str, Row]:
        return {name: row_of(self.source.schema(name)) for name in base_tables(plan)}

    def widenings(self, plan: Plan) -> list[str]:
        """EXPLAIN's lines on the columns of recursive relations whose values may change as their type
        widens while they iterate (as Spark's own evaluation casts each iteration's facts, recsql's does),
        where Python derives the types."""
        typing, lines = self.typing(plan), []
        known = dict(self.table_types(plan))
        try:
            for stratum in plan.strata:
                if not stratum.component.recursive:
                    known.update({name: typing.relation(name, known) for name in stratum.relations})
                    continue
                types = typing.stratum(stratum, known)
                first, settled = types.spark(0), types.spark(SETTLED)
                known.update(settled)
                for name in stratum.relations:
                    relation = plan.program.relations[name]
                    for column, before, after in zip(relation.columns, first[name], settled[name]):
                        if changes_values(before, after):
                            lines.append(
                                f"{relation.display_name}.{column} widens from {before.simpleString().upper()} "
                                f"in the exit facts to {after.simpleString().upper()} while it iterates: "
                                "the cast may change values, as in Spark's own evaluation"
                            )
        except NotInferred:
            return []
        return lines

    def output_types(self, plan: Plan) -> list[DataType]:
        """The answer's column types without running the query where Python can derive them; else from
        Spark's plan of the answer, which needs the recursive strata computed."""
        program = plan.program
        try:
            types = self.typing(plan).derived(plan, self.table_types(plan))[program.output]
        except NotInferred:
            return [field.dataType for field in self.run(plan).schema.fields]
        return list(types[: len(types) - program.hidden_columns])

    def arrow_inputs(self, plan: Plan) -> dict[str, pa.Table] | str:
        """The tables the plan reads, as Arrow (columns c0 .. cN), when every one is at hand without a
        Spark job; else which one is not."""
        tables = {}
        for name in sorted(base_tables(plan)):
            table = self.source.arrow_table(name)
            if isinstance(table, str):
                return f"table {name} is read through Spark ({table})"
            tables[name] = table.rename_columns(column_names(table.num_columns))
        return tables


def few_rows(program: Program) -> bool:
    """Whether the query bounds its answer to a few rows: a small LIMIT, or aggregates without GROUP BY
    (a row per rule), read through rules that only copy or filter them."""
    if program.limit is not None and program.limit <= FEW_ROWS:
        return True
    return bounded(program, program.output, frozenset())


def bounded(program: Program, name: str, seen: frozenset[str]) -> bool:
    """Whether relation `name` holds at most a row per rule deriving it, transitively, for a few rules."""
    rules = program.rules_for(name)
    if not 0 < len(rules) <= FEW_RULES or name in seen:
        return False
    for rule in rules:
        if rule.is_aggregate and all(term.find(exp.AggFunc) for term in rule.terms):
            continue
        atoms = rule.atoms
        copied = len(atoms) == 1 and not atoms[0].filters and atoms[0].relation in program.relations
        if not (copied and bounded(program, atoms[0].relation, seen | {name})):
            return False
    return True


def base_tables(plan: Plan) -> set[str]:
    """The tables (not derived relations, not table functions) the plan's strata read."""
    read = {name for stratum in plan.strata for name in stratum.inputs}
    return read - plan.program.relations.keys()
