"""The Spark a connection runs on, started only when a statement needs it.

Starting Spark takes seconds (a JVM with its driver, or a session on a Spark Connect server), and most
statements over small data never need it: they run in this process. A `LazySpark` knows how to start
Spark and the settings it will be given, answers what recsql reads of Spark's settings before Spark runs
(the session time zone, ANSI mode, shuffle partitions, the master), and starts it when first asked for
the session, or earlier on a background thread (`recsql.spark_start = background`); only what uses Spark
waits for it. A failed start is kept: every later use raises why.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING

from recsql.cancellation import interruptible
from recsql.errors import Error, OperationalError, QueryCancelled
from recsql.spark import defaults as spark_defaults
from recsql.spark.session_kinds import is_connect, local_cores, task_slots

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Starter = Callable[[dict[str, str]], "SparkSession"]  # starts Spark with these settings
CATALOG_SETTINGS = ("spark.sql.catalogImplementation", "spark.sql.catalog.")  # catalogs that outlive a session


class LazySpark:
    def __init__(self, start: Starter, settings: dict[str, str], master: str | None = None, remote: str | None = None):
        self._start = start
        self._settings = dict(settings)  # given to Spark when it starts: connect()'s conf, SETs made before
        self._read: dict[str, str | None] = {}  # settings read from the running Spark (a round trip each)
        self.master = master  # None on Spark Connect
        self.remote = remote
        self._future: Future[SparkSession] | None = None
        self._launched = False
        self._lock = threading.Lock()
        self._waiting = 0  # statements waiting for Spark to start now
        self.on_use: Callable[[SparkSession], None] | None = None  # called on each use (tags the statement's jobs)
        self.adopted = False  # a session the caller started and keeps

    @classmethod
    def of(cls, spark: SparkSession) -> LazySpark:
        """A session already running (recsql.connect(spark=...)): used as it is, never started again."""
        lazy = cls(lambda _: spark, {}, master=None if is_connect(spark) else spark.sparkContext.master)
        lazy.adopted = True
        lazy.session()
        return lazy

    # ------------------------------------------------------------------ starting

    def start(self) -> None:
        """Start Spark on a background thread, if it is not started or starting."""
        self._begin(background=True)

    def session(self) -> SparkSession:
        """The Spark session, started now if it is not yet; waits while it starts (a cancel of the running
        statement stops the wait). Raises OperationalError when Spark could not start."""
        future = self._begin(background=False)
        if not future.done():
            self._wait(future)
        error = future.exception()
        if error is not None:
            if isinstance(error, Error):  # raised afresh at each use: the same class, the same message
                raise type(error)(error.message) from None
            raise OperationalError(f"cannot start Spark: {error}") from None
        spark = future.result()
        if self.on_use is not None:
            self.on_use(spark)
        return spark

    @property
    def started(self) -> bool:
        """Whether Spark runs (started, and not failed)."""
        future = self._future
        return future is not None and future.done() and future.exception() is None

    @property
    def starting(self) -> bool:
        """Whether a statement is waiting for Spark to start (the shell shows it)."""
        return self._waiting > 0

    def running(self) -> SparkSession | None:
        """The Spark session if it runs, without starting or waiting for it."""
        return self._future.result() if self.started else None

    def on_failure(self, report: Callable[[BaseException], None]) -> None:
        """Call `report` with the reason should Spark fail to start (at once if it already failed)."""
        self._begin(background=None).add_done_callback(
            lambda future: future.exception() is not None and report(future.exception())
        )

    def _begin(self, background: bool | None) -> Future[SparkSession]:
        """The future of the session: started here (background False), on a thread (True), or not at all
        (None: only made, for callbacks)."""
        with self._lock:
            if self._future is None:
                self._future = Future()
            future = self._future
            if background is None or self._launched:
                return future
            self._launched = True
        if background:
            threading.Thread(target=self._run, args=(future,), name="recsql-spark-start", daemon=True).start()
        else:
            self._run(future)
        return future

    def _run(self, future: Future[SparkSession]) -> None:
        try:
            future.set_result(self._start(dict(self._settings)))
        except BaseException as error:
            future.set_exception(error)

    def _wait(self, future: Future[SparkSession]) -> None:
        stop = threading.Event()
        future.add_done_callback(lambda _: stop.set())
        with self._counted(), interruptible(stop.set):
            stop.wait()
        if not future.done():
            raise QueryCancelled("query cancelled")

    @contextlib.contextmanager
    def _counted(self) -> Iterator[None]:
        with self._lock:
            self._waiting += 1
        try:
            yield
        finally:
            with self._lock:
                self._waiting -= 1

    # ------------------------------------------------------------------ settings

    def get_setting(self, key: str) -> str | None:
        """A Spark setting as Spark has or will have it: asked of Spark once it runs (or of a Spark
        Connect server, which fixes its own defaults), else as it will be given to Spark. Asked once: a
        setting changes through set_setting (SET), which forgets what was read."""
        spark = self.running()
        if spark is None and key not in self._settings and self.remote is not None:
            spark = self.session()
        if spark is not None:
            if key not in self._read:
                try:
                    self._read[key] = spark.conf.get(key)  # with Spark's default (one given here would replace it)
                except Exception:
                    return None
            return self._read[key]
        if key in self._settings:
            return self._settings[key]
        return spark_defaults.value(key)

    def set_setting(self, key: str, value: str) -> None:
        """SET of a Spark setting: applied now if Spark runs, else given to Spark when it starts (so even
        settings Spark fixes at start, such as memory, take effect)."""
        with self._lock:
            pending = not self._launched
            if pending:
                self._settings[key] = value
            self._read.pop(key, None)
        if not pending:
            self.session().conf.set(key, value)

    @property
    def task_slots(self) -> int | None:
        """How many tasks Spark runs at once (a barrier stage may have no more): a local master's cores,
        else what a running Spark says; None before a cluster's Spark runs."""
        if self.master is not None and (cores := local_cores(self.master)) is not None:
            return cores
        spark = self.running()
        return None if spark is None else task_slots(spark)

    def may_know_names(self) -> bool:
        """Whether Spark's catalog may hold names recsql does not: Spark runs in this process (anyone may
        have made views), it is a Spark Connect server's, or its catalog outlives a session (the Hive
        metastore, a configured catalog). Otherwise a name recsql does not know is no table at all."""
        from pyspark import SparkContext

        return (
            self.adopted
            or self.remote is not None
            or SparkContext._active_spark_context is not None
            or any(key.startswith(CATALOG_SETTINGS) for key in self._settings)
            or spark_defaults.value("spark.sql.catalogImplementation") == "hive"
        )
