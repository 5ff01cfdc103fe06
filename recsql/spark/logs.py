"""Spark's own output kept off the terminal unless asked for.

Spark's JVM writes to the standard error it is started with: the JVM's warnings, the start-up lines of
its log (printed before any log level can be set) and later its log itself; the Python workers it starts
write there too. Unless a log level is asked for, the JVM is started with its standard error on a log
file, and its log level is WARN.
"""

from __future__ import annotations

import getpass
import os
import tempfile
from pathlib import Path

from recsql.errors import ProgrammingError

LEVELS = ("off", "fatal", "error", "warn", "info", "debug", "trace", "all")
QUIET = "off"  # nothing on the terminal: Spark's log goes to the log file, at level WARN
FILE_LEVEL = "WARN"
LOG_BYTES = 16 << 20  # a log file past this size is started afresh
# PySpark's own loggers in this process, which print a failed query's JVM stack trace to stderr (recsql
# turns the failure into an exception that says what went wrong)
PYSPARK_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def log_file() -> Path:
    """Where Spark's output goes when it is kept off the terminal (`RECSQL_LOG`, or a file of this user's
    in the temporary directory)."""
    chosen = os.environ.get("RECSQL_LOG")
    if chosen:
        return Path(chosen).expanduser()
    return Path(tempfile.gettempdir()) / f"recsql-{getpass.getuser()}" / "spark.log"


def checked_level(level: str | None) -> str:
    chosen = (level or QUIET).strip("'\" ").lower()
    if chosen not in LEVELS:
        raise ProgrammingError(f"recsql.log_level takes one of {', '.join(LEVELS)}, not {level!r}")
    return chosen


def launch_jvm(settings: dict[str, str], level: str) -> None:
    """With `level` off, start Spark's JVM (if none runs) with its standard output and error on the log
    file, for its whole life and its Python workers'. Nothing of this process's own output moves
    meanwhile: it may be printing results or drawing a prompt on another thread; and a pipe this
    process writes to ends when it ends, not when the JVM, which outlives it by a moment, does. Any
    other level leaves the JVM to Spark, on this process's standard output and error."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if level != QUIET:
        return
    with SparkContext._lock:
        if SparkContext._gateway is not None:
            return
        path = log_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > LOG_BYTES:
            path.unlink()
        conf = SparkConf().setAll(list(settings.items()))  # given to spark-submit, as Spark's own launch does
        with open(path, "ab") as log:
            gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
        SparkContext._ensure_initialized(gateway=gateway)


def quiet_pyspark(level: str) -> None:
    """With `level` off, PySpark's loggers of failed queries print nothing."""
    if level != QUIET:
        return
    from pyspark.logger import PySparkLogger

    for name in PYSPARK_LOGGERS:
        PySparkLogger.getLogger(name).disabled = True  # a PySparkLogger: PySpark logs with its arguments


def spark_level(level: str) -> str:
    """The level Spark's log is set to once the JVM is up."""
    return FILE_LEVEL if level == QUIET else level.upper()
