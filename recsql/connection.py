"""DB-API 2.0 connection: one Spark session, one catalog, one set of settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pyarrow as pa
from pyspark import SparkContext
from pyspark.sql import DataFrame, SparkSession

from recsql import notebook
from recsql.catalog.catalog import Catalog
from recsql.cursor import Cursor
from recsql.engine.progress import ProgressListener
from recsql.errors import InterfaceError, NotSupportedError, internal_errors
from recsql.session import Session
from recsql.settings import PREFIX, Settings, SparkStart
from recsql.spark import logs as spark_logs
from recsql.spark import start as spark_start
from recsql.spark.errors import spark_errors
from recsql.spark.lazy import LazySpark


def connect(
    master: str | None = None,
    conf: dict[str, Any] | None = None,
    warehouse: str | None = None,
    log_level: str | None = None,
    remote: str | None = None,
    spark: SparkSession | None = None,
) -> Connection:
    """Open a connection on an embedded local Spark (`local[*]`), on `master`, on the Spark Connect
    server `remote` (`sc://host:port`), or on `spark`, a session the caller holds (classic or Spark
    Connect), used as it is and never stopped by recsql.

    Returns at once: Spark starts on a background thread (`recsql.spark_start = background`, the
    default) or when a statement first needs it (`on_demand`), and a statement that runs in this
    process never waits for it. A Spark that cannot start (no Java, an unreachable master) is an
    OperationalError of the first statement that needs it; a Spark Connect server that cannot be reached
    is one of connect().

    `conf` holds Spark settings and recsql settings (`recsql.max_iterations`, ...); `warehouse` is where
    tables persist (default `$RECSQL_WAREHOUSE` or `~/.recsql`); `log_level` (or `recsql.log_level`) puts
    Spark's log on the terminal at that level (`warn`, `info`, ...): by default it goes to a log file
    (recsql.spark.logs.log_file) and nothing is printed."""
    given = [kind for kind, value in (("master", master), ("remote", remote), ("spark", spark)) if value is not None]
    if len(given) > 1:
        raise InterfaceError(f"connect() takes one of master, remote and spark, not {' and '.join(given)}")
    conf = {str(k): str(v) for k, v in (conf or {}).items()}
    directory = warehouse_path(
        warehouse or conf.pop(PREFIX + "warehouse", None) or os.environ.get("RECSQL_WAREHOUSE") or "~/.recsql"
    )
    level = spark_logs.checked_level(log_level or conf.pop(PREFIX + "log_level", None))
    settings = Settings()
    spark_conf = {}
    for key, value in conf.items():
        if key.startswith(PREFIX):
            settings.set(key, value)
        else:
            spark_conf[key] = value
    if spark is not None:
        with spark_errors("connect(spark=...)"):
            lazy = LazySpark.of(spark_start.adopt(spark, spark_conf))
        return connection_on(lazy, directory, settings)
    if remote:
        spark_start.check_remote(remote)
        lazy = LazySpark(lambda chosen: spark_start.remote(remote, chosen, level), spark_conf, remote=remote)
    else:
        master = master or "local[*]"
        lazy = LazySpark(
            lambda chosen: spark_start.embedded(master, chosen, level),
            spark_start.embedded_settings(spark_conf),
            master=master,
        )
    if SparkContext._active_spark_context is not None and not remote:
        lazy.session()  # this process runs Spark already: the connection shares it (as its names)
    elif settings.spark_start == SparkStart.BACKGROUND:
        lazy.start()
    return connection_on(lazy, directory, settings)


def connection_on(spark: LazySpark, directory: Path, settings: Settings) -> Connection:
    """A connection, showing its statements' progress in the cell running them when in a Jupyter kernel."""
    connection = Connection(Session(spark, Catalog(spark, directory), settings))
    if notebook.in_kernel():
        connection.progress = notebook.NotebookProgress()
    return connection


def warehouse_path(location: str) -> Path:
    """The directory of a warehouse given as a path or a `file:` URI. The warehouse is a directory of
    this machine's file system: on a cluster, one mounted at the same path on every host (NFS, or an
    object store or HDFS through a FUSE mount)."""
    parts = urlsplit(location)
    if len(parts.scheme) <= 1:  # a path (a Windows drive letter is no scheme)
        return Path(location)
    if parts.scheme == "file" and parts.netloc in ("", "localhost"):
        return Path(unquote(parts.path))
    raise NotSupportedError(
        f"the warehouse {location} is not on this machine's file system: give a path or a "
        "file: URI (a shared file system mounted at the same path on every host)"
    )


def as_arrow(data: Any) -> pa.Table:
    """A pandas DataFrame, Arrow table or record batch as an Arrow table (Spark takes Arrow directly)."""
    if isinstance(data, pa.Table):
        return without_views(data)
    if isinstance(data, pa.RecordBatch):
        return without_views(pa.Table.from_batches([data]))
    if type(data).__module__.startswith("pandas"):
        return pa.Table.from_pandas(data, preserve_index=False)
    raise InterfaceError(
        f"register() takes a pandas DataFrame, a pyarrow Table or a Spark DataFrame, not {type(data).__name__}"
    )


VIEW_TYPES = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}


def without_views(table: pa.Table) -> pa.Table:
    """`table` with string/binary view columns (as newer Parquet writers produce) as plain string/binary
    columns, which Spark converts."""
    if not any(field.type in VIEW_TYPES for field in table.schema):
        return table
    return table.cast(pa.schema([field.with_type(VIEW_TYPES.get(field.type, field.type)) for field in table.schema]))


class Connection:
    def __init__(self, session: Session):
        self._session: Session | None = session

    @property
    def session(self) -> Session:
        if self._session is None:
            raise InterfaceError("the connection is closed")
        return self._session

    @property
    def spark_session(self) -> SparkSession:
        """The Spark session, started now if it is not yet (waits while it starts)."""
        return self.session.spark

    @property
    def spark_starting(self) -> bool:
        """Whether a statement of this connection is waiting for Spark to start."""
        return self.session.lazy_spark.starting

    @property
    def base_dir(self) -> Path:
        """Relative paths in CREATE TABLE ... OPTIONS (path ...) are resolved against this directory."""
        return self.session.base_dir

    @base_dir.setter
    def base_dir(self, value: str | os.PathLike) -> None:
        self.session.base_dir = Path(value)

    def cursor(self, on_spark: bool = False) -> Cursor:
        """A cursor; `on_spark`: its answers that Spark computes stay on the executors until fetched (for
        `fetch_spark()` without sending rows through this process), else they are collected at once."""
        return Cursor(self.session, on_spark)

    def register(self, name: str, data: Any) -> None:
        """Make a pandas DataFrame, Arrow table or Spark DataFrame queryable as table `name` (this session only)."""
        session = self.session
        with internal_errors(f"register('{name}', ...)"), spark_errors(f"register('{name}')"):
            if isinstance(data, DataFrame):
                session.catalog.register(name, data)
            else:
                session.catalog.register(name, None, as_arrow(data))

    @property
    def progress(self) -> ProgressListener | None:
        """Called with a `Progress` event after each iteration of a recursive evaluation (None: no events)."""
        return self.session.progress

    @progress.setter
    def progress(self, listener: ProgressListener | None) -> None:
        self.session.progress = listener

    def cancel(self) -> None:
        """Stop the statement running on this connection (from another thread); it raises QueryCancelled."""
        self.session.cancellation.cancel()

    def commit(self) -> None:
        """Every statement is committed when it runs."""
        _ = self.session  # a closed connection raises

    def rollback(self) -> None:
        raise NotSupportedError("transactions are not supported: every statement is committed when it runs")

    def close(self) -> None:
        """Closing a connection leaves the Spark session to other connections of the process."""
        self._session = None

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
