"""Shared fixtures: one Spark session and one recsql connection for the whole run."""

from __future__ import annotations

import pytest

import recsql

TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.memory": "2g",
}


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory):
    return tmp_path_factory.mktemp("warehouse")


@pytest.fixture(scope="session")
def conn(warehouse):
    connection = recsql.connect(master="local[2]", conf=TEST_CONF, warehouse=str(warehouse))
    # the suites check the distributed evaluation on their small data (which `auto` would run locally);
    # test_local_strategy.py runs their recursive cases again with the local strategy
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
