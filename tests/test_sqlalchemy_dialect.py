"""The SQLAlchemy dialect `recsql`: engines from URLs, pandas.read_sql without a warning, reflection from
recsql's catalog, pandas' to_sql. References: DuckDB, networkx's closure."""

from __future__ import annotations

import warnings

import duckdb
import pandas as pd
import pytest
import sqlalchemy
from reference import transitive_closure

import recsql
from recsql.alchemy import RecsqlDialect

EDGES = [(1, 2), (2, 3), (3, 1), (3, 4), (5, 6)]
CLOSURE = """WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM edges
UNION SELECT tc.src, e.dst FROM tc JOIN edges e ON tc.dst = e.src) SELECT src, dst FROM tc ORDER BY src, dst"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """An engine on a warehouse of its own, everything run in this process (no JVM)."""
    warehouse = tmp_path_factory.mktemp("alchemy")
    engine = sqlalchemy.create_engine(f"recsql:///{warehouse}?recsql.spark_start=on_demand")
    with engine.connect() as connection:
        connection.exec_driver_sql("CREATE TABLE edges (src BIGINT, dst BIGINT)")
        connection.exec_driver_sql("INSERT INTO edges VALUES " + ", ".join(f"({a}, {b})" for a, b in EDGES))
        connection.exec_driver_sql("CREATE VIEW reach AS " + CLOSURE.replace(" ORDER BY src, dst", ""))
    yield engine
    engine.dispose()


def test_urls_become_connect_arguments():
    url = sqlalchemy.engine.make_url("recsql:////data/wh?master=local[2]&recsql.strategy=local&log_level=warn")
    assert RecsqlDialect().create_connect_args(url) == (
        [],
        {"master": "local[2]", "log_level": "warn", "warehouse": "/data/wh", "conf": {"recsql.strategy": "local"}},
    )
    remote = sqlalchemy.engine.make_url("recsql://?remote=sc://host:15002")
    assert RecsqlDialect().create_connect_args(remote) == ([], {"remote": "sc://host:15002"})


def test_pandas_read_sql_warns_nothing_and_matches_networkx(engine):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame = pd.read_sql(CLOSURE, engine)
        filtered = pd.read_sql("SELECT src, dst FROM reach WHERE src = ? ORDER BY dst", engine, params=(5,))
        whole = pd.read_sql_table("edges", engine)
    assert list(frame.columns) == ["src", "dst"]
    assert set(frame.itertuples(index=False, name=None)) == transitive_closure(EDGES)
    assert list(filtered.itertuples(index=False, name=None)) == [(5, 6)]
    assert sorted(whole.itertuples(index=False, name=None)) == sorted(EDGES)


def test_sqlalchemy_core_queries_compile_to_recsql_sql(engine):
    metadata = sqlalchemy.MetaData()
    edges = sqlalchemy.Table("edges", metadata, autoload_with=engine)
    query = (
        sqlalchemy.select(edges.c.src, sqlalchemy.func.count().label("out_degree"))
        .where(edges.c.src < 5)
        .group_by(edges.c.src)
        .order_by(edges.c.src)
    )
    with engine.connect() as connection:
        rows = connection.execute(query).all()
    reference = duckdb.sql(
        "SELECT src, count(*) FROM (VALUES " + ", ".join(map(str, EDGES)) + ") e(src, dst) "
        "WHERE src < 5 GROUP BY src ORDER BY src"
    ).fetchall()
    assert [tuple(row) for row in rows] == reference


def test_reflection_reads_the_catalog(engine):
    inspector = sqlalchemy.inspect(engine)
    assert "edges" in inspector.get_table_names()
    assert inspector.get_view_names() == ["reach"]
    assert inspector.has_table("reach") and not inspector.has_table("nothing")
    columns = inspector.get_columns("reach")
    assert [(column["name"], type(column["type"])) for column in columns] == [
        ("src", sqlalchemy.BigInteger),
        ("dst", sqlalchemy.BigInteger),
    ]


def test_pandas_to_sql_writes_a_table(engine):
    frame = pd.DataFrame({"name": ["a", "b", None], "score": [1.5, 2.0, 3.25], "n": [1, 2, 3]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame.to_sql("scores", engine, index=False)
        back = pd.read_sql("SELECT name, score, n FROM scores ORDER BY n", engine)
    pd.testing.assert_frame_equal(back, frame)


def test_errors_are_recsql_errors_through_sqlalchemy(engine):
    with engine.connect() as connection, pytest.raises(sqlalchemy.exc.DBAPIError) as raised:
        connection.exec_driver_sql("SELECT * FROM no_such_table")
    assert isinstance(raised.value.orig, recsql.ProgrammingError)
