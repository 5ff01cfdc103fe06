"""JSON Lines files as Spark reads them: one object per line, columns sorted by name, integers as bigint,
other numbers as double, strings as text (no dates inferred), booleans, and text for a column of nulls.

Refused, for Spark to read: nested objects and arrays, a column mixing kinds of value (Spark keeps their
JSON text), integers past bigint, NaN and infinities, names that differ only in case, a line that is
not one object (Spark's corrupt records), and what Arrow's parser does not take (comments, single
quotes, leading zeros, all of which Spark accepts or marks corrupt). A declared schema is read when its
columns are text, boolean, integral or double.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
from pyspark.sql import types as T

from recsql.catalog.readers.common import Refused, read_bytes, refuse_options
from recsql.catalog.readers.text_values import every

OPTIONS = {"encoding", "charset"}
SPARK_TYPES = {
    pa.bool_(): T.BooleanType(),
    pa.int64(): T.LongType(),
    pa.float64(): T.DoubleType(),
    pa.string(): T.StringType(),
    pa.null(): T.StringType(),
}
DECLARED = (T.StringType, T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DoubleType)
LONG_LIMIT = 2.0**63


def load(
    files: list[Path], options: dict[str, str], declared: T.StructType | None, timezone: str
) -> tuple[T.StructType, pa.Table]:
    refuse_options(options, OPTIONS, "JSON")
    if options.get("encoding", options.get("charset", "utf-8")).lower().replace("-", "") != "utf8":
        raise Refused("an encoding other than UTF-8")
    parts = [parse(file) for file in files]
    try:
        table = pa.concat_tables(parts, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise Refused("files whose columns differ in kind") from None
    if declared is not None:
        return declared, declared_columns(table, declared)
    names = sorted(table.column_names)
    if not names:
        raise Refused("no columns")
    schema = T.StructType([T.StructField(name, spark_type(table.column(name), name)) for name in names])
    columns = [
        table.column(name).cast(pa.string()) if table.column(name).type == pa.null() else table.column(name)
        for name in names
    ]
    return schema, pa.table(columns, names=names)


def parse(file: Path) -> pa.Table:
    data = read_bytes(file)
    lines = len(re.findall(rb"(?m)^[ \t\r]*\S", data))
    if lines == 0:
        return pa.table({})
    try:
        table = pj.read_json(pa.BufferReader(data))
        dated = [field.name for field in table.schema if pa.types.is_timestamp(field.type)]
        if dated:  # text Arrow took for times: Spark keeps it as text
            schema = pa.schema([pa.field(f.name, pa.string() if f.name in dated else f.type) for f in table.schema])
            table = pj.read_json(pa.BufferReader(data), parse_options=pj.ParseOptions(explicit_schema=schema))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise Refused(f"{file.name}: {str(error).splitlines()[0]}") from None
    if table.num_rows != lines:
        raise Refused(f"{file.name}: a line that is not one object")
    lower = [name.lower() for name in table.column_names]
    if len(set(lower)) != len(lower):
        raise Refused(f"{file.name}: names that differ only in case")
    return table


def spark_type(column: pa.ChunkedArray, name: str) -> T.DataType:
    if column.type not in SPARK_TYPES:
        raise Refused(f"column {name} of kind {column.type}")
    if column.type == pa.float64() and len(column):
        finite = pc.is_finite(column)
        if not every(pc.or_(finite, pc.is_null(column))):
            raise Refused(f"NaN or an infinity in column {name}")
        if pc.max(pc.abs(column)).as_py() >= LONG_LIMIT:  # an integer past bigint is Spark's decimal
            raise Refused(f"a number past bigint in column {name}")
    return SPARK_TYPES[column.type]


def declared_columns(table: pa.Table, declared: T.StructType) -> pa.Table:
    """The declared columns (absent ones null), each read only from values of its own kind."""
    from recsql.catalog.readers.text_values import arrow_type

    by_name = {name.lower(): name for name in table.column_names}  # Spark matches names ignoring case
    columns = []
    for field in declared.fields:
        target = arrow_type(field.dataType)
        if not isinstance(field.dataType, DECLARED):
            raise Refused(f"column {field.name} declared {field.dataType.simpleString()}")
        found = by_name.get(field.name.lower())
        column = table.column(found) if found is not None else pa.chunked_array([], pa.null())
        numbers = pa.types.is_integer(column.type) or pa.types.is_floating(column.type)
        kind_fits = (
            column.type == pa.null()
            or column.type == target
            or (
                numbers
                and (pa.types.is_integer(target) or pa.types.is_floating(target))
                and not (pa.types.is_floating(column.type) and pa.types.is_integer(target))
            )
        )
        if not kind_fits:
            raise Refused(f"column {field.name} holds {column.type}, declared {field.dataType.simpleString()}")
        try:
            cast = column.cast(target) if len(column) else pa.chunked_array([pa.nulls(table.num_rows, target)])
        except pa.ArrowInvalid:
            raise Refused(f"a value of column {field.name} past {field.dataType.simpleString()}") from None
        columns.append(cast)
    return pa.table(columns, names=declared.fieldNames())
