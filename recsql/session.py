"""A session executes statements: it parses each one, runs it inside the statement's scopes (its
cancellation, the catalog's snapshots, its errors as PEP 249 errors) and hands it to the statement's
handler (`recsql.statements`). It holds what handlers share: the catalog, the settings, Spark, and the
pipeline of a query (translate → analyse → optimize → plan; execute)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from sqlglot import exp

from recsql import analysis
from recsql.cancellation import Cancellation
from recsql.catalog.catalog import Catalog
from recsql.engine.executor import Executor
from recsql.engine.progress import Progress, ProgressListener, StatementProgress
from recsql.engine.scratch import Scratch
from recsql.engine.trace import Trace
from recsql.errors import NotSupportedError, ProgrammingError, internal_errors
from recsql.optimizer import optimize
from recsql.optimizer.join_search import CostModel
from recsql.parameters import bind
from recsql.planner import plan as planner
from recsql.settings import Settings
from recsql.spark.errors import spark_errors
from recsql.spark.lazy import LazySpark
from recsql.statements import datalog
from recsql.statements.dispatch import handler_for
from recsql.statements.handler import Result
from recsql.statements.writes import insert_rows, one_row_of_parameters
from recsql.views import upkeep
from translator import dialect
from translator.datalog import syntax as datalog_syntax
from translator.errors import TranslationError, UnsupportedError
from translator.ir import Program
from translator.translate import translate


class Session:
    def __init__(self, spark: LazySpark, catalog: Catalog, settings: Settings):
        self.lazy_spark = spark
        self.catalog = catalog
        self.settings = settings
        self.base_dir = Path.cwd()
        self.progress: ProgressListener | None = None
        self.cancellation = Cancellation()
        spark.on_use = self.cancellation.attach  # a statement's Spark jobs carry its tag, from its first use
        # files a statement's evaluation writes for itself: on this machine, or where every executor sees them
        self.scratch = Scratch(shared=catalog.warehouse / "scratch")
        self.maintenance: list | None = None  # EXPLAIN ANALYZE of a write: what maintaining views did
        self.answers_on_spark = False  # see execute's `on_spark`

    @property
    def spark(self) -> SparkSession:
        """The Spark session (started now if it is not yet)."""
        return self.lazy_spark.session()

    # -------------------------------------------------------------- entry points

    def execute(self, sql: str, params: Sequence[Any] | None = None, on_spark: bool = False) -> Result:
        """The result of a statement. `on_spark`: an answer Spark computes stays on its executors
        (checkpointed there, for a DataFrame), else it is collected into this process at once."""
        with internal_errors(sql):
            statement = bind(parse_single(sql), params)
            with self.statement_scope(sql, statement, on_spark):
                if isinstance(statement, READS_VIEWS):
                    upkeep.read_views(self, statement)
                return handler_for(statement)(self, statement, sql)

    def execute_datalog(self, text: str, on_spark: bool = False) -> list[tuple[str, Result]]:
        """A Datalog program: a result per `.output`, with its relation's name (statements/datalog.py)."""
        with internal_errors(text):
            with translation_errors():
                syntax = datalog_syntax.parse(text)
            with self.statement_scope(text, None, on_spark):
                return datalog.run_program(self, syntax, text)

    @contextlib.contextmanager
    def statement_scope(self, sql: str, statement: exp.Expression | None, on_spark: bool) -> Iterator[None]:
        """What every statement runs inside: its progress display, its cancellation, the catalog's
        snapshots, its scratch files, its errors as PEP 249 errors, where its answer goes."""
        self.answers_on_spark = on_spark
        try:
            with (
                self.statement_progress(),
                self.cancellation.statement(sql),
                self.catalog.statement(),
                self.scratch.statement(),
                translation_errors(),
                spark_errors(changed_table(statement) if statement is not None else "", statement),
            ):
                yield
        finally:
            self.answers_on_spark = False

    def execute_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> Result:
        """A statement once per row of parameters; INSERT INTO t VALUES (?, ...) as one insert of all."""
        with internal_errors(sql):
            statement = parse_single(sql)
            if one_row_of_parameters(statement):
                with self.catalog.statement(), spark_errors():
                    return insert_rows(self, statement, [tuple(row) for row in rows], sql)
        total = 0
        for row in rows:
            total += max(self.execute(sql, row).rowcount, 0)
        return Result(rowcount=total)

    @contextlib.contextmanager
    def statement_progress(self) -> Iterator[None]:
        """A progress listener that closes its display is told when the statement ends, and how."""
        listener = self.progress
        if not isinstance(listener, StatementProgress):
            yield
            return
        try:
            yield
        except BaseException as error:
            listener.finished(error)
            raise
        listener.finished(None)

    # -------------------------------------------------------------- services of the handlers

    def report(self, event: Progress) -> None:
        """An iteration of a recursive evaluation: where a cancelled statement stops between Spark jobs,
        and an event for the progress listener."""
        self.cancellation.check()
        if self.progress is not None:
            self.progress(event)

    def executor(self, trace: Trace | None = None) -> Executor:
        """The one place executors are made: every statement's queries run through it."""
        return Executor(self.lazy_spark, self.catalog, self.settings, self.scratch, self.report, trace)

    def record_maintenance(self, trace: object | None) -> None:
        if trace is not None and self.maintenance is not None:
            self.maintenance.append(trace)

    def plan(self, query: exp.Expression) -> planner.Plan:
        program = translate(query, self.catalog)
        analysis.stratify(program)  # errors name the query's own relations, before any rewriting
        return self.plan_program(program)

    def plan_program(self, program: Program, settings: Settings | None = None) -> planner.Plan:
        """The plan of `program` under the session's settings, or under `settings`."""
        settings = settings or self.settings
        optimized = optimize(program, self.catalog, settings, self.cost_model())
        components = analysis.stratify(optimized.program)
        return planner.plan(optimized, components, settings)

    def cost_model(self) -> CostModel:
        partitions = int(self.lazy_spark.get_setting("spark.sql.shuffle.partitions") or 4)
        return CostModel(parallelism=partitions, task_slots=self.lazy_spark.task_slots)


# ------------------------------------------------------------------ helpers


READS_VIEWS = (exp.Query, exp.Values, exp.Insert, exp.Delete, exp.Update, exp.Merge, dialect.Explain)
CHANGES = {
    exp.Insert: "INSERT INTO",
    exp.Delete: "DELETE FROM",
    exp.Update: "UPDATE",
    exp.Merge: "MERGE INTO",
    exp.Create: "CREATE TABLE",
}


def changed_table(statement: exp.Expression) -> str:
    """`INSERT INTO t`, for a statement that changes table t (errors say where they happened); else ''."""
    verb = CHANGES.get(type(statement))
    target = statement.this.this if isinstance(statement.this, exp.Schema) else statement.this
    if verb is None or not isinstance(target, exp.Table):
        return ""
    return f"{verb} {'.'.join(part.name.lower() for part in target.parts)}"


def parse_single(sql: str) -> exp.Expression:
    with translation_errors():
        statements = dialect.parse(sql)
    if len(statements) != 1:
        raise ProgrammingError(f"execute() takes one SQL statement, got {len(statements)}")
    return statements[0]


@contextlib.contextmanager
def translation_errors() -> Iterator[None]:
    """Translator errors as PEP 249 errors, with their position; analysis errors likewise."""
    try:
        yield
    except UnsupportedError as error:
        raise NotSupportedError(error.message, error.line, error.column) from None
    except TranslationError as error:
        raise ProgrammingError(error.message, error.line, error.column) from None
    except analysis.UnsupportedProgram as error:
        raise NotSupportedError(str(error)) from None
    except analysis.AnalysisError as error:
        raise ProgrammingError(str(error)) from None


__all__ = ["Session"]
