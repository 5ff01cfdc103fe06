"""Arrow tables made DataFrames (session_kinds.arrow_frame): every row arrives, whatever the table's
record batches are. A table concatenated from the parts of a computation (kept facts and fresh ones,
some parts empty) has empty batches among nonempty ones, after which Spark's own conversion stops."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from recsql.spark.session_kinds import arrow_frame


def concatenated(sizes: list[int]) -> pa.Table:
    """A table of one record batch per size (rows numbered through them all), with a nested column."""
    parts, start = [], 0
    for size in sizes:
        numbers = list(range(start, start + size))
        parts.append(
            pa.table(
                {
                    "n": pa.array(numbers, pa.int32()),
                    "path": pa.array([[number, number + 1] for number in numbers], pa.list_(pa.int64())),
                }
            )
        )
        start += size
    return pa.concat_tables(parts)


@pytest.mark.spark
@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(0, 3), min_size=1, max_size=6))
def test_every_row_of_a_table_of_any_batches_arrives(conn, sizes):
    table = concatenated(sizes)
    frame = arrow_frame(conn.session.spark, table)
    assert sorted(tuple(row) for row in frame.collect()) == sorted(
        zip(table["n"].to_pylist(), table["path"].to_pylist())
    )


@pytest.mark.spark
def test_a_given_schema_is_the_frames_and_an_empty_table_keeps_its_columns(conn):
    schema = T.StructType([T.StructField("n", T.LongType()), T.StructField("path", T.ArrayType(T.LongType()))])
    spark = conn.session.spark
    frame = arrow_frame(spark, concatenated([2, 0, 1]), schema)
    assert frame.schema == schema
    assert sorted(row.n for row in frame.collect()) == [0, 1, 2]
    empty = arrow_frame(spark, concatenated([0, 0]), schema)
    assert empty.schema == schema and empty.count() == 0
    assert arrow_frame(spark, concatenated([0])).columns == ["n", "path"]
