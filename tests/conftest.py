"""Shared fixtures: one Spark session and one recsql connection for the whole run, and the suite's tiers.

Tiers (markers, see pyproject.toml): a test that runs statements through the shared connection may need Spark and
is marked `spark`, unless it runs under recsql.strategy = local (whose plans run in this process: the connection
starts Spark only when a statement needs it); tests that start Spark processes of their own are `cluster`, and
those that take long on this suite's small data `slow`. `pytest -m "not spark and not cluster and not slow"` runs
the pure and local tests without a JVM.

With RECSQL_TEST_REMOTE set (`sc://host:port`), the connection is a Spark Connect session on that server
instead of an embedded Spark: tests/test_spark_connect.py runs suites so, in a process of their own."""

from __future__ import annotations

import os

import pytest

import recsql

pytest.register_assert_rewrite("duckdb_reference")  # before any test module imports it: its asserts explain themselves

from strategies import counting_runs  # noqa: E402 - after the rewrite is registered

TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.memory": "2g",
    "recsql.spark_start": "on_demand",  # tests that run everything in this process never start a JVM
}
SPARK_FIXTURES = {"conn", "cur", "spark", "spark_tables"}  # fixtures through which a test may reach Spark


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory):
    return tmp_path_factory.mktemp("warehouse")


@pytest.fixture(scope="session")
def conn(warehouse):
    remote = os.environ.get("RECSQL_TEST_REMOTE")
    if remote:  # the server's own settings are given when it starts
        conf = {key: value for key, value in TEST_CONF.items() if key.startswith("spark.sql.")}
        connection = recsql.connect(remote=remote, conf=conf, warehouse=str(warehouse))
    else:
        conf = {**TEST_CONF, "spark.sql.warehouse.dir": str(warehouse / "spark")}  # saveAsTable writes here
        connection = recsql.connect(master="local[2]", conf=conf, warehouse=str(warehouse))
    # the suites check the distributed evaluation on their small data (which `auto` would run locally);
    # tests marked with strategies.under run again with the strategies they name
    cursor = connection.cursor()
    cursor.execute("SET recsql.strategy = distributed")
    cursor.close()
    yield connection
    connection.close()


@pytest.fixture
def cur(conn):
    cursor = conn.cursor()
    yield cursor
    cursor.close()


def pytest_generate_tests(metafunc):
    marker = metafunc.definition.get_closest_marker("strategies")
    if marker is not None and "strategy" in metafunc.fixturenames:
        metafunc.parametrize("strategy", marker.args, indirect=True)


def pytest_collection_modifyitems(config, items):
    """Mark `spark` every test that reaches the shared connection, but under recsql.strategy = local."""
    for item in items:
        params = item.callspec.params if hasattr(item, "callspec") else {}
        reached = SPARK_FIXTURES & set(item.fixturenames)
        if reached and (params.get("strategy") != "local" or "spark" in reached):
            item.add_marker(pytest.mark.spark)


@pytest.fixture
def strategy(request, conn, monkeypatch):
    """The test under SET recsql.strategy = its parameter (the suite's strategy again afterwards); yields
    the strata that ran with it. Under `local`, a test that ran recursive strata must have run them all
    locally: the strategy is forced, nothing may fall back to Spark."""
    name = getattr(request, "param", "distributed")
    with counting_runs(conn, monkeypatch, name) as runs:
        yield runs
    if name == "local":
        assert not runs.others, f"strata ran on Spark under recsql.strategy = local: {runs.others}"
