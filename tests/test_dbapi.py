"""The DB-API 2.0 surface, the catalog (tables, files, views, persistence) and settings."""

from __future__ import annotations

import datetime
import socket
import threading
import time

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import recsql
from recsql.spark import preflight


def test_module_globals():
    assert recsql.apilevel == "2.0" and recsql.paramstyle == "qmark"


def test_create_insert_query_and_description(cur):
    cur.execute("DROP TABLE IF EXISTS db_people")
    cur.execute("CREATE TABLE db_people (id INT, name STRING, born DATE, score DOUBLE)")
    assert cur.description is None
    cur.execute(
        "INSERT INTO db_people VALUES (1, 'ada', DATE '1815-12-10', 9.5), (2, 'alan', '1912-06-23', -1), "
        "(3, NULL, NULL, NULL)"
    )
    assert cur.rowcount == 3
    cur.execute("SELECT id, name, born, score FROM db_people WHERE id <= ? ORDER BY id", (2,))
    assert [d[0] for d in cur.description] == ["id", "name", "born", "score"]
    assert [d[1] for d in cur.description] == ["int", "string", "date", "double"]
    assert cur.rowcount == 2
    assert cur.fetchone() == (1, "ada", datetime.date(1815, 12, 10), 9.5)
    assert cur.fetchall() == [(2, "alan", datetime.date(1912, 6, 23), -1.0)]
    assert cur.fetchone() is None


def test_fetchmany_and_arraysize(cur):
    cur.execute("SELECT id FROM range(10) ORDER BY id")
    assert cur.fetchmany(3) == [(0,), (1,), (2,)]
    cur.arraysize = 4
    assert cur.fetchmany() == [(3,), (4,), (5,), (6,)]
    assert cur.fetchall() == [(7,), (8,), (9,)]
    assert cur.fetchmany() == []


def test_executemany_batches_rows(cur):
    cur.execute("DROP TABLE IF EXISTS db_edges")
    cur.execute("CREATE TABLE db_edges (src BIGINT, dst BIGINT)")
    rows = [(i, (i * 7) % 1000) for i in range(1000)]
    cur.executemany("INSERT INTO db_edges VALUES (?, ?)", rows)
    assert cur.rowcount == 1000
    cur.execute("SELECT count(*), sum(src), sum(dst) FROM db_edges")
    assert cur.fetchall() == [(1000, sum(r[0] for r in rows), sum(r[1] for r in rows))]


def test_parameters_bind_in_text_order_and_never_as_text(cur):
    cur.execute(
        "WITH RECURSIVE r(n) AS (SELECT ? UNION ALL SELECT n + ? FROM r WHERE n < ?) SELECT n FROM r WHERE "
        "n > ? ORDER BY n",
        (1, 2, 9, 4),
    )
    assert cur.fetchall() == [(5,), (7,), (9,)]
    cur.execute("SELECT ? AS s", ("x'; DROP TABLE db_people; --",))
    assert cur.fetchall() == [("x'; DROP TABLE db_people; --",)]


@pytest.mark.spark
def test_register_pandas_arrow_and_spark(conn, cur):
    conn.register("db_pd", pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}))
    conn.register("db_pa", pa.table({"a": [2, 3]}))
    conn.register("db_sp", conn.spark_session.createDataFrame([(3, "z")], "a INT, c STRING"))
    cur.execute("SELECT db_pd.a, b, c FROM db_pd, db_pa, db_sp WHERE db_pd.a + 1 = db_sp.a AND db_pa.a = db_pd.a")
    assert cur.fetchall() == [(2, "y", "z")]


@pytest.mark.spark
def test_register_arrow_string_views(conn, cur):
    """Newer Parquet readers give string and binary view columns; they register as strings and binaries."""
    conn.register(
        "db_views",
        pa.table(
            {
                "k": pa.array(["a", "b", None], pa.string_view()),
                "v": pa.array([b"x", b"y", b"z"], pa.binary_view()),
            }
        ),
    )
    cur.execute("SELECT k, length(v) FROM db_views WHERE k IS NOT NULL ORDER BY k")
    assert cur.fetchall() == [("a", 1), ("b", 1)]
    assert [column[1] for column in cur.description] == ["string", "int"]


def test_create_table_as_select_and_csv_and_parquet(conn, cur, tmp_path):
    csv = tmp_path / "edges.csv"
    csv.write_text("src,dst\n1,2\n2,3\n")
    pq.write_table(pa.table({"src": [3], "dst": [4]}), tmp_path / "more.parquet")
    for name in ("db_csv", "db_csv_typed", "db_parquet", "db_all"):
        cur.execute(f"DROP TABLE IF EXISTS {name}")
    cur.execute(f"CREATE TABLE db_csv USING csv OPTIONS (path '{csv}', header 'true')")
    cur.execute(f"CREATE TABLE db_csv_typed (s INT, d INT) USING csv OPTIONS (path '{csv}', header 'true')")
    conn.base_dir = tmp_path
    cur.execute("CREATE TABLE db_parquet USING parquet OPTIONS (path 'more.parquet')")
    cur.execute("CREATE TABLE db_all AS SELECT src, dst FROM db_csv UNION ALL SELECT src, dst FROM db_parquet")
    cur.execute("SELECT src, dst FROM db_all ORDER BY src")
    assert cur.fetchall() == [(1, 2), (2, 3), (3, 4)]
    cur.execute("SELECT s + d FROM db_csv_typed ORDER BY s")
    assert cur.fetchall() == [(3,), (5,)]


def test_recursive_view(cur):
    cur.execute("DROP VIEW IF EXISTS db_reach")
    cur.execute("DROP TABLE IF EXISTS db_g")
    cur.execute("CREATE TABLE db_g (src INT, dst INT)")
    cur.executemany("INSERT INTO db_g VALUES (?, ?)", [(1, 2), (2, 3), (3, 1), (5, 6)])
    cur.execute(
        "CREATE VIEW db_reach AS WITH RECURSIVE r(a, b) AS (SELECT src, dst FROM db_g UNION "
        "SELECT r.a, db_g.dst FROM r JOIN db_g ON r.b = db_g.src) SELECT a, b FROM r"
    )
    cur.execute("SELECT b FROM db_reach WHERE a = 1 ORDER BY b")
    assert cur.fetchall() == [(1,), (2,), (3,)]
    cur.execute("DROP VIEW db_reach")
    with pytest.raises(recsql.ProgrammingError):
        cur.execute("SELECT * FROM db_reach")


@pytest.mark.spark
@pytest.mark.parametrize("given_as", [str, lambda path: path.as_uri()], ids=["path", "file URI"])
def test_tables_persist_in_the_warehouse(conn, cur, warehouse, given_as):
    cur.execute("DROP TABLE IF EXISTS db_kept")
    cur.execute("CREATE TABLE db_kept (k INT)")
    cur.execute("INSERT INTO db_kept VALUES (42)")
    other = recsql.connect(warehouse=given_as(warehouse))  # a second connection reads the same warehouse files
    try:
        other_cursor = other.cursor()
        other_cursor.execute("SELECT k FROM db_kept")
        assert other_cursor.fetchall() == [(42,)]
    finally:
        other.close()


def test_a_warehouse_off_this_machine_is_refused_before_spark_starts():
    with pytest.raises(recsql.NotSupportedError, match="s3a://bucket/warehouse is not on this machine's file"):
        recsql.connect(warehouse="s3a://bucket/warehouse")


def test_drop_and_if_exists(cur):
    cur.execute("DROP TABLE IF EXISTS db_gone")
    with pytest.raises(recsql.ProgrammingError, match="db_gone"):
        cur.execute("DROP TABLE db_gone")
    cur.execute("CREATE TABLE db_gone (x INT)")
    with pytest.raises(recsql.ProgrammingError, match="already exists"):
        cur.execute("CREATE TABLE db_gone (x INT)")
    cur.execute("CREATE TABLE IF NOT EXISTS db_gone (x INT)")
    cur.execute("DROP TABLE db_gone")


@pytest.mark.spark
def test_set_spark_and_recsql_settings(conn, cur):
    cur.execute("SET spark.sql.shuffle.partitions = 3")
    assert conn.spark_session.conf.get("spark.sql.shuffle.partitions") == "3"
    cur.execute("SET spark.sql.shuffle.partitions = 2")
    cur.execute("SET recsql.max_iterations = 77")
    cur.execute("SET")
    assert ("recsql.max_iterations", "77") in cur.fetchall()
    cur.execute("SET recsql.max_iterations = 10000")


def test_explain_prints_rules_and_strata(cur):
    cur.execute(
        "EXPLAIN WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM db_g UNION "
        "SELECT tc.a, db_g.dst FROM tc, db_g WHERE tc.b = db_g.src) SELECT a, b FROM tc"
    )
    assert [d[0] for d in cur.description] == ["plan"]
    text = "\n".join(row[0] for row in cur.fetchall())
    assert "tc(SRC, DST) :- db_g(SRC, DST)." in text
    assert "== Strata ==" in text and "semi-naive" in text and "Δtc" in text


def test_closed_cursor_and_connection(conn):
    cursor = conn.cursor()
    cursor.close()
    with pytest.raises(recsql.InterfaceError):
        cursor.execute("SELECT 1")
    with pytest.raises(recsql.InterfaceError):
        conn.cursor().fetchall()
    with pytest.raises(recsql.NotSupportedError):
        conn.rollback()


@pytest.mark.spark
def test_query_results_match_duckdb_on_types(cur):
    cur.execute("SELECT CAST(1.5 AS DECIMAL(4,2)) AS d, 'x' || 'y' AS s, 7 / 2 AS q, 7 % 3 AS r")
    ours = cur.fetchall()
    theirs = duckdb.sql("SELECT CAST(1.5 AS DECIMAL(4,2)), 'x' || 'y', 7 / 2, 7 % 3").fetchall()
    assert [tuple(float(v) if not isinstance(v, str) else v for v in row) for row in ours] == [
        tuple(float(v) if not isinstance(v, str) else v for v in row) for row in theirs
    ]


def test_insert_select_and_empty_arrow_registration(conn, cur):
    conn.register("db_empty", pa.table({"k": pa.array([], pa.int64())}))
    cur.execute("SELECT count(*) FROM db_empty")
    assert cur.fetchall() == duckdb.sql("SELECT count(*) FROM range(0)").fetchall()
    cur.execute("DROP TABLE IF EXISTS db_copy")
    cur.execute("CREATE TABLE db_copy (n BIGINT)")
    cur.execute("INSERT INTO db_copy SELECT id * 2 FROM range(5)")
    assert cur.rowcount == 5
    cur.execute("SELECT n FROM db_copy ORDER BY n")
    assert cur.fetchall() == duckdb.sql("SELECT range * 2 FROM range(5) ORDER BY 1").fetchall()


# ---------------------------------------------------------------- catalog statements


def test_show_tables_and_describe(conn, cur):
    cur.execute("DROP VIEW IF EXISTS db_dist")
    cur.execute("DROP TABLE IF EXISTS db_w")
    cur.execute("CREATE TABLE db_w (src INT, dst INT, w DOUBLE, note STRING)")
    cur.executemany("INSERT INTO db_w VALUES (?, ?, ?, ?)", [(1, 2, 1.5, "a"), (2, 3, 2.0, None)])
    cur.execute(
        "CREATE VIEW db_dist AS WITH RECURSIVE d(node, min() AS km) AS (SELECT 1, 0) UNION "
        "(SELECT db_w.dst, d.km + db_w.w FROM d, db_w WHERE d.node = db_w.src) SELECT node, km FROM d"
    )
    conn.register("db_session", pd.DataFrame({"x": [1], "y": ["z"]}))
    cur.execute("SHOW TABLES")
    assert [column[:2] for column in cur.description] == [
        ("name", "string"),
        ("kind", "string"),
        ("columns", "array<string>"),
        ("reflects", "string"),
    ]
    listed = {name: (kind, columns) for name, kind, columns, _ in cur.fetchall()}
    assert listed["db_w"] == ("table", ["src", "dst", "w", "note"])
    assert listed["db_dist"] == ("view", ["node", "km"])
    assert listed["db_session"] == ("registered", ["x", "y"])
    cur.execute("DESCRIBE db_w")
    assert cur.fetchall() == [("src", "int"), ("dst", "int"), ("w", "double"), ("note", "string")]
    cur.execute("DESCRIBE db_dist")
    described = cur.fetchall()
    cur.execute("SELECT * FROM db_dist")  # the types a query of the view has, from Spark
    assert described == [(name, kind) for name, kind, *_ in cur.description] == [("node", "int"), ("km", "double")]
    with pytest.raises(recsql.ProgrammingError, match="nowhere"):
        cur.execute("DESCRIBE nowhere")


# ---------------------------------------------------------------- cancelling a running statement


LONG_RECURSION = (
    "WITH RECURSIVE n(x) AS (SELECT 1 UNION SELECT x + 1 FROM n WHERE x < 100000000) SELECT count(*) FROM n"
)
LONG_JOIN = "SELECT count(*) FROM range(100000) a, range(100000) b WHERE a.id + b.id > 7"


@pytest.mark.parametrize(
    "strategy, sql",
    [
        ("distributed", LONG_RECURSION),  # stops between iterations
        ("distributed", LONG_JOIN),  # a Spark job cancelled through its job group
        ("local", LONG_RECURSION),
        ("local", LONG_JOIN),  # one DuckDB query, interrupted
    ],
)
def test_cancel_stops_the_running_statement(conn, cur, strategy, sql):
    cur.execute(f"SET recsql.strategy = {strategy}")
    cur.execute("SET recsql.max_iterations = 100000000")  # the counter runs for minutes
    timer = threading.Timer(1.5, conn.cancel)
    timer.start()
    started = time.monotonic()
    with pytest.raises(recsql.QueryCancelled, match="cancelled"):
        cur.execute(sql)
    assert time.monotonic() - started < 60  # not run to its end (hours)
    timer.join()
    cur.execute("SELECT count(*) FROM range(10)")  # the connection goes on
    assert cur.fetchall() == [(10,)]


def test_cancel_without_a_running_statement_changes_nothing(conn, cur):
    conn.cancel()
    cur.execute("SELECT 1")
    assert cur.fetchall() == [(1,)]


# ---------------------------------------------------------------- what is checked before Spark starts


def test_missing_java_is_reported_before_starting_spark(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(recsql.OperationalError, match=r"Java not found: JAVA_HOME is .* no bin/java"):
        preflight.check(None)
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(recsql.OperationalError, match="Java not found. Spark needs Java 17"):
        preflight.check("local[2]")


def test_unreachable_master_is_reported_before_starting_spark():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(recsql.OperationalError, match=rf"master spark://127.0.0.1:{port} cannot be reached"):
        preflight.check_master(f"spark://127.0.0.1:{port}")
    with pytest.raises(recsql.OperationalError, match="bad Spark master URL"):
        preflight.check_master("spark://somewhere")
