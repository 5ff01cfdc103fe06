"""Warehouses of the earlier layout (a directory of Parquet files per managed table, no log) are upgraded
when opened; managed tables are Delta Lake tables that other Delta readers read."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import TEST_CONF
from deltalake import DeltaTable

import recsql


def format_1_warehouse(root):
    """A warehouse as the earlier recsql wrote it: catalog/<name>.json and data/<name>-<id>/*.parquet."""
    data = root / "data" / "old-0123456789ab"
    data.mkdir(parents=True)
    (root / "catalog").mkdir()
    pq.write_table(pa.table({"a": pa.array([1, 2], pa.int32()), "b": ["x", "y"]}), data / "part-1.parquet")
    pq.write_table(pa.table({"a": pa.array([3], pa.int32()), "b": [None]}), data / "part-2.parquet")
    schema = {
        "type": "struct",
        "fields": [
            {"name": "a", "type": "integer", "nullable": True, "metadata": {}},
            {"name": "b", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    entry = {
        "name": "old",
        "kind": "table",
        "schema": schema,
        "path": str(data),
        "format": "parquet",
        "options": {},
        "sql": None,
        "statistics": None,
        "inferred_from": None,
    }
    (root / "catalog" / "old.json").write_text(json.dumps(entry))
    view = {
        "name": "old_view",
        "kind": "view",
        "schema": None,
        "path": None,
        "format": "parquet",
        "options": {},
        "sql": "CREATE VIEW old_view AS SELECT a FROM old WHERE a > 1",
        "statistics": None,
        "inferred_from": None,
    }
    (root / "catalog" / "old_view.json").write_text(json.dumps(view))


@pytest.mark.spark
def test_a_format_1_warehouse_is_upgraded_on_open(conn, tmp_path):
    format_1_warehouse(tmp_path)
    with pytest.warns(recsql.WarehouseUpgraded, match="upgraded to format 2: the tables old are now Delta Lake tables"):
        upgraded = recsql.connect(master="local[2]", conf=TEST_CONF, warehouse=str(tmp_path))
    cur = upgraded.cursor()
    cur.execute("SELECT a, b FROM old ORDER BY a")
    assert cur.fetchall() == [(1, "x"), (2, "y"), (3, None)]
    cur.execute("SELECT a FROM old_view ORDER BY a")
    assert cur.fetchall() == [(2,), (3,)]
    cur.execute("INSERT INTO old VALUES (4, 'z')")
    cur.execute("SELECT count(*) FROM old VERSION AS OF 0")
    assert cur.fetchall() == [(3,)]
    cur.execute("SELECT count(*) FROM old")
    assert cur.fetchall() == [(4,)]
    # opened again: nothing left to upgrade, nothing said
    again = recsql.connect(master="local[2]", conf=TEST_CONF, warehouse=str(tmp_path))
    again.cursor().execute("SELECT count(*) FROM old")


@pytest.mark.spark
def test_a_warehouse_of_a_newer_format_is_refused(conn, tmp_path):
    (tmp_path / "format.json").write_text(json.dumps({"format": 99}))
    with pytest.raises(recsql.OperationalError, match="format 99, written by a newer recsql"):
        recsql.connect(master="local[2]", conf=TEST_CONF, warehouse=str(tmp_path))


def test_a_managed_table_is_a_delta_table(conn, cur, warehouse):
    cur.execute("DROP TABLE IF EXISTS wf_delta")
    cur.execute("CREATE TABLE wf_delta (a BIGINT, b STRING)")
    cur.executemany("INSERT INTO wf_delta VALUES (?, ?)", [(i, str(i)) for i in range(10)])
    cur.execute("DELETE FROM wf_delta WHERE a < 3")
    cur.execute("INSERT INTO wf_delta SELECT id, cast(id AS STRING) FROM range(100, 105)")
    entry = conn.session.catalog.entry("wf_delta")
    table = DeltaTable(str(warehouse / entry.path))  # an independent Delta reader
    assert table.version() == 3
    rows = sorted(table.to_pyarrow_table().to_pylist(), key=lambda row: row["a"])
    assert rows == [{"a": i, "b": str(i)} for i in [*range(3, 10), *range(100, 105)]]
