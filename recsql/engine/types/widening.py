"""Spark's widening of column types: the numeric ranks, decimal bounds and the wider of two types that its
unions and CASE / COALESCE branches take (`wider`), the common ground of the type derivation of rules
(spark_types.py) and of the merges of recursive relations (result_types.py)."""

from __future__ import annotations

from pyspark.sql import types as T

from recsql.engine.types.errors import NotInferred

Row = tuple[T.DataType, ...]  # the types of a relation's columns

MAX_PRECISION = 38
INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
FRACTIONAL = (T.FloatType, T.DoubleType)
INTEGRAL_DIGITS: dict[type[T.DataType], int] = {T.ByteType: 3, T.ShortType: 5, T.IntegerType: 10, T.LongType: 20}


def numeric_rank(data_type: T.DataType) -> int | None:
    kinds = (*INTEGRAL, *FRACTIONAL)
    return next((i for i, kind in enumerate(kinds) if isinstance(data_type, kind)), None)


def as_decimal(data_type: T.DataType) -> T.DecimalType | None:
    """An integral type as the decimal that holds all its values (Spark's DecimalType.forType)."""
    if isinstance(data_type, T.DecimalType):
        return data_type
    digits = INTEGRAL_DIGITS.get(type(data_type))
    return T.DecimalType(digits, 0) if digits else None


def bounded(precision: int, scale: int) -> T.DecimalType:
    return T.DecimalType(min(precision, MAX_PRECISION), min(scale, MAX_PRECISION))


def bounded_keeping_integral_digits(precision: int, scale: int) -> T.DecimalType:
    """A decimal past the maximum precision loses fractional digits, never integral ones (Spark 4's
    boundedPreferIntegralDigits, used when widening)."""
    excess = max(precision - MAX_PRECISION, 0)
    return T.DecimalType(precision - excess, max(scale - excess, 0))


def wider(left: T.DataType, right: T.DataType) -> T.DataType:
    """The type a union (or CASE, COALESCE) of the two gives."""
    if left == right or isinstance(right, T.NullType):
        return left
    if isinstance(left, T.NullType):
        return right
    if isinstance(left, T.DecimalType) or isinstance(right, T.DecimalType):
        if isinstance(left, FRACTIONAL) or isinstance(right, FRACTIONAL):
            return T.DoubleType()
        a, b = as_decimal(left), as_decimal(right)
        if a is None or b is None:
            raise NotInferred(f"no common type of {left.simpleString()} and {right.simpleString()}")
        scale = max(a.scale, b.scale)
        return bounded_keeping_integral_digits(max(a.precision - a.scale, b.precision - b.scale) + scale, scale)
    if isinstance(left, T.FloatType) != isinstance(right, T.FloatType):
        # float with an integral: float under Spark's legacy rules, double under ANSI; avoided
        if isinstance(left, T.DoubleType) or isinstance(right, T.DoubleType):
            return T.DoubleType()
        raise NotInferred(f"no common type of {left.simpleString()} and {right.simpleString()}")
    left_rank, right_rank = numeric_rank(left), numeric_rank(right)
    if left_rank is not None and right_rank is not None:
        return left if left_rank > right_rank else right
    if {type(left), type(right)} == {T.DateType, T.TimestampType}:
        return T.TimestampType()
    raise NotInferred(f"no common type of {left.simpleString()} and {right.simpleString()}")


def wider_row(left: Row, right: Row) -> Row:
    return tuple(wider(a, b) for a, b in zip(left, right))


def nulls(width: int) -> Row:
    """The types of an empty relation with untyped columns."""
    return (T.NullType(),) * width


SIGNIFICANT_BITS: dict[type[T.DataType], int] = {T.FloatType: 24, T.DoubleType: 53}
INTEGRAL_BITS: dict[type[T.DataType], int] = {T.ByteType: 8, T.ShortType: 16, T.IntegerType: 32, T.LongType: 64}


def changes_values(source: T.DataType, target: T.DataType) -> bool:
    """Whether widening values of `source` to `target` may change some: an integer past the significant
    bits of a floating point type, a decimal fraction as a binary one, a decimal losing fractional
    digits to keep its integral ones."""
    if source == target or isinstance(source, T.NullType):
        return False
    bits = SIGNIFICANT_BITS.get(type(target))
    if bits is not None:
        if isinstance(source, T.FloatType):
            return False
        return INTEGRAL_BITS.get(type(source), bits + 2) - 1 > bits  # (signed: one bit is the sign)
    if isinstance(target, T.DecimalType):
        held = as_decimal(source)
        if held is None:
            return True
        return target.scale < held.scale or target.precision - target.scale < held.precision - held.scale
    return False
