"""recsql in PySpark code: `recsql.sql(query)` runs a statement on a Spark session the caller holds and
returns its answer as a DataFrame of that session, as `spark.sql` does.

A connection is kept per session (made on first use, in the warehouse `recsql.warehouse` of the
session's settings, else `$RECSQL_WAREHOUSE` or `~/.recsql`), so the statements of one session share
recsql's settings and temporary names."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from recsql.connection import Connection, connect
from recsql.errors import InterfaceError
from recsql.settings import PREFIX

_connections: weakref.WeakKeyDictionary[SparkSession, Connection] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def sql(query: str, parameters: Sequence[Any] | None = None, *, spark: SparkSession | None = None) -> DataFrame:
    """The answer of `query` (recsql's SQL: recursive CTEs, aggregates in recursion, ...) as a DataFrame
    of `spark` (default: the active session). An answer Spark computed stays on its executors; a
    statement without an answer (CREATE TABLE, INSERT, SET) gives an empty DataFrame."""
    session = spark if spark is not None else SparkSession.getActiveSession()
    if session is None:
        raise InterfaceError("recsql.sql() needs a Spark session: start one, or pass spark=")
    cursor = connection_for(session).cursor(on_spark=True)
    cursor.execute(query, parameters)
    if cursor.description is None:
        return session.createDataFrame([], StructType([]))
    return cursor.fetch_spark()


def connection_for(spark: SparkSession) -> Connection:
    """The connection recsql keeps for `spark`, made on first use."""
    with _lock:
        connection = _connections.get(spark)
        if connection is None:
            connection = connect(spark=spark, warehouse=warehouse_of(spark))
            _connections[spark] = connection
        return connection


def warehouse_of(spark: SparkSession) -> str | None:
    """The session's `recsql.warehouse`, if it has one (else connect() picks the default)."""
    try:
        return spark.conf.get(PREFIX + "warehouse", None) or None
    except Exception:  # a stopped session: connect() says so
        return None
