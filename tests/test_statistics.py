"""Table statistics: gathered once per data version, cached in the catalog, refreshed on change, and
equal to what DuckDB counts on the same data."""

from __future__ import annotations

import json

import duckdb
import pyarrow as pa


def exact(rows: list[tuple]) -> tuple[int, list[int], list[float]]:
    """Row count, distinct values and null fraction per column, counted by DuckDB."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t (a INTEGER, b VARCHAR, c DOUBLE)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    count, *rest = con.execute(
        "SELECT count(*), count(DISTINCT a), count(DISTINCT b), count(DISTINCT c), "
        "avg(CASE WHEN a IS NULL THEN 1 ELSE 0 END), avg(CASE WHEN b IS NULL THEN 1 ELSE 0 END), "
        "avg(CASE WHEN c IS NULL THEN 1 ELSE 0 END) FROM t"
    ).fetchone()
    return count, list(rest[:3]), [float(x) for x in rest[3:]]


ROWS = [(i % 37, None if i % 5 == 0 else f"s{i % 11}", i * 0.5 if i % 7 else None) for i in range(400)]


def test_analyze_table_matches_duckdb_and_is_cached(conn, cur):
    cur.execute("DROP TABLE IF EXISTS st_t")
    cur.execute("CREATE TABLE st_t (a INT, b STRING, c DOUBLE)")
    cur.executemany("INSERT INTO st_t VALUES (?, ?, ?)", ROWS)
    cur.execute("ANALYZE TABLE st_t COMPUTE STATISTICS")
    assert [d[0] for d in cur.description] == ["column", "rows", "distinct"]
    result = cur.fetchall()
    count, distinct, nulls = exact(ROWS)
    assert result == [("st_t.a", count, distinct[0]), ("st_t.b", count, distinct[1]), ("st_t.c", count, distinct[2])]
    catalog = conn.session.catalog
    gathered = catalog.table_statistics("st_t")
    assert [round(c.null_fraction, 6) for c in gathered.columns] == [round(x, 6) for x in nulls]
    assert gathered.columns[0].minimum == 0 and gathered.columns[0].maximum == 36
    assert gathered.columns[1].minimum is None  # strings have no numeric range
    assert catalog.cached_statistics("st_t") == gathered  # kept in the warehouse for this version of the table
    assert json.loads(catalog.statistics_file("st_t").read_text())["version"] == catalog.file_version("st_t")


def test_statistics_are_refreshed_when_the_data_changes(conn, cur):
    cur.execute("DROP TABLE IF EXISTS st_u")
    cur.execute("CREATE TABLE st_u (a INT, b STRING, c DOUBLE)")
    cur.executemany("INSERT INTO st_u VALUES (?, ?, ?)", ROWS[:100])
    catalog = conn.session.catalog
    assert catalog.table_statistics("st_u").rows == 100
    cur.executemany("INSERT INTO st_u VALUES (?, ?, ?)", ROWS[100:])
    refreshed = catalog.table_statistics("st_u")
    count, distinct, _ = exact(ROWS)
    assert refreshed.rows == count
    assert [c.distinct for c in refreshed.columns] == distinct


def test_a_small_insert_or_delete_carries_the_statistics_a_large_change_gathers_them_again(conn, cur):
    """A tenth of the rows or fewer added or deleted: the version the statement makes has the statistics
    of the one before, its rows counted again; more: they are gathered again when next used."""
    cur.execute("DROP TABLE IF EXISTS st_v")
    cur.execute("CREATE TABLE st_v (a INT, b STRING, c DOUBLE)")
    cur.executemany("INSERT INTO st_v VALUES (?, ?, ?)", ROWS)
    catalog = conn.session.catalog
    gathered = catalog.table_statistics("st_v")
    cur.execute("INSERT INTO st_v VALUES " + ", ".join(f"({i}, 'n{i}', {i}.5)" for i in range(1000, 1010)))
    carried = catalog.cached_statistics("st_v")
    assert carried is not None and carried.rows == 410 and carried.columns == gathered.columns
    cur.execute("DELETE FROM st_v WHERE a >= 1000 OR a = 1")
    carried = catalog.cached_statistics("st_v")
    assert carried is not None and carried.rows == 400 - 11 and carried.columns == gathered.columns
    cur.execute("INSERT INTO st_v SELECT a + 100, b, c FROM st_v WHERE a < 20")
    assert catalog.cached_statistics("st_v") is None
    cur.execute("SELECT * FROM st_v")
    count, distinct, _ = exact(cur.fetchall())
    regathered = catalog.table_statistics("st_v")
    assert regathered.rows == count and [c.distinct for c in regathered.columns] == distinct


def test_external_and_registered_tables_have_statistics(conn, cur, tmp_path):
    path = tmp_path / "st.csv"
    path.write_text("k,v\n" + "".join(f"{i % 50},{i}\n" for i in range(1000)))
    cur.execute("DROP TABLE IF EXISTS st_csv")
    cur.execute(f"CREATE TABLE st_csv (k INT, v INT) USING csv OPTIONS (path '{path}', header 'true')")
    gathered = conn.session.catalog.table_statistics("st_csv")  # one Spark job, approximate distinct counts
    assert gathered.rows == 1000
    assert abs(gathered.columns[0].distinct - 50) <= 2
    assert abs(gathered.columns[1].distinct - 1000) <= 50
    conn.register("st_arrow", pa.table({"x": [1, 2, 2, None]}))
    registered = conn.session.catalog.table_statistics("st_arrow")
    assert (registered.rows, registered.columns[0].distinct, registered.columns[0].null_fraction) == (4, 2, 0.25)


def test_large_arrow_tables_get_approximate_statistics(monkeypatch):
    """Past the exact bound, one DuckDB query with approximate distinct counts: within a few percent of
    the exact ones, the same row count, null fractions and numeric range."""
    from recsql import statistics

    rows = [(i % 997, None if i % 5 == 0 else f"s{i % 301}", i * 0.5 if i % 7 else None) for i in range(20_000)]
    table = pa.table({"a": [r[0] for r in rows], "b": [r[1] for r in rows], "c": [r[2] for r in rows]})
    exact = statistics.from_arrow(table)
    monkeypatch.setattr(statistics, "EXACT_BYTES", 0)
    approximate = statistics.from_arrow(table)
    assert approximate.rows == exact.rows == 20_000
    for close, right in zip(approximate.columns, exact.columns):
        assert abs(close.distinct - right.distinct) <= 0.05 * right.distinct
        assert (close.null_fraction, close.minimum, close.maximum) == (
            right.null_fraction,
            right.minimum,
            right.maximum,
        )
