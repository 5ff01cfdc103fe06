"""What every statement handler shares: the result it returns, and the services of the session that
runs it (a Protocol, so that handlers need not import the session)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

import pyarrow as pa
from pyspark.sql import SparkSession
from sqlglot import exp

from recsql.catalog import Catalog
from recsql.engine.executor import Executor
from recsql.engine.trace import Trace
from recsql.lazy_spark import LazySpark
from recsql.planner import Plan
from recsql.settings import Settings
from translator.ir import Program


@dataclass
class Result:
    """What a statement returns: rows (Arrow) with their column names and Spark types, or a row count."""

    names: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    table: pa.Table | None = None
    rowcount: int = -1

    @classmethod
    def of(cls, data: pa.Table, types: list[str]) -> "Result":
        """The rows of a table the statement built itself (its columns named as the result's)."""
        return cls(data.column_names, types, data, data.num_rows)


class Services(Protocol):
    """What a handler may use of the session running it."""

    spark: SparkSession  # started when first used
    lazy_spark: LazySpark  # Spark's settings and state without starting it
    catalog: Catalog
    settings: Settings
    base_dir: Path  # relative paths of external tables are resolved against it
    maintenance: list | None  # under EXPLAIN ANALYZE of a write: what maintaining views did

    def plan(self, query: exp.Expression) -> Plan:
        """The plan of a query (translated, analysed, optimized)."""

    def executor(self, trace: Trace | None = None) -> Executor:
        """An executor of plans for one statement (recording its work in `trace`, if given)."""

    def plan_program(self, program: Program, settings: Settings | None = None) -> Plan:
        """The plan of a program built by recsql itself (the maintenance of a materialized view)."""

    def record_maintenance(self, trace: object | None) -> None:
        """What maintaining a materialized view did, for EXPLAIN ANALYZE of the statement."""


# (session, statement, its SQL text) → result; the statement is of the node class its line of the
# dispatch table names
Handler = Callable[[Services, Any, str], Result]
