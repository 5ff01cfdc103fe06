"""Files read in this process give the types and values Spark gives them: hypothesis writes CSV, JSON,
Parquet and ORC files (nulls, quoting, separators, dates, timestamps in several session time zones,
decimals, numbers past int and bigint, mixed columns) and each file recsql's readers take is compared
with Spark's reading of it with the same options, schema and time zone. A file the readers refuse is
read by Spark (checked through the catalog); the typical files users keep must not be refused."""

from __future__ import annotations

import datetime
import decimal
import json
import math
import string
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, currently_in_test_context, event, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from recsql.catalog.readers import Refused, load

ZONES = ("UTC", "America/New_York", "Asia/Kolkata")
PROPERTY = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
TIME_ZONE = "spark.sql.session.timeZone"


@pytest.fixture(scope="module")
def spark(conn):
    return conn.spark_session


def normal(value):
    """A value as both readers' rows compare: instants in UTC, NaN equal to itself, decimals exact."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.UTC).replace(tzinfo=None)
    if isinstance(value, dict):
        return {key: normal(item) for key, item in value.items()}
    return value


def spark_rows(frame, zone: str) -> list[tuple]:
    """Spark's rows, timestamps as UTC instants (Spark gives them as local times of the session zone,
    and its Python conversion uses this process's zone: read them as UTC text instead)."""
    from pyspark.sql import functions as F

    columns = [
        F.date_format(F.to_utc_timestamp(F.col(f"`{f.name}`"), zone), "yyyy-MM-dd HH:mm:ss.SSSSSS").alias(f.name)
        if isinstance(f.dataType, T.TimestampType)
        else F.col(f"`{f.name}`")
        for f in frame.schema.fields
    ]
    rows = []
    for row in frame.select(*columns).collect():
        rows.append(
            tuple(
                datetime.datetime.fromisoformat(value)
                if isinstance(field.dataType, T.TimestampType) and value is not None
                else normal(value)
                for value, field in zip(row, frame.schema.fields)
            )
        )
    return rows


def compare(spark, format: str, path: Path, options: dict[str, str], declared: T.StructType | None, zone: str) -> bool:
    """Read the files both ways and assert they agree; False when recsql's readers refuse them."""
    try:
        direct = load(format, str(path), {key.lower(): value for key, value in options.items()}, declared, zone)
    except Refused as refused:
        if currently_in_test_context():
            event(f"refused: {' '.join(str(refused).split()[:2])}")
        return False
    if currently_in_test_context():
        event("read directly")
    previous = spark.conf.get(TIME_ZONE)
    spark.conf.set(TIME_ZONE, zone)
    try:
        reader = spark.read.options(**options)
        if declared is not None:
            reader = reader.schema(declared)
        frame = reader.format(format).load(str(path))
        expected = spark_rows(frame, zone)
        schema = frame.schema
    finally:
        spark.conf.set(TIME_ZONE, previous)
    assert [(f.name, f.dataType) for f in direct.schema] == [(f.name, f.dataType) for f in schema]
    got = [tuple(normal(value) for value in row.values()) for row in direct.table.to_pylist()]
    assert sorted(map(repr, got)) == sorted(map(repr, expected))
    return True


# ---------------------------------------------------------------- CSV

WORDS = st.text(alphabet=string.ascii_letters + " -_'é", min_size=1, max_size=8).filter(lambda w: w.strip() == w)
FIELD_KINDS = {
    "int": st.integers(-(2**31), 2**31 - 1).map(str),
    "bigint": st.integers(-(2**63), 2**63 - 1).map(str),
    "huge": st.integers(10**19, 10**30).map(str),
    "signed": st.integers(-99, 99).map(lambda n: f"+{n}" if n >= 0 else str(n)),
    "double": st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
    "decimal": st.decimals(-(10**6), 10**6, places=2).map(str),
    "special": st.sampled_from(["NaN", "Inf", "-Inf", "Infinity", "1e5", ".5", "5."]),
    "date": st.dates(datetime.date(1900, 1, 1), datetime.date(2200, 1, 1)).map(str),
    "timestamp": st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2100, 1, 1)).map(
        lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000).isoformat(sep=" ")
    ),
    "bool": st.sampled_from(["true", "false", "TRUE", "False"]),
    "text": WORDS,
    "tricky": st.sampled_from(
        ["a,b", 'say "hi"', " 1", "2020-1-2", "12:30:00", "0x10", "1d", "back\\slash", "two\nlines", "  ", "NA"]
    ),
}


@st.composite
def csv_files(draw):
    width = draw(st.integers(1, 4))
    kinds = [draw(st.sampled_from(sorted(FIELD_KINDS))) for _ in range(width)]
    separator = draw(st.sampled_from([",", ";", "\t", "|"]))
    rows = draw(
        st.lists(
            st.tuples(
                *[st.one_of(st.just(""), FIELD_KINDS[kind], FIELD_KINDS[kind], FIELD_KINDS[kind]) for kind in kinds]
            ),
            min_size=1,
            max_size=12,
        )
    )
    names = draw(st.lists(st.sampled_from(["a", "b", "A", "", "col"]), min_size=width, max_size=width))
    header = draw(st.booleans())
    options = {"header": str(header).lower(), "sep": separator, "inferSchema": draw(st.sampled_from(["true", "false"]))}
    if draw(st.booleans()):
        options["nullValue"] = "NA"
    return kinds, names if header else None, rows, options, draw(st.sampled_from(ZONES))


def csv_text(names: list[str] | None, rows: list[tuple[str, ...]], separator: str) -> str:
    def field(value: str) -> str:
        if any(mark in value for mark in (separator, '"', "\n")) or value != value.strip():
            return '"' + value.replace('"', '""') + '"'
        return value

    lines = [names] if names is not None else []
    return "".join(separator.join(field(value) for value in line) + "\n" for line in lines + [list(r) for r in rows])


@given(case=csv_files())
@example(  # an empty header name: the header is the first record, and Spark infers no type from its equals
    case=(["bigint"], [""], [("0",), ("0",)], {"header": "true", "sep": ",", "inferSchema": "true"}, "UTC")
)
@PROPERTY
def test_csv_files_read_as_spark_reads_them(spark, tmp_path_factory, case):
    _kinds, names, rows, options, zone = case
    path = tmp_path_factory.mktemp("csv") / "data.csv"
    path.write_text(csv_text(names, rows, options["sep"]), encoding="utf-8")
    compare(spark, "csv", path, options, None, zone)


DECLARED = {
    "int": T.IntegerType(),
    "bigint": T.LongType(),
    "double": T.DoubleType(),
    "date": T.DateType(),
    "timestamp": T.TimestampType(),
    "bool": T.BooleanType(),
    "text": T.StringType(),
    "signed": T.IntegerType(),
    "huge": T.DecimalType(31, 0),
    "decimal": T.DecimalType(12, 2),
}


@given(case=csv_files())
@PROPERTY
def test_csv_files_read_under_a_declared_schema_as_spark_reads_them(spark, tmp_path_factory, case):
    kinds, names, rows, options, zone = case
    declared = T.StructType(
        [T.StructField(f"c{i}", DECLARED.get(kind, T.StringType())) for i, kind in enumerate(kinds)]
    )
    path = tmp_path_factory.mktemp("csv") / "data.csv"
    path.write_text(csv_text(names, rows, options["sep"]), encoding="utf-8")
    compare(spark, "csv", path, options, declared, zone)


# ---------------------------------------------------------------- JSON

JSON_VALUES = {
    "int": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(-1e300, 1e300, allow_nan=False),
    "text": st.one_of(WORDS, st.dates().map(str), st.just("2020-01-02T03:04:05")),
    "bool": st.booleans(),
    "list": st.lists(st.integers(0, 9), max_size=2),
    "huge": st.integers(2**63, 2**70),
}


@st.composite
def json_files(draw):
    keys = draw(st.lists(st.sampled_from(["a", "b", "c", "B"]), min_size=1, max_size=3, unique=True))
    kinds = {key: draw(st.lists(st.sampled_from(sorted(JSON_VALUES)), min_size=1, max_size=2)) for key in keys}
    rows = []
    for _ in range(draw(st.integers(1, 10))):
        row = {}
        for key in keys:
            choice = draw(st.sampled_from(["absent", "null", *kinds[key]]))
            if choice != "absent":
                row[key] = None if choice == "null" else draw(JSON_VALUES[choice])
        rows.append(row)
    return rows, draw(st.sampled_from(ZONES))


@given(case=json_files())
@PROPERTY
def test_json_files_read_as_spark_reads_them(spark, tmp_path_factory, case):
    rows, zone = case
    path = tmp_path_factory.mktemp("json") / "data.json"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    compare(spark, "json", path, {}, None, zone)


# ---------------------------------------------------------------- Parquet and ORC

ARROW_COLUMNS = {
    pa.int8(): st.integers(-128, 127),
    pa.int16(): st.integers(-(2**15), 2**15 - 1),
    pa.int32(): st.integers(-(2**31), 2**31 - 1),
    pa.int64(): st.integers(-(2**63), 2**63 - 1),
    pa.uint8(): st.integers(0, 255),
    pa.uint32(): st.integers(0, 2**32 - 1),
    pa.uint64(): st.integers(0, 2**64 - 1),
    pa.float32(): st.floats(width=32, allow_nan=False),
    pa.float64(): st.floats(allow_nan=False),
    pa.string(): WORDS,
    pa.large_string(): WORDS,
    pa.binary(): st.binary(max_size=4),
    pa.bool_(): st.booleans(),
    pa.decimal128(12, 3): st.decimals(-(10**8), 10**8, places=3),
    pa.date32(): st.dates(datetime.date(1900, 1, 1), datetime.date(2200, 1, 1)),
    pa.timestamp("us", tz="UTC"): st.datetimes(datetime.datetime(1970, 1, 1), datetime.datetime(2100, 1, 1)),
    pa.timestamp("ms"): st.datetimes(datetime.datetime(1970, 1, 1), datetime.datetime(2100, 1, 1)).map(
        lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)
    ),
    pa.list_(pa.int32()): st.lists(st.integers(0, 5), max_size=2),
}
ORC_TYPES = [
    t
    for t in ARROW_COLUMNS
    if not pa.types.is_timestamp(t) and t not in (pa.uint8(), pa.uint32(), pa.uint64(), pa.large_string())
]


@st.composite
def arrow_tables(draw, types):
    chosen = draw(st.lists(st.sampled_from(types), min_size=1, max_size=4))
    length = draw(st.integers(0, 8))
    columns = {}
    for i, arrow_type in enumerate(chosen):
        values = draw(st.lists(st.one_of(st.none(), ARROW_COLUMNS[arrow_type]), min_size=length, max_size=length))
        if arrow_type == pa.timestamp("us", tz="UTC"):
            values = [None if v is None else v.replace(tzinfo=datetime.UTC) for v in values]
        columns[f"c{i}"] = pa.array(values, arrow_type)
    return pa.table(columns), draw(st.sampled_from(ZONES))


COLUMNAR = {"parquet": (list(ARROW_COLUMNS), pq.write_table), "orc": (ORC_TYPES, orc.write_table)}


@pytest.mark.parametrize("format", sorted(COLUMNAR))
@given(data=st.data())
@PROPERTY
def test_columnar_files_read_as_spark_reads_them(spark, tmp_path_factory, format, data):
    types, write = COLUMNAR[format]
    table, zone = data.draw(arrow_tables(types))
    path = tmp_path_factory.mktemp(format) / f"data.{format}"
    write(table, path)
    compare(spark, format, path, {}, None, zone)


# ---------------------------------------------------------------- what must be read directly

TYPICAL = {
    "csv": (
        "id,name,price,born,seen,ok\n1,Ann,3.50,2020-01-02,2020-01-02 03:04:05,true\n"
        '2,"Smith, Bob",,1999-12-31,2021-06-30T23:59:59.123,false\n',
        {"header": "true", "inferSchema": "true"},
    ),
    "json": ('{"id": 1, "name": "Ann", "price": 3.5, "ok": true}\n{"id": 2, "name": null, "price": 4}\n', {}),
}


@pytest.mark.parametrize("format", sorted(TYPICAL))
def test_typical_text_files_are_read_in_this_process(spark, tmp_path, format):
    text, options = TYPICAL[format]
    path = tmp_path / f"data.{format}"
    path.write_text(text)
    assert compare(spark, format, path, options, None, "UTC")


def test_typical_columnar_files_are_read_in_this_process(spark, tmp_path):
    table = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "name": ["a", None],
            "day": [datetime.date(2020, 1, 2)] * 2,
            "price": pa.array([decimal.Decimal("1.25"), None], pa.decimal128(15, 2)),
            "at": pa.array([datetime.datetime(2020, 1, 2, 3, 4, 5)] * 2, pa.timestamp("us", tz="UTC")),
        }
    )
    pq.write_table(table, tmp_path / "data.parquet")
    orc.write_table(table.drop_columns(["at"]), tmp_path / "data.orc")
    assert compare(spark, "parquet", tmp_path / "data.parquet", {}, None, "UTC")
    assert compare(spark, "orc", tmp_path / "data.orc", {}, None, "UTC")
