"""Shared fixtures: one recsql connection (and one Spark session, started when a test first needs it) for the
whole run, and the suite's tiers.

The connection runs under recsql.strategy = auto, which runs the suite's small data in this process; a test whose
point is a strategy names it (`strategies.under`, `strategies.module_under`) and runs once per strategy named.

Tiers (markers, see pyproject.toml): `spark` marks a test that needs Spark: one run under a Spark strategy, one
using the `spark` fixtures, one marked so by hand. A test not marked `spark` that would start Spark fails, saying
so: the mark is kept true. `cluster` marks tests that start Spark processes of their
own, `slow` those that take long even on the suite's small data. `pytest -m "not spark and not cluster and not
slow"` runs the pure and local tests, without a JVM.

With RECSQL_TEST_REMOTE set (`sc://host:port`), the connection is a Spark Connect session on that server
instead of an embedded Spark: tests/test_spark_connect.py runs suites so, in a process of their own."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator

import pytest
from pyspark import SparkContext

import recsql
from recsql.spark.lazy import LazySpark

pytest.register_assert_rewrite("duckdb_reference")  # before any test module imports it: its asserts explain themselves

from strategies import SPARK, Runs, counting_runs  # noqa: E402 - after the rewrite is registered

TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.memory": "2g",
    "recsql.spark_start": "on_demand",  # tests that run everything in this process never start a JVM
}
SPARK_FIXTURES = {"spark", "spark_tables"}  # fixtures that are Spark's own


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
    yield connection
    connection.close()


@pytest.fixture(autouse=True)
def settings_restored(request):
    """A test's SET recsql.* lasts for the test: the shared connection's settings are as before after it."""
    if "conn" not in request.fixturenames:
        yield
        return
    settings = request.getfixturevalue("conn").session.settings
    before = dataclasses.replace(settings)
    yield
    for field in dataclasses.fields(settings):
        setattr(settings, field.name, getattr(before, field.name))


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
    """Mark `spark` the tests run under a Spark strategy and those using Spark's own fixtures."""
    for item in items:
        params = item.callspec.params if hasattr(item, "callspec") else {}
        if params.get("strategy", "local") != "local" or SPARK_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.spark)


@contextlib.contextmanager
def spark_refused(item: pytest.Item) -> Iterator[None]:
    """A test not marked `spark` must not need Spark: while no Spark runs in this process (in the fast tier,
    never), a statement that would start it fails the test, saying so. (Once it runs, recsql may ask it for
    names, and a new connection shares it.)"""
    if item.get_closest_marker("spark") is not None or "conn" not in item.fixturenames:
        yield
        return
    session = LazySpark.session

    def refused(self):
        if not self.started and SparkContext._active_spark_context is None:
            pytest.fail("this test needs Spark: mark it `spark` (pytest.mark.spark)", pytrace=False)
        return session(self)

    LazySpark.session = refused
    try:
        yield
    finally:
        LazySpark.session = session


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    with spark_refused(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    with spark_refused(item):
        result = yield
    runs = item.funcargs.get("strategy")
    if isinstance(runs, Runs) and item.callspec.params["strategy"] == SPARK and runs.strategy == "decomposed" and runs:
        runs.start_again("distributed")  # a stratum ran decomposed: the distributed strategy runs it otherwise
        item.runtest()
    return result


@pytest.fixture
def strategy(request, conn, monkeypatch):
    """The test under SET recsql.strategy = its parameter (the suite's strategy again afterwards; `spark`:
    decomposed, then maybe distributed, see strategies.py); yields the strata that ran with it. Under `local`,
    a test that ran recursive strata must have run them all locally: the strategy is forced, nothing may
    fall back to Spark."""
    name = getattr(request, "param", "distributed")
    with counting_runs(conn, monkeypatch, "decomposed" if name == SPARK else name) as runs:
        yield runs
    if name == "local":
        assert not runs.others, f"strata ran on Spark under recsql.strategy = local: {runs.others}"
