"""Table statistics for the optimizer: row count and, per column, distinct count, min/max and null fraction.

Gathered once per table version (the catalog caches them beside the table's metadata): from Arrow when
the table's files are small enough to read in one process (exact counts for a small table, DuckDB's
approximate distinct counts for a larger one: a tenth of the time), otherwise with one Spark
aggregation job (approximate distinct counts).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class ColumnStatistics:
    distinct: int
    null_fraction: float = 0.0
    minimum: float | None = None  # numeric columns only: range selectivity
    maximum: float | None = None


@dataclass(frozen=True)
class TableStatistics:
    rows: int
    columns: tuple[ColumnStatistics, ...]
    version: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "version": self.version, "columns": [asdict(c) for c in self.columns]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TableStatistics:
        return cls(data["rows"], tuple(ColumnStatistics(**c) for c in data["columns"]), data.get("version", ""))


def numeric(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


EXACT_BYTES = 64 << 20  # Arrow tables up to this size get exact distinct counts


def from_arrow(table: pa.Table, version: str = "") -> TableStatistics:
    """Statistics of an Arrow table (no Spark job): exact up to EXACT_BYTES, approximate past it."""
    if table.nbytes > EXACT_BYTES:
        return approximate(table, version)
    rows = table.num_rows
    columns = []
    for column in table.columns:
        nulls = column.null_count
        if pa.types.is_nested(column.type):  # no distinct count of arrays, structs or maps: all taken as distinct
            distinct = rows - nulls
        else:
            distinct = pc.count_distinct(column, mode="only_valid").as_py() if rows else 0
        low = high = None
        if pa.types.is_integer(column.type) or pa.types.is_floating(column.type) or pa.types.is_decimal(column.type):
            extremes = pc.min_max(column)
            low, high = numeric(extremes["min"].as_py()), numeric(extremes["max"].as_py())
        columns.append(ColumnStatistics(distinct, nulls / rows if rows else 0.0, low, high))
    return TableStatistics(rows, tuple(columns), version)


def approximate(table: pa.Table, version: str = "") -> TableStatistics:
    """Statistics of a large Arrow table in one DuckDB query (HyperLogLog distinct counts, as Spark's)."""
    import duckdb

    numeric_columns = [
        pa.types.is_integer(f.type) or pa.types.is_floating(f.type) or pa.types.is_decimal(f.type) for f in table.schema
    ]
    names = [f"c{i}" for i in range(table.num_columns)]
    aggregates = ["count(*)"]
    for name, is_numeric in zip(names, numeric_columns):
        aggregates += [f"approx_count_distinct({name})", f"count({name})"]
        aggregates += (
            [f"CAST(min({name}) AS DOUBLE)", f"CAST(max({name}) AS DOUBLE)"] if is_numeric else ["NULL", "NULL"]
        )
    with duckdb.connect() as connection:
        connection.register("facts", table.rename_columns(names))
        row = connection.execute(f"SELECT {', '.join(aggregates)} FROM facts").fetchone()
    rows, rest = row[0], row[1:]
    columns = tuple(
        ColumnStatistics(
            min(rest[4 * i], rest[4 * i + 1]),
            (rows - rest[4 * i + 1]) / rows if rows else 0.0,
            numeric(rest[4 * i + 2]),
            numeric(rest[4 * i + 3]),
        )
        for i in range(len(names))
    )
    return TableStatistics(rows, columns, version)


def from_spark(frame: DataFrame, version: str = "") -> TableStatistics:
    """Statistics of a Spark DataFrame in one aggregation job (approximate distinct counts)."""
    from pyspark.sql import functions as F  # the optimizer reads statistics without Spark

    aggregates = [F.count(F.lit(1)).alias("rows")]
    numeric_types = ("byte", "short", "integer", "long", "float", "double", "decimal")
    for i, field in enumerate(frame.schema.fields):
        column = F.col(f"`{field.name}`")
        aggregates += [F.approx_count_distinct(column).alias(f"d{i}"), F.count(column).alias(f"n{i}")]
        if field.dataType.typeName() in numeric_types:
            aggregates += [F.min(column).cast("double").alias(f"lo{i}"), F.max(column).cast("double").alias(f"hi{i}")]
    row = frame.agg(*aggregates).collect()[0].asDict()
    rows = row["rows"]
    columns = tuple(
        ColumnStatistics(
            min(row[f"d{i}"], row[f"n{i}"]),
            (rows - row[f"n{i}"]) / rows if rows else 0.0,
            numeric(row.get(f"lo{i}")),
            numeric(row.get(f"hi{i}")),
        )
        for i in range(len(frame.columns))
    )
    return TableStatistics(rows, columns, version)
