"""Starting the Spark a connection runs on: a driver in this process (embedded `local[*]`, or a cluster's
master), or a session on a Spark Connect server, whose driver runs elsewhere. A connection starts it
when first needed (lazy.py)."""

from __future__ import annotations

import os
import sys

from pyspark import SparkContext
from pyspark.sql import SparkSession
from pyspark.sql.utils import is_remote

from recsql.errors import OperationalError, ProgrammingError
from recsql.spark import defaults as spark_defaults
from recsql.spark import logs as spark_logs
from recsql.spark import preflight, shipping
from recsql.spark.errors import first_line
from recsql.spark.session_kinds import is_connect

DEFAULT_SPARK_CONF = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    # tables are Delta Lake tables: timestamps as Delta stores them (not Spark's legacy INT96)
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}
# what a Spark Connect session is given by recsql: only what its tables need (the rest, such as the
# shuffle partitions, is the server's to choose)
REMOTE_DEFAULTS = {"spark.sql.parquet.outputTimestampType": DEFAULT_SPARK_CONF["spark.sql.parquet.outputTimestampType"]}


def embedded_settings(conf: dict[str, str]) -> dict[str, str]:
    """The settings an embedded Spark starts with: recsql's defaults, `conf`, the session time zone that
    the local evaluator follows too, and the driver's memory (each unless `conf` or Spark's defaults
    file sets it)."""
    settings = {**DEFAULT_SPARK_CONF, **conf}
    if not spark_defaults.configured(spark_defaults.TIME_ZONE, settings):
        settings[spark_defaults.TIME_ZONE] = spark_defaults.local_time_zone()
    if not spark_defaults.configured(spark_defaults.DRIVER_MEMORY, settings) and not os.environ.get(
        "SPARK_DRIVER_MEMORY"
    ):
        settings[spark_defaults.DRIVER_MEMORY] = spark_defaults.driver_memory()
    return settings


def embedded(master: str, settings: dict[str, str], level: str) -> SparkSession:
    """A Spark driver in this process on `master`, with `settings` (embedded_settings); its JVM's output
    goes to the log file unless `level` asks for it on the terminal."""
    if is_remote():
        raise OperationalError(
            "this process already has a Spark Connect session: a Spark driver of its own "
            f"(master {master}) needs another process"
        )
    workers_python = settings.get("spark.pyspark.python")
    if workers_python:  # PySpark takes the workers' Python from the environment only
        os.environ["PYSPARK_PYTHON"] = workers_python
    elif not shipping.runs_elsewhere(master):  # the workers run this interpreter, with recsql installed
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    preflight.check(master)
    options = {"spark.master": master, "spark.app.name": "recsql", **settings}
    try:
        spark_logs.launch_jvm(options, level)
        spark = SparkSession.builder.config(map=options).getOrCreate()
    except Exception as error:
        raise OperationalError(f"cannot start Spark (master {master}): {str(error).splitlines()[0]}") from None
    spark.sparkContext.setLogLevel(spark_logs.spark_level(level))
    spark_logs.quiet_pyspark(level)
    if shipping.runs_elsewhere(master):
        shipping.ship_code(spark)
    return spark


def check_remote(url: str) -> None:
    """What makes a Spark Connect session impossible, found at once: a bad URL, no server there, a Spark
    driver in this process already."""
    preflight.check_connect_server(url)
    if SparkContext._active_spark_context is not None:
        raise OperationalError(
            f"this process already runs a Spark driver: a Spark Connect session ({url}) needs another process"
        )


def remote(url: str, conf: dict[str, str], level: str) -> SparkSession:
    """A session on the Spark Connect server at `url` (`sc://host:port[/;param=value...]`), with recsql's
    code added to it for the server's Python workers. `conf` holds settings of the session: Spark SQL's
    runtime settings (the server's own are fixed when it starts, and asking for one is an error);
    `level` off keeps PySpark's loggers of failed queries quiet."""
    check_remote(url)
    try:
        spark = SparkSession.builder.remote(url).getOrCreate()
        spark.range(0).collect()  # the session is made on the server at its first request
    except Exception as error:
        raise OperationalError(f"cannot reach Spark Connect at {url}: {str(error).splitlines()[0]}") from None
    spark_logs.quiet_pyspark(level)
    apply_settings(spark, {**REMOTE_DEFAULTS, **conf}, "give them to the server when it starts")
    shipping.ship_code(spark)
    return spark


def adopt(spark: SparkSession, conf: dict[str, str]) -> SparkSession:
    """A session the caller started and keeps (classic or Spark Connect), used as it is: its settings,
    catalogs and temporary views; `conf` applied to it; recsql's code added where its Python workers run
    elsewhere. Raises OperationalError when the session is stopped or its server cannot be reached."""
    connect = is_connect(spark)
    if (connect and spark.is_stopped) or (not connect and spark.sparkContext._jsc is None):
        raise OperationalError("the Spark session given to connect() is stopped")
    if connect:  # found at once, not after the client's retries
        preflight.check_server_of(spark)
    try:
        master = None if connect else spark.sparkContext.master
        spark.conf.get(spark_defaults.TIME_ZONE)  # a round trip to a Spark Connect server
    except Exception as error:
        raise OperationalError(f"cannot use the Spark session given to connect(): {first_line(str(error))}") from None
    apply_settings(spark, {**REMOTE_DEFAULTS, **conf}, "a running session keeps them as it started")
    if connect or shipping.runs_elsewhere(master or ""):
        shipping.ship_code(spark)
    return spark


def apply_settings(spark: SparkSession, settings: dict[str, str], advice: str) -> None:
    """Set each setting the session does not have yet; ProgrammingError naming those it refuses (settings
    fixed when Spark starts, such as memory)."""
    refused = []
    for key, value in settings.items():
        try:
            if spark.conf.get(key, None) != value:
                spark.conf.set(key, value)
        except Exception as error:
            refused.append(f"{key} ({first_line(str(error))})")
    if refused:
        raise ProgrammingError(f"settings a running Spark session cannot change: {'; '.join(refused)}; {advice}")
