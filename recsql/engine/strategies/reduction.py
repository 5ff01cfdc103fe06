"""The tasks of a one-job strategy (decomposed.py, exchanged.py) reduce their parts of a fixpoint to the
partial rows of the aggregate that reads it (planner/part_aggregate.py): the facts never leave the
tasks; Spark combines the partial rows, a few per task or per group, into the aggregate relation.

On the 600,000-fact closure of a DAG on a cluster, reading the facts back to count them was a Spark job
of its own that cost about as much as the fixpoint's. Whether the column types allow the reduction is
decided here, where they are known: a sum is reduced over integers and over floating point numbers, not
over decimals, whose partial sums Spark would type wider than their sum.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    NumericType,
    StructField,
    StructType,
)

from recsql.engine.local.database import ArithmeticLimit, Database
from recsql.engine.spark.context import StratumRun
from recsql.engine.spark.engine import SPARK
from recsql.engine.sql.part_aggregates import (
    final_query,
    group_name,
    partial_name,
    partial_query,
)
from recsql.engine.sql.printing import Dialect, Printer
from recsql.engine.sql.rules import table
from recsql.errors import DataError
from recsql.planner.part_aggregate import PartAggregate
from recsql.settings import Settings
from recsql.spark.session_kinds import arrow_frame

FACTS = "facts"  # what the partial query calls a task's facts
PARTIALS = "partials"  # what the combining query calls the partial rows


@dataclass(frozen=True)
class PartialAggregates:
    """What a task runs over its facts in place of returning them: DuckDB's `sql` over table FACTS, its
    result cast to `schema`. Pickled to the Python workers."""

    sql: str
    schema: pa.Schema
    timezone: str
    sums: tuple[str, ...]  # the columns that sum integers, as the user named them

    def __call__(self, facts: pa.Table) -> pa.Table:
        database = Database(self.timezone, threads=1)
        try:
            return database.cast_columns(database.query(self.sql, **{FACTS: facts}), self.schema)
        except ArithmeticLimit:  # a partial sum past BIGINT under ANSI mode (without it, it wraps around)
            raise DataError(
                f"overflow: {' or '.join(self.sums)} is past the range of BIGINT; "
                "with spark.sql.ansi.enabled = false a sum wraps around instead"
            ) from None
        finally:
            database.close()


@dataclass(frozen=True)
class Reduction:
    """An aggregate a stratum's tasks compute in parts, with the partial rows' columns."""

    aggregate: PartAggregate
    schema: StructType  # of the partial rows: group columns g0 .., partials p0 ..
    integer_sums: tuple[bool, ...]  # per partial: whether it is a sum of integers
    settled: tuple[DataType, ...]  # the recursive relation's column types in the tasks

    def task(self, timezone: str, ansi: bool, columns: Sequence[str]) -> PartialAggregates:
        """What each task runs; `columns`: the aggregate relation's, as the user named them."""
        query = partial_query(self.aggregate, table(FACTS), self.integer_sums, ansi)
        sql = Printer(Dialect.DUCKDB, ansi).sql(query)
        calls = [position for position, term in enumerate(self.aggregate.terms) if term in self.aggregate.partials]
        sums = tuple(columns[position] for position, integers in zip(calls, self.integer_sums) if integers)
        return PartialAggregates(sql, to_arrow_schema(self.schema, timezone=timezone), timezone, sums)

    def brought_here(self, settings: Settings) -> bool:
        """Whether the partial rows come to this process (few, as estimated), not into a checkpoint."""
        return self.aggregate.rows <= settings.local_rows

    def combined(self, run: StratumRun, partial: DataFrame | pa.Table, types: Sequence[DataType]) -> DataFrame:
        """The aggregate relation's frame from the partial rows; `types`: the recursive relation's, as
        its facts would have been typed (in the iteration the fixpoint ended with). Partial rows brought
        here are combined here, with the types Spark's plan of the combination gives (analysed, not run),
        where the values need no cast but between numbers."""
        casts = {column: wanted for column, (wanted, held) in enumerate(zip(types, self.settled)) if wanted != held}
        if not isinstance(partial, pa.Table):
            return self.on_spark(run, partial, casts)
        schema = self.on_spark(run, arrow_frame(run.spark, self.schema_table(), self.schema), casts).schema
        if all(isinstance(data_type, NumericType) for data_type in casts.values()):
            settings = run.spark_settings
            database = Database(settings.timezone)
            try:
                query = final_query(self.aggregate, table(PARTIALS), casts)
                result = database.query(Printer(Dialect.DUCKDB, settings.ansi).sql(query), **{PARTIALS: partial})
                combined = database.cast_columns(result, to_arrow_schema(schema, timezone=settings.timezone))
                return arrow_frame(run.spark, combined, schema)
            except DataError:  # a sum past BIGINT: Spark's arithmetic says what it is (wrapped, or an error)
                pass
            finally:
                database.close()
        return self.on_spark(run, arrow_frame(run.spark, partial, self.schema), casts)

    def schema_table(self) -> pa.Table:
        return to_arrow_schema(self.schema).empty_table()

    def on_spark(self, run: StratumRun, partial: DataFrame, casts: Mapping[int, DataType]) -> DataFrame:
        view = run.views.show(f"partial_{self.aggregate.relation}", partial)
        return run.views.sql(SPARK.sql(final_query(self.aggregate, table(view), casts)))


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
    integer_sums = []
    for position, call in enumerate(aggregate.partials):
        if call.function == "count":
            data_type: DataType = LongType()
        elif call.column is None or not isinstance(settled[call.column], AtomicType):
            return None
        elif call.function != "sum":
            data_type = settled[call.column]
        elif all(isinstance(types[call.column], IntegralType) for types in (first, settled)):
            data_type = LongType()
        elif all(
            isinstance(types[call.column], FractionalType) and not isinstance(types[call.column], DecimalType)
            for types in (first, settled)
        ):
            data_type = DoubleType()  # as Spark sums them
        else:
            return None
        integer_sums.append(call.function == "sum" and isinstance(data_type, LongType))
        fields.append(StructField(partial_name(position), data_type))
    return Reduction(aggregate, StructType(fields), tuple(integer_sums), tuple(settled))
