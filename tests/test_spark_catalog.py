"""Tables recsql does not keep: Spark's temporary views, the tables of Spark's databases, and path tables,
queried (recursion included) and changed through recsql, checked against plain-Python references."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from reference import assert_same_rows, transitive_closure

from recsql import NotSupportedError, ProgrammingError

EDGES = [(1, 2), (2, 3), (3, 4), (4, 2), (5, 6), (6, 7), (10, 11)]
CLOSURE = sorted(transitive_closure(EDGES))
TC = """WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM {table}
UNION SELECT tc.src, e.dst FROM tc JOIN {table} e ON tc.dst = e.src) SELECT src, dst FROM tc"""


def edge_frame(spark, edges=EDGES):
    return spark.createDataFrame(edges, "src INT, dst INT")


@pytest.fixture(scope="module")
def spark_tables(conn):
    """A temporary view, a global temporary view and a table of a database, all of the edges."""
    spark = conn.spark_session
    edge_frame(spark).createOrReplaceTempView("sv_edges")
    edge_frame(spark).createOrReplaceGlobalTempView("gv_edges")
    spark.sql("CREATE DATABASE IF NOT EXISTS db1")
    edge_frame(spark).write.mode("overwrite").saveAsTable("db1.edges")
    yield spark
    spark.catalog.dropTempView("sv_edges")
    spark.catalog.dropGlobalTempView("gv_edges")
    spark.sql("DROP DATABASE db1 CASCADE")


@pytest.mark.strategies("distributed", "local", "decomposed")
@pytest.mark.parametrize(
    "table", ["sv_edges", "global_temp.gv_edges", "db1.edges", "spark_catalog.db1.edges", "DB1.Edges"]
)
def test_recursion_over_a_table_spark_knows(cur, spark_tables, strategy, table):
    cur.execute(TC.format(table=table))
    assert_same_rows(cur.fetchall(), CLOSURE, context=table)


@pytest.mark.spark
@pytest.mark.strategies("distributed", "local")
@pytest.mark.parametrize("format", ["parquet", "json", "orc"])
def test_recursion_over_a_path_table(cur, conn, tmp_path, strategy, format):
    path = tmp_path / f"Edges.{format}"  # a path keeps its case
    edge_frame(conn.spark_session).write.format(format).save(str(path))
    cur.execute(TC.format(table=f"{format}.`{path}`"))
    assert_same_rows(cur.fetchall(), CLOSURE)


@pytest.mark.spark
def test_csv_path_table_has_spark_column_names(cur, tmp_path):
    path = tmp_path / "edges.csv"
    path.write_text("".join(f"{a},{b}\n" for a, b in EDGES))
    cur.execute(f"SELECT count(*), sum(CAST(_c1 AS INT)) FROM csv.`{path}`")
    assert cur.fetchall() == [(len(EDGES), sum(b for _, b in EDGES))]


def test_delta_path_table(cur, tmp_path):
    """A Delta table anyone wrote (here: recsql's own, read by its directory)."""
    from deltalake import write_deltalake

    path = tmp_path / "delta_edges"
    write_deltalake(str(path), pa.table({"src": [a for a, _ in EDGES], "dst": [b for _, b in EDGES]}))
    cur.execute(TC.format(table=f"delta.`{path}`"))
    assert_same_rows(cur.fetchall(), CLOSURE)


@pytest.mark.spark
def test_random_graphs_through_a_spark_view(cur, conn):
    """Property check over random graphs: the closure of a Spark view's edges as Python computes it."""
    generator = random.Random(7)
    for round_ in range(3):
        edges = sorted({(generator.randrange(12), generator.randrange(12)) for _ in range(generator.randrange(5, 25))})
        edge_frame(conn.spark_session, edges).createOrReplaceTempView("random_edges")
        cur.execute(TC.format(table="random_edges"))
        assert_same_rows(cur.fetchall(), sorted(transitive_closure(edges)), context=f"round {round_}: {edges}")
    conn.spark_session.catalog.dropTempView("random_edges")


@pytest.mark.spark
def test_a_view_replaced_between_statements_is_read_afresh(cur, conn):
    spark = conn.spark_session
    spark.range(3).createOrReplaceTempView("changing")
    cur.execute("SELECT count(*) FROM changing")
    assert cur.fetchall() == [(3,)]
    spark.range(7).createOrReplaceTempView("changing")
    cur.execute("SELECT count(*) FROM changing")
    assert cur.fetchall() == [(7,)]
    spark.catalog.dropTempView("changing")


@pytest.mark.spark
def test_recsql_names_come_first(cur, conn):
    """A stored table hides a Spark view of its name; registered data hides both."""
    spark = conn.spark_session
    spark.range(5).toDF("x").createOrReplaceTempView("shadowed")
    cur.execute("CREATE TABLE shadowed (x INT)")
    try:
        cur.execute("INSERT INTO shadowed VALUES (1)")
        cur.execute("SELECT count(*) FROM shadowed")
        assert cur.fetchall() == [(1,)]
        conn.register("shadowed", pa.table({"x": [1, 2]}))
        cur.execute("SELECT count(*) FROM shadowed")
        assert cur.fetchall() == [(2,)]
        cur.execute("DROP TABLE shadowed")  # the registered data
        cur.execute("DROP TABLE shadowed")  # the stored table
        cur.execute("SELECT count(*) FROM shadowed")  # Spark's view is seen again
        assert cur.fetchall() == [(5,)]
    finally:
        spark.catalog.dropTempView("shadowed")


def test_show_tables_and_describe(cur, spark_tables):
    cur.execute("SHOW TABLES")
    kinds = {name: kind for name, kind, *_ in cur.fetchall()}
    assert kinds["sv_edges"] == "spark"
    cur.execute("SHOW TABLES IN db1")
    assert [(name, kind, list(columns), reflects) for name, kind, columns, reflects in cur.fetchall()] == [
        ("db1.edges", "spark", ["src", "dst"], None)
    ]
    cur.execute("DESCRIBE db1.edges")
    assert cur.fetchall() == [("src", "int"), ("dst", "int")]


def test_statistics_from_spark_catalog(conn, spark_tables):
    """After Spark's ANALYZE ... FOR ALL COLUMNS, the optimizer reads Spark's statistics (no job)."""
    spark = conn.spark_session
    spark.sql("ANALYZE TABLE db1.edges COMPUTE STATISTICS FOR ALL COLUMNS")
    tables = conn.session.catalog.spark_tables
    kept = tables.kept_by_spark("db1.edges")
    assert kept is not None
    assert kept.rows == len(EDGES)
    assert [c.distinct for c in kept.columns] == [len({a for a, _ in EDGES}), len({b for _, b in EDGES})]
    assert (kept.columns[0].minimum, kept.columns[0].maximum) == (1, 10)
    assert tables.kept_by_spark("sv_edges") is None  # Spark keeps none of a view: gathered instead
    with conn.session.catalog.statement():
        assert conn.session.catalog.table_statistics("sv_edges").rows == len(EDGES)


def test_create_insert_and_drop_a_table_of_a_spark_database(cur, conn, spark_tables):
    spark = conn.spark_session
    cur.execute("CREATE TABLE db1.closure AS " + TC.format(table="db1.edges"))
    assert cur.rowcount == len(CLOSURE)
    assert_same_rows([tuple(r) for r in spark.table("db1.closure").collect()], CLOSURE)
    cur.execute("INSERT INTO db1.closure VALUES (100, 101)")
    cur.execute("INSERT INTO db1.closure SELECT src + 1000, dst FROM db1.edges")
    assert spark.table("db1.closure").count() == len(CLOSURE) + 1 + len(EDGES)
    cur.execute("DROP TABLE db1.closure")
    assert not spark.catalog.tableExists("db1.closure")


def test_errors_name_the_table(cur, spark_tables):
    with pytest.raises(ProgrammingError, match="'db9.nothing' not found"):
        cur.execute("SELECT * FROM db9.nothing")
    with pytest.raises(NotSupportedError, match="DELETE"):
        cur.execute("DELETE FROM db1.edges WHERE src = 1")
    with pytest.raises(NotSupportedError, match="one-part names"):
        cur.execute("CREATE VIEW db1.v AS SELECT 1")


def test_parquet_file_written_by_arrow(cur, tmp_path):
    path = tmp_path / "numbers.parquet"
    pq.write_table(pa.table({"n": list(range(10))}), path)
    cur.execute(f"SELECT sum(n) FROM parquet.`{path}` WHERE n > 4")
    assert cur.fetchall() == [(35,)]


HIVE_SESSION = Path(__file__).resolve().parent / "hive_session.py"


@pytest.mark.cluster
def test_hive_metastore_table(tmp_path):
    """A Hive table made by one Spark process is found in the metastore by recsql in another."""
    import hive_session

    for mode in ("create", "query"):
        finished = subprocess.run(
            [sys.executable, str(HIVE_SESSION), str(tmp_path), mode], capture_output=True, text=True, timeout=300
        )
        assert finished.returncode == 0, finished.stderr[-3000:]
    rows = [json.loads(line[3:]) for line in finished.stdout.splitlines() if line.startswith("@@ ")]
    assert_same_rows([tuple(row) for row in rows[0]], sorted(transitive_closure(hive_session.EDGES)))


@pytest.mark.cluster
def test_connect_prints_nothing(tmp_path):
    """Spark's start-up lines go to the log file; asked for a log level, they come to the terminal."""
    environment = {**os.environ, "RECSQL_LOG": str(tmp_path / "spark.log"), "RECSQL_WAREHOUSE": str(tmp_path)}

    def connect(arguments: str) -> subprocess.CompletedProcess:
        code = f"import recsql; recsql.connect({arguments}).spark_session"
        return subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=environment
        )

    quiet = connect("")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    assert "log4j" in (tmp_path / "spark.log").read_text()
    verbose = connect("log_level='warn'")
    assert verbose.returncode == 0 and "log4j" in verbose.stderr
