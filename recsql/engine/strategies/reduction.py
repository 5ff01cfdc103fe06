"""The tasks of a one-job strategy (decomposed.py, exchanged.py) reduce their parts of a fixpoint to the
partial rows of the aggregate that reads it (planner/part_aggregate.py): the facts never leave the
tasks; Spark combines the partial rows, a few per task or per group, into the aggregate relation.

On the 600,000-fact closure of a DAG on a cluster, reading the facts back to count them was a Spark job
of its own that cost about as much as the fixpoint's. Whether the column types allow the reduction is
decided here, where they are known: a sum is reduced over integers (exact partial sums) and over
floating point numbers, not over decimals, whose partial sums Spark would type wider than their sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    AtomicType,
    DataType,
    DecimalType,
    DoubleType,
    FractionalType,
    IntegralType,
    LongType,
    StructField,
    StructType,
)

from recsql.engine.local.database import Database
from recsql.engine.spark.context import StratumRun
from recsql.engine.spark.engine import SPARK
from recsql.engine.sql.part_aggregates import (
    EXACT_SUM,
    final_query,
    group_name,
    partial_name,
    partial_query,
)
from recsql.engine.sql.printing import Dialect, Printer
from recsql.engine.sql.rules import table
from recsql.planner.part_aggregate import PartAggregate

FACTS = "facts"  # what the partial query calls a task's facts


@dataclass(frozen=True)
class PartialAggregates:
    """What a task runs over its facts in place of returning them: DuckDB's `sql` over table FACTS, its
    result cast to `schema`. Pickled to the Python workers."""

    sql: str
    schema: pa.Schema
    timezone: str

    def __call__(self, facts: pa.Table) -> pa.Table:
        database = Database(self.timezone, threads=1)
        try:
            return database.cast_columns(database.query(self.sql, **{FACTS: facts}), self.schema)
        finally:
            database.close()


@dataclass(frozen=True)
class Reduction:
    """An aggregate a stratum's tasks compute in parts, with the partial rows' columns."""

    aggregate: PartAggregate
    schema: StructType  # of the partial rows: group columns g0 .., partials p0 ..
    exact_sums: tuple[bool, ...]  # per partial: a sum of integers, partially summed as DECIMAL(38, 0)

    def task(self, timezone: str, ansi: bool) -> PartialAggregates:
        sql = Printer(Dialect.DUCKDB, ansi).sql(partial_query(self.aggregate, table(FACTS), self.exact_sums))
        return PartialAggregates(sql, to_arrow_schema(self.schema, timezone=timezone), timezone)

    def combined(self, run: StratumRun, partial: DataFrame, types: Sequence[DataType]) -> DataFrame:
        """The aggregate relation's frame from the partial rows; `types`: the recursive relation's, as
        its facts would have been typed (in the iteration the fixpoint ended with)."""
        view = run.views.show(f"partial_{self.aggregate.relation}", partial)
        return run.views.sql(SPARK.sql(final_query(self.aggregate, table(view), self.exact_sums, types)))


def reduction(
    aggregate: PartAggregate | None, first: Sequence[DataType], settled: Sequence[DataType]
) -> Reduction | None:
    """The reduction of `aggregate` given the recursive relation's column types in its exit facts and
    once settled (they may widen between), or None where the types do not allow it."""
    if aggregate is None:
        return None
    fields = []
    for position, column in enumerate(aggregate.groups):
        if not isinstance(settled[column], AtomicType):
            return None
        fields.append(StructField(group_name(position), settled[column]))
    exact_sums = []
    for position, call in enumerate(aggregate.partials):
        if call.function == "count":
            data_type: DataType = LongType()
        elif call.column is None or not isinstance(settled[call.column], AtomicType):
            return None
        elif call.function != "sum":
            data_type = settled[call.column]
        elif all(isinstance(types[call.column], IntegralType) for types in (first, settled)):
            data_type = EXACT_SUM
        elif all(
            isinstance(types[call.column], FractionalType) and not isinstance(types[call.column], DecimalType)
            for types in (first, settled)
        ):
            data_type = DoubleType()  # as Spark sums them
        else:
            return None
        exact_sums.append(call.function == "sum" and data_type == EXACT_SUM)
        fields.append(StructField(partial_name(position), data_type))
    return Reduction(aggregate, StructType(fields), tuple(exact_sums))
