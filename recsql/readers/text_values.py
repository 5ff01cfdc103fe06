"""Text values (a CSV file's fields) as Spark reads them: the type Spark's schema inference gives a column,
and the typed values of a column of a known type, computed over whole Arrow columns.

Spark's parsers are lenient in ways Arrow's are not (`" 1"` is a double, `"2020-1-2"` and `"12:30"`
are timestamps, `"1d"` is a double). Each value is therefore put in a class whose meaning is certain
(an integer, a plain decimal or exponent number, NaN / Inf / Infinity, an ISO date, an ISO timestamp
without a zone, true / false, or text no parser of Spark's accepts) and a value of no class refuses
the file, unless its column holds text anyway (then every value is text).
"""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

from recsql.readers import Refused

INTEGER = r"^[+-]?[0-9]+$"
NUMBER = r"^[+-]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$|^[+-]?[0-9]+[eE][+-]?[0-9]+$"
SPECIAL_NUMBERS = ("NaN", "Inf", "-Inf", "Infinity", "+Infinity", "-Infinity")  # Spark's and Java's spellings
DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
TIMESTAMP = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?$"
BOOLEAN = r"^(?i:true|false)$"
# what some parser of Spark's may take: a start that numbers, dates and times have (digits, a sign, a
# point, blanks, a non-ASCII character such as another script's digits, a time's T), or a word it knows
PARSEABLE = r"^[\s0-9+\-.]|^[^\x00-\x7f]|^[Tt][0-9]|^(?i:true|false)$|^(NaN|Inf|Infinity)$"
INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)
MAX_DIGITS = 38
LONG_DIGITS = 19


def matches(values: pa.ChunkedArray, pattern: str) -> pa.ChunkedArray:
    return pc.match_substring_regex(values, pattern)


def first_value(values: pa.ChunkedArray, mask: pa.ChunkedArray) -> str:
    return pc.filter(values, mask)[0].as_py()


def infer_type(values: pa.ChunkedArray, column: str) -> T.DataType:
    """The type Spark's CSV schema inference gives a column of these texts (nulls: fields equal to the
    null value); Refused when a value's class is not certain."""
    present = pc.drop_null(values)
    if len(present) == 0:
        return T.StringType()
    if pc.any(pc.invert(matches(present, PARSEABLE))).as_py():
        return T.StringType()  # a value no parser takes: the column is text, whatever its other values
    integer, number = matches(present, INTEGER), matches(present, NUMBER)
    special = pc.is_in(present, pa.array(SPECIAL_NUMBERS))
    date, timestamp, boolean = matches(present, DATE), matches(present, TIMESTAMP), matches(present, BOOLEAN)
    numeric = pc.or_(pc.or_(integer, number), special)
    temporal = pc.or_(date, timestamp)
    known = pc.or_(pc.or_(numeric, temporal), boolean)
    if not pc.all(known).as_py():
        raise Refused(f"value {first_value(present, pc.invert(known))!r} of column {column}")
    families = [pc.any(family).as_py() for family in (numeric, temporal, boolean)]
    if sum(families) > 1:
        return T.StringType()  # Spark finds no common type: text
    if families[2]:
        return T.BooleanType()
    if families[1]:
        try:
            pc.cast(present, pa.timestamp("us"))
        except pa.ArrowInvalid:  # 2020-02-30: Spark takes it for text
            raise Refused(f"an invalid date or time in column {column}") from None
        return T.TimestampType() if pc.any(timestamp).as_py() else T.DateType()
    if pc.any(pc.or_(number, special)).as_py():
        return T.DoubleType()
    return integral_type(present, column)


def integral_type(present: pa.ChunkedArray, column: str) -> T.DataType:
    """int, bigint, or decimal(digits, 0) past bigint (double past 38 digits), as Spark infers integers."""
    digits = pc.utf8_length(pc.replace_substring_regex(present, r"^[+-]?0*", ""))
    most = pc.max(digits).as_py()
    if most > MAX_DIGITS:
        return T.DoubleType()
    wide = pc.cast(present, pa.decimal128(MAX_DIGITS, 0)) if most else None
    low, high = (Decimal(0), Decimal(0)) if wide is None else (pc.min(wide).as_py(), pc.max(wide).as_py())
    if INT_RANGE[0] <= low and high <= INT_RANGE[1]:
        return T.IntegerType()
    if LONG_RANGE[0] <= low and high <= LONG_RANGE[1]:
        return T.LongType()
    beyond = pc.or_(pc.less(wide, Decimal(LONG_RANGE[0])), pc.greater(wide, Decimal(LONG_RANGE[1])))
    if not pc.all(beyond).as_py() and pc.any(pc.greater(pc.filter(digits, pc.invert(beyond)), 9)).as_py():
        # bigint values beside larger ones: Spark's answer depends on the order of the rows
        raise Refused(f"integers of column {column} both within and past bigint")
    return T.DecimalType(max(most, 10 if not pc.all(beyond).as_py() else 1), 0)


def convert(values: pa.ChunkedArray, data_type: T.DataType, column: str, timezone: str) -> pa.ChunkedArray:
    """The texts as values of `data_type`, each parsed as Spark's CSV reader does; Refused when a value
    is not certain to parse (Spark's reader would make it NULL, or read it leniently)."""
    if isinstance(data_type, T.StringType):
        return values
    present = pc.drop_null(values)

    def require(pattern: str, what: str) -> None:
        good = matches(present, pattern)
        if not pc.all(good).as_py():
            raise Refused(f"value {first_value(present, pc.invert(good))!r} of column {column} as {what}")

    try:
        if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DecimalType)) and \
                (not isinstance(data_type, T.DecimalType) or data_type.scale == 0):
            require(INTEGER, data_type.simpleString())
            unsigned = pc.replace_substring_regex(values, r"^\+", "")
            return pc.cast(unsigned, arrow_type(data_type))
        if isinstance(data_type, T.DoubleType):
            if not pc.all(pc.or_(matches(present, NUMBER), pc.or_(matches(present, INTEGER),
                                                                  pc.is_in(present, pa.array(SPECIAL_NUMBERS))))).as_py():
                raise Refused(f"a value of column {column} as double")
            return pc.cast(values, pa.float64())
        if isinstance(data_type, T.BooleanType):
            require(BOOLEAN, "boolean")
            return pc.equal(pc.utf8_lower(values), "true")
        if isinstance(data_type, T.DateType):
            require(DATE, "date")
            return pc.cast(values, pa.date32())
        if isinstance(data_type, T.TimestampType):
            require(f"{TIMESTAMP}|{DATE}", "timestamp")
            local = pc.cast(pc.replace_substring_regex(values, "T", " "), pa.timestamp("us"))
            return pc.assume_timezone(local, timezone)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:  # out of range, an invalid date
        raise Refused(f"a value of column {column} as {data_type.simpleString()}: {error}") from None
    raise Refused(f"column {column} of type {data_type.simpleString()}")


def arrow_type(data_type: T.DataType) -> pa.DataType:
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(data_type)
