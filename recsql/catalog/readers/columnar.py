"""Parquet and ORC files as Spark reads them: each column's type as Spark maps the file's type (unsigned
integers widened, 8- and 16-bit integers as tinyint / smallint, a timestamp adjusted to UTC as
TIMESTAMP and one that is not as TIMESTAMP_NTZ), the files of a directory all of one schema (Spark
reads one file's schema unless told to merge them).

Refused, for Spark to read: nested columns, nanosecond and INT96 timestamps, ORC timestamps (whose
meaning depends on the writer's time zone), half floats and other types Spark maps otherwise; a declared
schema other than the files'.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
from pyspark.sql import types as T

from recsql.catalog.readers.common import Refused, refuse_options

SIMPLE = {
    pa.bool_(): T.BooleanType(),
    pa.int8(): T.ByteType(),
    pa.int16(): T.ShortType(),
    pa.int32(): T.IntegerType(),
    pa.int64(): T.LongType(),
    pa.uint8(): T.ShortType(),
    pa.uint16(): T.IntegerType(),
    pa.uint32(): T.LongType(),
    pa.uint64(): T.DecimalType(20, 0),
    pa.float32(): T.FloatType(),
    pa.float64(): T.DoubleType(),
    pa.string(): T.StringType(),
    pa.large_string(): T.StringType(),
    pa.string_view(): T.StringType(),
    pa.binary(): T.BinaryType(),
    pa.large_binary(): T.BinaryType(),
    pa.binary_view(): T.BinaryType(),
    pa.date32(): T.DateType(),
}


def spark_type(arrow: pa.DataType, name: str, timestamps: bool) -> T.DataType:
    """The Spark type of a column Arrow reads as `arrow` (`timestamps`: whether the format's timestamps
    are read by this module)."""
    if pa.types.is_dictionary(arrow):
        arrow = arrow.value_type
    if arrow in SIMPLE:
        return SIMPLE[arrow]
    if pa.types.is_fixed_size_binary(arrow):
        return T.BinaryType()
    if pa.types.is_decimal128(arrow) and arrow.precision <= 38:
        return T.DecimalType(arrow.precision, arrow.scale)
    if timestamps and pa.types.is_timestamp(arrow) and arrow.unit in ("ms", "us"):
        return T.TimestampType() if arrow.tz else T.TimestampNTZType()
    raise Refused(f"column {name} of type {arrow}")


def load_parquet(
    files: list[Path], options: dict[str, str], declared: T.StructType | None, timezone: str
) -> tuple[T.StructType, pa.Table]:
    refuse_options(options, set(), "Parquet")
    schemas = []
    for file in files:
        metadata = pq.ParquetFile(file).schema
        if any(metadata.column(i).physical_type == "INT96" for i in range(len(metadata))):
            raise Refused(f"{file.name}: INT96 timestamps")
        arrow = metadata.to_arrow_schema()
        schemas.append(struct_of(arrow, timestamps=True))
    schema = one_schema(schemas, declared)
    table = pa.concat_tables([plain(pq.read_table(file)) for file in files]) if files else None
    return schema, table if table is not None else pa.table({})


def load_orc(
    files: list[Path], options: dict[str, str], declared: T.StructType | None, timezone: str
) -> tuple[T.StructType, pa.Table]:
    refuse_options(options, set(), "ORC")
    parts = [orc.ORCFile(file).read() for file in files]
    schema = one_schema([struct_of(part.schema, timestamps=False) for part in parts], declared)
    return schema, pa.concat_tables([plain(part) for part in parts])


def struct_of(arrow: pa.Schema, timestamps: bool) -> T.StructType:
    lower = [name.lower() for name in arrow.names]
    if len(set(lower)) != len(lower):
        raise Refused("column names that differ only in case")
    return T.StructType([T.StructField(f.name, spark_type(f.type, f.name, timestamps)) for f in arrow])


def one_schema(schemas: list[T.StructType], declared: T.StructType | None) -> T.StructType:
    if not schemas:
        raise Refused("no files")
    if any(schema != schemas[0] for schema in schemas):
        raise Refused("files of different schemas")
    if declared is not None and [(f.name, f.dataType) for f in declared] != [(f.name, f.dataType) for f in schemas[0]]:
        raise Refused("a declared schema other than the files'")
    return schemas[0]


def plain(table: pa.Table) -> pa.Table:
    """Dictionary-encoded columns as their values (the catalog casts the rest to Spark's types)."""
    columns = [
        column.cast(column.type.value_type) if pa.types.is_dictionary(column.type) else column
        for column in table.columns
    ]
    return pa.table(columns, names=table.column_names)
