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

from recsql.catalog.readers.common import Refused

INTEGER = r"^[+-]?[0-9]+$"
# a number with a fraction or an exponent (`5.` is not one: Spark takes it for decimal(1,0), or not)
NUMBER = r"^[+-]?([0-9]+\.[0-9]+|\.[0-9]+)([eE][+-]?[0-9]+)?$|^[+-]?[0-9]+\.?[eE][+-]?[0-9]+$"
EXPONENT = r"[eE]"
PLAIN_DECIMAL = r"^[+-]?[0-9]+(\.[0-9]+)?$"
SPECIAL_NUMBERS = ("NaN", "Inf", "-Inf", "Infinity", "+Infinity", "-Infinity")  # Spark's and Java's spellings
DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
TIMESTAMP = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?$"
BOOLEAN = r"^(?i:true|false)$"
# what some parser of Spark's may take: a start that numbers, dates and times have (digits, a sign, a
# point, blanks, a non-ASCII character such as another script's digits, a time's T), or a word it knows
PARSEABLE = r"^[\s0-9+\-.]|^[^\x00-\x7f]|^[Tt][0-9]|^(?i:true|false)$|^(NaN|Inf|Infinity)$"
# a local time in a zone is an instant by the zone's rules: Arrow's and Java's agree from 1900 to 2037
# (past 2037 Arrow's time zone files may lack the daylight saving rules Java has)
ZONE_RULE_YEARS = pa.array(range(1900, 2038), pa.int64())
FIXED_ZONES = ("UTC", "Etc/UTC", "GMT", "Z")
INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)
MAX_DIGITS = 38
LONG_DIGITS = 19


def every(mask: pa.ChunkedArray) -> bool:
    return pc.all(mask, min_count=0).as_py() is not False


def some(mask: pa.ChunkedArray) -> bool:
    return pc.any(mask, min_count=0).as_py() is True


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
    if some(pc.invert(matches(present, PARSEABLE))):
        return T.StringType()  # a value no parser takes: the column is text, whatever its other values
    integer, number = matches(present, INTEGER), matches(present, NUMBER)
    special = pc.is_in(present, pa.array(SPECIAL_NUMBERS))
    date, timestamp, boolean = matches(present, DATE), matches(present, TIMESTAMP), matches(present, BOOLEAN)
    numeric = pc.or_(pc.or_(integer, number), special)
    temporal = pc.or_(date, timestamp)
    known = pc.or_(pc.or_(numeric, temporal), boolean)
    if not every(known):
        raise Refused(f"value {first_value(present, pc.invert(known))!r} of column {column}")
    families = [some(family) for family in (numeric, temporal, boolean)]
    if sum(families) > 1:
        return T.StringType()  # Spark finds no common type: text
    if families[2]:
        return T.BooleanType()
    if families[1]:
        try:
            pc.cast(present, pa.timestamp("us"))
        except pa.ArrowInvalid:  # 2020-02-30: Spark takes it for text
            raise Refused(f"an invalid date or time in column {column}") from None
        return T.TimestampType() if some(timestamp) else T.DateType()
    if some(pc.or_(number, special)):
        refuse_integral_exponents(pc.filter(present, number), column)
        return T.DoubleType()
    return integral_type(present, column)


def refuse_integral_exponents(numbers: pa.ChunkedArray, column: str) -> None:
    """Spark reads a number written with an exponent as a decimal when its scale (fraction digits less
    the exponent) is 0, `1.5e1`, and else as a double: the first kind is refused."""
    written = pc.filter(numbers, matches(numbers, EXPONENT))
    if len(written) == 0:
        return
    fraction = pc.utf8_length(pc.replace_substring_regex(written, r"^[^.eE]*\.?([0-9]*)[eE].*$", r"\1"))
    exponent = pc.cast(pc.replace_substring_regex(written, r"^.*[eE]\+?", ""), pa.int64())
    if some(pc.equal(pc.subtract(fraction, exponent), 0)):
        raise Refused(f"a number of column {column} whose exponent leaves no fraction")


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
    if not every(beyond) and some(pc.greater(pc.filter(digits, pc.invert(beyond)), 9)):
        # bigint values beside larger ones: Spark's answer depends on the order of the rows
        raise Refused(f"integers of column {column} both within and past bigint")
    return T.DecimalType(max(most, 10 if not every(beyond) else 1), 0)


def convert(values: pa.ChunkedArray, data_type: T.DataType, column: str, timezone: str) -> pa.ChunkedArray:
    """The texts as values of `data_type`, each parsed as Spark's CSV reader does; Refused when a value
    is not certain to parse (Spark's reader would make it NULL, or read it leniently)."""
    if isinstance(data_type, T.StringType):
        return values
    present = pc.drop_null(values)

    def require(pattern: str, what: str) -> None:
        good = matches(present, pattern)
        if not every(good):
            raise Refused(f"value {first_value(present, pc.invert(good))!r} of column {column} as {what}")

    try:
        if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DecimalType)):
            # a decimal's digits must fit its scale: Arrow refuses to round them (Spark's rounding is its own)
            require(PLAIN_DECIMAL if isinstance(data_type, T.DecimalType) else INTEGER, data_type.simpleString())
            unsigned = pc.replace_substring_regex(values, r"^\+", "")
            return pc.cast(unsigned, arrow_type(data_type))
        if isinstance(data_type, T.DoubleType):
            require(f"{NUMBER}|{INTEGER}|^({'|'.join(SPECIAL_NUMBERS).replace('+', '[+]')})$", "double")
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
            if timezone not in FIXED_ZONES and not every(pc.is_in(pc.year(pc.drop_null(local)), ZONE_RULE_YEARS)):
                raise Refused(f"a time of column {column} past {ZONE_RULE_YEARS[-1]} in zone {timezone}")
            return pc.assume_timezone(local, timezone)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:  # out of range, an invalid date
        raise Refused(f"a value of column {column} as {data_type.simpleString()}: {error}") from None
    raise Refused(f"column {column} of type {data_type.simpleString()}")


def arrow_type(data_type: T.DataType) -> pa.DataType:
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(data_type)
