"""recsql inside PySpark code: a session the user holds adopted by connect(spark=...), answers leaving as
Spark DataFrames (recsql.sql, Cursor.fetch_spark) that stay on the executors when Spark computed them, and
DuckDB's fetches (fetchdf, arrow, pl, fetch_record_batch). References: networkx's closure, DuckDB."""

from __future__ import annotations

import duckdb
import pandas as pd
import polars
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from reference import transitive_closure

import recsql
from recsql.engine.answer import Answer

pytestmark = pytest.mark.spark

EDGES = [(1, 2), (2, 3), (3, 1), (3, 4), (5, 6), (6, 7), (8, 8)]
CLOSURE = """WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM {edges}
UNION SELECT tc.src, e.dst FROM tc JOIN {edges} e ON tc.dst = e.src) SELECT src, dst FROM tc"""
STRATEGIES = ("local", "decomposed", "distributed")


@pytest.fixture(scope="module")
def spark(conn):
    """The suite's Spark session, as a user's PySpark code holds it."""
    return conn.spark_session


@pytest.fixture(scope="module")
def user_edges(spark):
    """A temporary view of the user's session, made from a pandas frame of int64 columns."""
    frame = pd.DataFrame(EDGES, columns=["src", "dst"])
    spark.createDataFrame(frame).createOrReplaceTempView("user_edges")
    yield "user_edges"
    spark.catalog.dropTempView("user_edges")


@pytest.fixture
def adopted(spark, tmp_path):
    connection = recsql.connect(spark=spark, warehouse=str(tmp_path / "warehouse"))
    yield connection
    connection.close()


def pairs(frame) -> set[tuple[int, int]]:
    return {(row[0], row[1]) for row in frame.collect()}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_an_adopted_session_answers_over_its_own_views(spark, user_edges, adopted, strategy):
    cursor = adopted.cursor(on_spark=True)
    cursor.execute(f"SET recsql.strategy = {strategy}")
    cursor.execute(CLOSURE.format(edges=user_edges))
    assert set(cursor.fetchall()) == transitive_closure(EDGES)
    adopted.close()
    assert spark.range(5).count() == 5  # closing the connection leaves the session running


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_recsql_sql_gives_a_dataframe_spark_writes(spark, user_edges, tmp_path, strategy):
    recsql.sql(f"SET recsql.strategy = {strategy}", spark=spark)
    try:
        frame = recsql.sql(CLOSURE.format(edges=user_edges), spark=spark)
        assert frame.columns == ["src", "dst"]
        frame.write.parquet(str(tmp_path / "closure"))
        written = pq.read_table(tmp_path / "closure")
        assert set(zip(written["src"].to_pylist(), written["dst"].to_pylist())) == transitive_closure(EDGES)
    finally:
        recsql.sql("SET recsql.strategy = auto", spark=spark)


def test_recsql_sql_takes_the_active_session_and_parameters(spark, user_edges):
    frame = recsql.sql(CLOSURE.format(edges=user_edges) + " WHERE src = ?", [5])
    assert pairs(frame) == {pair for pair in transitive_closure(EDGES) if pair[0] == 5}
    assert recsql.sql("SET recsql.max_iterations = 1000").columns == []


@pytest.mark.parametrize("strategy", ("decomposed", "distributed"))
def test_an_answer_computed_on_spark_reads_nothing_sent_from_the_driver(adopted, user_edges, strategy):
    cursor = adopted.cursor(on_spark=True)
    cursor.execute(f"SET recsql.strategy = {strategy}")
    cursor.execute(CLOSURE.format(edges=user_edges))
    frame = cursor.fetch_spark()
    plan = frame._jdf.queryExecution().executedPlan().toString()
    assert "LocalTableScan" not in plan, plan
    assert pairs(frame) == transitive_closure(EDGES)


@pytest.mark.parametrize("shape", ["SELECT count(*) AS n FROM tc", "SELECT src, dst FROM tc ORDER BY src, dst LIMIT 3"])
def test_an_answer_its_query_bounds_to_few_rows_comes_at_once(adopted, user_edges, shape):
    cursor = adopted.cursor(on_spark=True)
    cursor.execute("SET recsql.strategy = distributed")
    cursor.execute(CLOSURE.format(edges=user_edges).replace("SELECT src, dst FROM tc", shape))
    assert isinstance(cursor._result.answer, Answer)  # collected by the statement, not kept on Spark
    closure = transitive_closure(EDGES)
    expected = [(len(closure),)] if "count" in shape else sorted(closure)[:3]
    assert [tuple(row) for row in cursor.fetch_spark().collect()] == expected
    assert cursor.fetchall() == expected


def test_an_answer_computed_in_this_process_is_sent_to_spark(adopted, spark):
    cursor = adopted.cursor(on_spark=True)
    cursor.execute("SELECT 1 AS a, 'x' AS b UNION ALL SELECT 2, NULL")
    frame = cursor.fetch_spark()
    assert [(field.name, field.dataType.simpleString()) for field in frame.schema.fields] == [
        ("a", "int"),
        ("b", "string"),
    ]
    assert sorted(frame.collect(), key=lambda row: row.a) == [(1, "x"), (2, None)]


def test_the_dataframe_outlives_its_cursor(adopted, user_edges):
    cursor = adopted.cursor(on_spark=True)
    cursor.execute("SET recsql.strategy = distributed")
    cursor.execute(CLOSURE.format(edges=user_edges))
    frame = cursor.fetch_spark()
    cursor.execute("SELECT 1")
    cursor.close()
    assert pairs(frame) == transitive_closure(EDGES)
    assert pairs(frame.join(frame.select("src"), "src")) == transitive_closure(EDGES)  # read twice in one plan


def test_rows_fetched_from_an_answer_kept_on_spark(adopted, user_edges):
    cursor = adopted.cursor(on_spark=True)
    cursor.execute("SET recsql.strategy = distributed")
    cursor.execute(CLOSURE.format(edges=user_edges) + " ORDER BY src, dst")
    expected = sorted(transitive_closure(EDGES))
    assert cursor.rowcount == len(expected)
    assert [column[0] for column in cursor.description] == ["src", "dst"]
    assert cursor.fetchone() == expected[0]
    assert cursor.fetchmany(2) == expected[1:3]
    assert cursor.fetchall() == expected[3:]
    assert pairs(cursor.fetch_spark()) == set(expected)  # the whole answer, whatever was fetched


def test_a_query_error_is_a_recsql_error_and_the_session_keeps_working(spark):
    with pytest.raises(recsql.ProgrammingError, match="no_such_table"):
        recsql.sql("SELECT * FROM no_such_table", spark=spark)
    assert recsql.sql("SELECT 41 + 1 AS answer", spark=spark).collect()[0].answer == 42


def test_connect_takes_one_kind_of_spark(spark):
    with pytest.raises(recsql.InterfaceError, match="one of master, remote and spark"):
        recsql.connect(master="local[1]", spark=spark)


def test_a_setting_a_running_session_cannot_take_is_refused(spark, tmp_path):
    with pytest.raises(recsql.ProgrammingError, match=r"spark\.executor\.memory.*running session"):
        recsql.connect(spark=spark, conf={"spark.executor.memory": "3g"}, warehouse=str(tmp_path))


# ------------------------------------------------------------------ DuckDB's fetches

TYPED = """SELECT CAST(n AS INT) AS i, CAST(n AS BIGINT) * 10 AS big, n / 4 AS ratio, CAST(n AS STRING) AS s,
CAST(n AS DECIMAL(10, 2)) AS amount, n % 2 = 0 AS even, DATE '2024-01-01' + CAST(n AS INT) AS day
FROM range(7) AS t(n)"""


@pytest.mark.parametrize("strategy", ("local", "distributed"))
def test_fetches_give_what_duckdb_gives(adopted, strategy):
    cursor = adopted.cursor(on_spark=True)
    cursor.execute(f"SET recsql.strategy = {strategy}")
    cursor.execute("SET recsql.spark = " + ("auto" if strategy == "local" else "always"))
    query = TYPED + " ORDER BY i"
    reference = duckdb.sql(query.replace("range(7) AS t(n)", "range(7) t(n)")).df()
    frame = cursor.execute(query).df()
    assert list(frame.columns) == list(reference.columns)
    assert [str(kind) for kind in frame.dtypes][:3] == ["int32", "int64", "float64"]
    pd.testing.assert_frame_equal(
        frame.drop(columns=["amount", "day"]), reference.drop(columns=["amount", "day"]), check_dtype=False
    )
    assert [float(value) for value in frame["amount"]] == [float(n) for n in range(7)]
    assert [day.isoformat() for day in frame["day"]] == [f"2024-01-0{n + 1}" for n in range(7)]
    table = cursor.execute(query).arrow()
    assert table.schema.types[:2] == [pa.int32(), pa.int64()] and table.num_rows == 7
    assert cursor.execute(query).pl().equals(polars.from_arrow(table))
    reader = cursor.execute(query).fetch_record_batch(3)
    batches = list(reader)
    assert [batch.num_rows for batch in batches] == [3, 3, 1]
    assert pa.Table.from_batches(batches).equals(table)
    assert cursor.fetchall() == []  # the reader took every row
    cursor.execute(query)
    assert cursor.fetchone()[0] == 0
    assert cursor.fetchdf()["i"].tolist() == [1, 2, 3, 4, 5, 6]  # the remaining rows


def test_a_cursor_not_made_for_spark_collects_the_answer_at_once(adopted, user_edges):
    cursor = adopted.cursor()
    cursor.execute("SET recsql.strategy = distributed")
    cursor.execute(CLOSURE.format(edges=user_edges))
    assert isinstance(cursor._result.answer, Answer)  # in this process: fetches need no further Spark job
    assert pairs(cursor.fetch_spark()) == transitive_closure(EDGES) == set(cursor.fetchall())
