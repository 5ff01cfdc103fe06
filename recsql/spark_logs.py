"""Spark's own output kept off the terminal unless asked for.

Spark's JVM writes to the standard error it is started with: the JVM's warnings, the start-up lines of
its log (printed before any log level can be set) and later its log itself; the Python workers it starts
write there too. Unless a log level is asked for, the JVM is started with this process's standard error
pointing at a log file, which it keeps for its whole life, and its log level is WARN; this process gets
its own standard error back as soon as the JVM has started (standard output is left alone: a shell may be
drawing its prompt there meanwhile).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import sys
import tempfile
from pathlib import Path
from typing import Iterator

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


@contextlib.contextmanager
def jvm_output(level: str) -> Iterator[None]:
    """While Spark's JVM starts: with `level` off, this process's standard error points at the log file,
    for the JVM to inherit."""
    if level != QUIET or not jvm_starts():
        yield
        return
    path = log_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.stat().st_size > LOG_BYTES:
        path.unlink()
    sys.stderr.flush()
    saved = os.dup(2)
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(log, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log)


def quiet_pyspark(level: str) -> None:
    """With `level` off, PySpark's loggers of failed queries print nothing."""
    if level != QUIET:
        return
    from pyspark.logger import PySparkLogger

    for name in PYSPARK_LOGGERS:
        PySparkLogger.getLogger(name).disabled = True  # a PySparkLogger: PySpark logs with its arguments


def jvm_starts() -> bool:
    """Whether starting a Spark session in this process starts a JVM (no gateway is up yet)."""
    from pyspark import SparkContext

    return SparkContext._gateway is None


def spark_level(level: str) -> str:
    """The level Spark's log is set to once the JVM is up."""
    return FILE_LEVEL if level == QUIET else level.upper()
