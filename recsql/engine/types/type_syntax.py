"""SQL type names (sqlglot's DataType nodes) as the Spark types Spark's own parser makes of them, in
Python: a column list or a CAST is read without Spark. Names outside this table (intervals, ...) raise
UnknownTypeName; the caller then asks Spark's parser."""

from __future__ import annotations

from pyspark.sql import types as T
from sqlglot import exp

Type = exp.DType  # exp.DataType.Type

SIMPLE: dict[Type, type[T.DataType]] = {
    Type.TINYINT: T.ByteType,
    Type.SMALLINT: T.ShortType,
    Type.INT: T.IntegerType,
    Type.BIGINT: T.LongType,
    Type.FLOAT: T.FloatType,
    Type.DOUBLE: T.DoubleType,
    Type.TEXT: T.StringType,
    Type.BOOLEAN: T.BooleanType,
    Type.DATE: T.DateType,
    Type.TIMESTAMP: T.TimestampType,  # TIMESTAMP is TIMESTAMP_LTZ unless spark.sql.timestampType says otherwise
    Type.TIMESTAMPTZ: T.TimestampType,
    Type.TIMESTAMPLTZ: T.TimestampType,
    Type.TIMESTAMPNTZ: T.TimestampNTZType,
    Type.BINARY: T.BinaryType,
}
DEFAULT_DECIMAL = (10, 0)


class UnknownTypeName(Exception):
    """A type name this module does not translate."""


def spark_type(node: exp.DataType) -> T.DataType:
    """The Spark type a type name stands for."""
    kind = node.this
    parameters = [int(p.this.this) for p in node.expressions if isinstance(p.this, exp.Literal)]
    numbers = len(parameters) == len(node.expressions)  # DECIMAL(p, s), VARCHAR(n); not DECIMAL(x, 2)
    if kind in SIMPLE and not node.expressions:
        return SIMPLE[kind]()
    if kind == Type.DECIMAL and numbers and len(parameters) <= 2:
        precision, scale = (*parameters, *DEFAULT_DECIMAL[len(parameters) :])
        return T.DecimalType(precision, scale)
    if kind in (Type.VARCHAR, Type.CHAR) and numbers and len(parameters) == 1:
        return T.VarcharType(parameters[0]) if kind == Type.VARCHAR else T.CharType(parameters[0])
    if kind == Type.ARRAY and len(node.expressions) == 1:
        return T.ArrayType(spark_type(node.expressions[0]))
    if kind == Type.MAP and len(node.expressions) == 2:
        return T.MapType(spark_type(node.expressions[0]), spark_type(node.expressions[1]))
    if kind == Type.STRUCT and all(isinstance(field, exp.ColumnDef) for field in node.expressions):
        return T.StructType([T.StructField(field.name, spark_type(field.args["kind"])) for field in node.expressions])
    raise UnknownTypeName(node.sql(dialect="spark"))
