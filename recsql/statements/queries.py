"""Queries: SELECT (and VALUES) and EXPLAIN, and the ways other statements run a query: for its rows to
write, its answer, a count, or only its column names."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql.types import StructField, StructType
from sqlglot import exp

from recsql.catalog.catalog import Catalog
from recsql.engine.answer import Answer, StoredAnswer
from recsql.engine.trace import Trace
from recsql.errors import NotSupportedError, ProgrammingError
from recsql.planner.plan import Plan
from recsql.services import Services
from recsql.statements.handler import Result
from recsql.storage.writes import Rows
from translator.dialect import DatalogQuery, Explain
from translator.errors import TranslationError
from translator.translate import translate

QUERY_TYPES = (exp.Query, exp.Values)
IN_PROCESS = "runs without Spark: the whole query in this process (DuckDB over Arrow)"


def select(session: Services, query: exp.Expression, sql: str) -> Result:
    """A query's answer as Arrow; one Spark computed kept on its executors instead when the cursor hands
    answers on as DataFrames (`Services.answers_on_spark`)."""
    return Result.of_answer(answer(session, session.plan(query)))


def answer(session: Services, plan: Plan) -> Answer | StoredAnswer:
    executor = session.executor()
    return executor.keep(plan) if session.answers_on_spark else executor.fetch(plan)


def explain(session: Services, statement: Explain, sql: str) -> Result:
    """EXPLAIN [ANALYZE] query: the plan, where it would run, and with ANALYZE what running it did; a
    DATALOG query's rules as written first."""
    query = statement.this
    if not isinstance(query, QUERY_TYPES):
        raise NotSupportedError("EXPLAIN takes a query (EXPLAIN ANALYZE also INSERT, DELETE, UPDATE, MERGE)")
    written = as_written(query.source) if isinstance(query, DatalogQuery) else []
    lines = written + explained(session, session.plan(query), bool(statement.args.get("analyze")))
    return Result.of(pa.table({"plan": lines}), ["string"])


def as_written(program: str) -> list[str]:
    """A Datalog program's text as the first part of its EXPLAIN."""
    return ["== Rules as written ==", *(line.rstrip() for line in program.strip().splitlines() if line.strip()), ""]


def explained(session: Services, plan: Plan, analyze: bool) -> list[str]:
    """The lines of a plan's EXPLAIN: its passes and strata, where it runs, and with `analyze` what running
    it did."""
    trace = Trace()
    executor = session.executor(trace)
    local = executor.in_process(plan)
    evaluation = f"on Spark: {local}" if isinstance(local, str) else IN_PROCESS
    lines = plan.explain().splitlines() + ["", "== Evaluation ==", evaluation, *executor.widenings(plan)]
    if analyze:
        answer = executor.fetch(plan)
        lines += [""] + trace.report() + [f"answer rows: {answer.table.num_rows}"]
    return lines


def rows_of(session: Services, query: exp.Expression, names: Sequence[str] | None = None) -> tuple[StructType, Rows]:
    """A query's rows to write, with their schema: Arrow when the query runs in this process, else a
    Spark DataFrame (never collected: Spark writes it). `names` renames the query's columns (checked
    before the query runs)."""
    plan = session.plan(query)
    columns = len(plan.program.output_columns)
    if names is not None and len(names) != columns:
        raise ProgrammingError(f"the column list names {len(names)} columns but the query gives {columns}")
    result = session.executor().result(plan)
    if isinstance(result, Answer):
        fields = [StructField(name, data_type) for name, data_type in zip(names or result.names, result.types)]
        return StructType(fields), result.table if names is None else result.table.rename_columns(list(names))
    result = result if names is None else result.toDF(*names)
    return result.schema, result


def answer_of(session: Services, query: exp.Expression) -> Answer:
    return session.executor().fetch(session.plan(query))


def count_of(session: Services, query: exp.Query) -> int:
    """The number a query of one count returns."""
    return answer_of(session, query).table.column(0)[0].as_py()


def relation_columns(catalog: Catalog, name: str) -> tuple[str, ...]:
    """The column names of a table or view (a view's from translating its query, without running it)."""
    view = catalog.view_query(name)
    if view is None:
        return catalog.table_columns(name) or ()
    try:
        return translate(view, catalog).output_columns
    except TranslationError:  # a view whose tables were dropped since: no columns to show
        return ()
