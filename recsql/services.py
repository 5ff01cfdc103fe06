"""Where statement handlers and materialized views meet the session that runs them: the services they may
use, as a Protocol the session satisfies. Its types are imported for type checking only, so that importing
this module loads neither Spark nor the catalog, and neither handlers nor views import the session."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from sqlglot import exp

    from recsql.catalog.catalog import Catalog
    from recsql.engine.executor import Executor
    from recsql.engine.trace import Trace
    from recsql.planner.plan import Plan
    from recsql.settings import Settings
    from recsql.spark.lazy import LazySpark
    from translator.ir import Program


class Services(Protocol):
    """What a handler or a view's maintenance may use of the session running it."""

    spark: SparkSession  # started when first used
    lazy_spark: LazySpark  # Spark's settings and state without starting it
    catalog: Catalog
    settings: Settings
    base_dir: Path  # relative paths of external tables are resolved against it
    maintenance: list | None  # under EXPLAIN ANALYZE of a write: what maintaining views did
    answers_on_spark: bool  # while a statement runs: its answer, if Spark computes it, stays on the executors

    def plan(self, query: exp.Expression) -> Plan:
        """The plan of a query (translated, analysed, optimized)."""

    def executor(self, trace: Trace | None = None) -> Executor:
        """An executor of plans for one statement (recording its work in `trace`, if given)."""

    def plan_program(self, program: Program, settings: Settings | None = None) -> Plan:
        """The plan of a program built by recsql itself (the maintenance of a materialized view)."""

    def record_maintenance(self, trace: object | None) -> None:
        """What maintaining a materialized view did, for EXPLAIN ANALYZE of the statement."""
