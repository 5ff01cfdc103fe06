"""Python values (a VALUES list of constants, or the parameters of `executemany`) as Arrow columns of a
table, so that inserting them needs no Spark job."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import DataType, StructField
from sqlglot import exp

from recsql.errors import DataError, ProgrammingError


def literal_row(row: exp.Expression) -> tuple | None:
    """A VALUES row as Python values, or None when it holds more than constants."""
    cells = row.expressions if isinstance(row, exp.Tuple) else [row]
    values = []
    for cell in cells:
        negative = isinstance(cell, exp.Neg)
        inner = cell.this if negative else cell
        if isinstance(inner, exp.Cast) and isinstance(inner.this, exp.Literal) and inner.this.is_string:
            values.append(inner.this.name)
        elif isinstance(inner, (exp.Literal, exp.Null, exp.Boolean)):
            value = inner.to_py()
            values.append(-value if negative else value)
        else:
            return None
    return tuple(values)


def arrow_columns(name: str, rows: list[tuple], fields: list[StructField]) -> list[pa.Array]:
    """Rows of Python values as the Arrow columns `fields` of table `name`; a row of another width, or a
    value that does not fit its column, is an error naming them."""
    if set(map(len, rows)) - {len(fields)}:
        number, row = next((n, row) for n, row in enumerate(rows, start=1) if len(row) != len(fields))
        raise ProgrammingError(f"row {number} has {len(row)} values but table '{name}' has {len(fields)} columns")
    columns = []
    for values, spark_field in zip(zip(*rows) if rows else [()] * len(fields), fields):
        try:
            columns.append(column_of(values, spark_field.dataType))
        except (DataError, pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as error:
            raise DataError(f"column '{spark_field.name}' of '{name}': {error}") from None
    return columns


def arrow_type_of(data_type: DataType) -> pa.DataType:
    """The Arrow type of a column's values as a table takes them (a timestamp without a time zone: the
    session's is applied when it is stored)."""
    arrow_type = to_arrow_type(data_type, timezone="UTC")
    return pa.timestamp(arrow_type.unit) if pa.types.is_timestamp(arrow_type) else arrow_type


def column_of(values: Sequence[Any], data_type: DataType) -> pa.Array:
    """Python values as an Arrow column for a column of `data_type`: converted by Arrow when they are
    already of the column's kind (a timestamp without a time zone, to be read in the session's), one by
    one through `coerce` otherwise (a date given as text, a number for a string column)."""
    arrow_type = arrow_type_of(data_type)
    try:
        return pa.array(values, type=arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return pa.array([coerce(value, data_type) for value in values])


def coerce(value: Any, data_type: DataType) -> Any:
    """A Python value in the form Arrow wants for a column of `data_type`."""
    if value is None:
        return None
    kind = data_type.typeName()
    try:
        if kind in ("integer", "long", "short", "byte"):
            return int(value)
        if kind in ("double", "float"):
            return float(value)
        if kind == "decimal":
            return decimal.Decimal(str(value))
        if kind == "string":
            return str(value)
        if kind == "boolean":
            return value if isinstance(value, bool) else str(value).lower() in ("true", "1", "t")
        if kind == "date" and isinstance(value, str):
            return datetime.date.fromisoformat(value)
        if kind == "timestamp" and isinstance(value, str):
            return datetime.datetime.fromisoformat(value)
    except (TypeError, ValueError, decimal.InvalidOperation):
        raise DataError(f"value {value!r} does not fit a {data_type.simpleString()} column") from None
    return value
