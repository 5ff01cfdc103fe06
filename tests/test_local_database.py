"""The local evaluator's DuckDB connection: casting Arrow tables to a relation's types."""

import contextlib

import pyarrow as pa

from recsql.engine.local.database import Database

TYPES = pa.schema([("c0", pa.int32()), ("c1", pa.float64())])


def test_cast_columns_casts_as_sql_and_keeps_no_rows_of_an_empty_table_for_the_next():
    with contextlib.closing(Database("UTC")) as db:
        empty = pa.table({"c0": pa.array([], pa.int64()), "c1": pa.array([], pa.int64())})
        first, again = db.cast_columns(empty, TYPES), db.cast_columns(empty, TYPES)
        assert first.num_rows == again.num_rows == 0 and first.schema == again.schema
        assert [field.type for field in first.schema] == [pa.int32(), pa.float64()]
        full = pa.table({"c0": pa.array([1, 2], pa.int64()), "c1": pa.array([3, None], pa.int64())})
        cast = db.cast_columns(full, TYPES)  # the same types as the empty table: its own rows, cast
        assert cast.to_pylist() == [{"c0": 1, "c1": 3.0}, {"c0": 2, "c1": None}]
        assert cast.schema == first.schema
