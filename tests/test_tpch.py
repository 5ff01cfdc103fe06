"""The 22 TPC-H queries at scale factor 0.01, through recsql's pipeline, against DuckDB on the same
Parquet files: on Spark (tables declared over the files) and with the same tables registered as Arrow
(which `auto` runs in this process when it can derive the answer's column types without Spark).
Numbers must match to the cent, ordered answers in order."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
import sqlglot
from sqlglot import exp

import recsql
from conftest import TEST_CONF
from spark_jobs import spark_jobs
from tpch.check import difference, ordered
from tpch.data import create_tables, duckdb_views, generate, paths
from tpch.queries import queries

QUERIES = queries()


@pytest.fixture(scope="module")
def tpch_directory(tmp_path_factory):
    return generate(0.01, tmp_path_factory.mktemp("tpch"))


@pytest.fixture(scope="module")
def duckdb_answers(tpch_directory):
    duck = duckdb_views(tpch_directory)
    return {number: duck.execute(sql).fetchall() for number, sql in QUERIES.items()}


@pytest.fixture(scope="module")
def on_spark(conn, tpch_directory, tmp_path_factory):
    """A connection (on the suite's Spark session) whose TPC-H tables are Parquet files, run on Spark."""
    connection = recsql.connect(master="local[2]", conf=TEST_CONF, warehouse=str(tmp_path_factory.mktemp("wh")))
    create_tables(connection, tpch_directory)
    connection.cursor().execute("SET recsql.strategy = distributed")
    return connection


@pytest.fixture(scope="module")
def in_process(conn, tpch_directory, tmp_path_factory):
    """A connection whose TPC-H tables are registered Arrow tables (recsql.strategy auto)."""
    connection = recsql.connect(master="local[2]", conf=TEST_CONF, warehouse=str(tmp_path_factory.mktemp("wh")))
    for table, path in paths(tpch_directory).items():
        connection.register(table, pq.read_table(path))
    return connection


def run(connection: recsql.Connection, sql: str) -> list[tuple]:
    cursor = connection.cursor()
    cursor.execute(sql)
    return cursor.fetchall()


@pytest.mark.parametrize("number", sorted(QUERIES))
def test_tpch_on_spark(on_spark, duckdb_answers, number):
    sql = QUERIES[number]
    assert duckdb_answers[number], f"Q{number} has an empty answer at this scale: it would check nothing"
    assert difference(run(on_spark, sql), duckdb_answers[number], ordered(sql)) is None


@pytest.mark.parametrize("number", sorted(QUERIES))
def test_tpch_in_process(in_process, duckdb_answers, number):
    sql = QUERIES[number]
    assert difference(run(in_process, sql), duckdb_answers[number], ordered(sql)) is None


@pytest.mark.parametrize("number", [18, 21])
def test_in_process_runs_without_spark(in_process, number):
    """Over registered Arrow tables, `auto` runs these queries in this process: no Spark job."""
    assert spark_jobs(in_process, QUERIES[number], f"tpch-in-process-{number}") == 0


@pytest.mark.parametrize("number", sorted(QUERIES))
def test_explain_shows_rules_and_join_order(on_spark, number):
    """EXPLAIN of each query: its rules, every table it reads as an atom, and the join order chosen."""
    cursor = on_spark.cursor()
    cursor.execute("EXPLAIN " + QUERIES[number])
    text = "\n".join(row[0] for row in cursor.fetchall())
    assert "== Pass 2: order_joins ==" in text
    query = sqlglot.parse_one(QUERIES[number])
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    tables = {table.name.lower() for table in query.find_all(exp.Table)} - ctes
    for table in tables:
        assert f" {table}(" in text or f"- {table}(" in text, table
    joined = [line for line in text.splitlines() if line.strip().startswith("-- cost") and "⋈" in line]
    assert joined or len(tables) == 1 or " left " in text  # an outer join keeps its written place (Q13)
