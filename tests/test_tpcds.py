"""The TPC-DS queries (99, and the a/b variants of 14, 23, 24 and 39) at scale factor 0.01 through recsql's
pipeline, each answer compared with spark.sql's on the same Parquet files in the same Spark session (numbers
to the cent, ordered answers in order). What recsql's IR does not model (windows, ROLLUP, ...) runs as Spark
SQL inside the plan; everything around it is recsql's."""

from __future__ import annotations

import re

import pytest
from conftest import TEST_CONF
from pyspark.errors import ArithmeticException

import recsql
from tpcds.suite import TPCDS
from tpch.check import difference, ordered
from tpch.data import create_tables, generate, spark_views

pytestmark = pytest.mark.spark

QUERIES = TPCDS.queries()


BROADCAST = "spark.sql.autoBroadcastJoinThreshold"


@pytest.fixture(scope="module")
def tpcds_connection(conn, tmp_path_factory):
    """A connection on the suite's Spark session whose TPC-DS tables are Parquet files (recsql.strategy
    auto), the same files visible to spark.sql as temporary views. Spark broadcasts less than its default
    meanwhile: customer_demographics (1.9 million rows at any scale) fits its 10 MB bound, and broadcast
    several times over it fills the suite's small driver."""
    directory = generate(0.01, tmp_path_factory.mktemp("tpcds"), TPCDS)
    connection = recsql.connect(master="local[2]", conf=TEST_CONF, warehouse=str(tmp_path_factory.mktemp("wh")))
    spark = connection.spark_session
    create_tables(connection, directory, TPCDS)
    spark_views(spark, directory, TPCDS)
    before = spark.conf.get(BROADCAST)
    spark.conf.set(BROADCAST, "1m")
    yield connection
    spark.conf.set(BROADCAST, before)


def test_every_query_is_here():
    assert len(QUERIES) == 103 and {"14a", "14b", "23a", "23b", "24a", "24b", "39a", "39b"} <= set(QUERIES)


@pytest.mark.parametrize("name", list(QUERIES))
def test_tpcds_gives_spark_sql_answers(tpcds_connection, name):
    """recsql's answer is spark.sql's, or where Spark fails the query (q12 divides by a class's revenue, which
    is 0 at this scale: an error under ANSI), recsql fails it too, with the PEP 249 class of the cause."""
    sql = QUERIES[name]
    cursor = tpcds_connection.cursor()
    try:
        expected = [tuple(row) for row in tpcds_connection.spark_session.sql(sql).collect()]
    except ArithmeticException as failure:
        cause = str(failure).split("] ", 1)[-1].split(".")[0]  # "Division by zero", after Spark's error class
        with pytest.raises(recsql.DataError, match=re.escape(cause)):
            cursor.execute(sql)
        return
    cursor.execute(sql)
    assert difference(cursor.fetchall(), expected, ordered(sql)) is None
