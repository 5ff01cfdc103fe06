"""What recsql asks of a Spark session that a classic session (a driver in this process) and a Spark
Connect session (a driver elsewhere, reached over gRPC: no SparkContext, no JVM here) answer differently.

Everything else recsql does with Spark goes through the DataFrame and SQL API both kinds share."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

CHECKPOINT_DIR = "spark.checkpoint.dir"


def is_connect(spark: SparkSession) -> bool:
    """Whether `spark` is a Spark Connect session (its driver is a server, not this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def default_parallelism(spark: SparkSession) -> int:
    """How many tasks the session's executors run at once (its cores), as Spark's default parallelism.

    A Connect session has no SparkContext to ask: Spark gives a range without a partition count its
    default parallelism, so the number of partitions of such a range (read as the largest partition id,
    one small job) is the answer, asked once per session."""
    if not is_connect(spark):
        return max(1, spark.sparkContext.defaultParallelism)
    if spark.session_id not in _connect_parallelism:
        from pyspark.sql import functions as F

        parts = spark.range(0, 1 << 12).select(F.spark_partition_id().alias("part"))
        _connect_parallelism[spark.session_id] = parts.agg(F.max("part")).collect()[0][0] + 1
    return _connect_parallelism[spark.session_id]


_connect_parallelism: dict[str, int] = {}  # by Spark Connect session id


@contextlib.contextmanager
def made_active(spark: SparkSession) -> Iterator[None]:
    """`spark` the active session of this thread while the block runs. A Spark Connect client binds the
    DataFrame a checkpoint returns to the active session, not to the one that made it: with several
    sessions on a server (a user's among them), the checkpoint would be read in the wrong one."""
    if not is_connect(spark):
        yield
        return
    active = type(spark)._active_session
    before = getattr(active, "session", None)
    active.session = spark
    try:
        yield
    finally:
        active.session = before


def checkpoint_dir(spark: SparkSession) -> str | None:
    """Where the session's reliable checkpoints go (`spark.checkpoint.dir`), or None: then only local
    checkpoints can be made."""
    if is_connect(spark):
        return spark.conf.get(CHECKPOINT_DIR, None) or None
    return spark.sparkContext.getCheckpointDir()


def arrow_frame(spark: SparkSession, table: pa.Table, schema: StructType | None = None) -> DataFrame:
    """An Arrow table as a DataFrame (of `schema` when given, else of the types Spark gives Arrow's).

    Only the table's nonempty record batches are sent: Spark's conversion ends at an empty batch other
    than the first, losing the rows after it (a table concatenated from the parts of a computation,
    some of them empty, has such batches). A table without rows is sent as one empty batch with its
    schema given outright: Spark Connect infers none from no rows, and Spark cannot convert a column of
    nested values from no batch at all."""
    from pyspark.sql.pandas.types import from_arrow_schema

    if table.num_rows == 0:
        return spark.createDataFrame(table.schema.empty_table(), schema=schema or from_arrow_schema(table.schema))
    batches = [batch for batch in table.to_batches() if batch.num_rows]
    return spark.createDataFrame(pa.Table.from_batches(batches, table.schema), schema=schema)


def task_slots(spark: SparkSession) -> int:
    """How many tasks Spark runs at once, which a barrier stage's tasks may not outnumber: a local
    master's cores; a cluster's free slots as Spark's barrier scheduling counts them; over Spark Connect,
    the default parallelism (the server's cores)."""
    if is_connect(spark):
        return default_parallelism(spark)
    cores = local_cores(spark.conf.get("spark.master", "") or "")
    if cores is not None:
        return cores
    context = spark.sparkContext._jsc.sc()  # type: ignore[union-attr]
    return max(1, context.maxNumConcurrentTasks(context.resourceProfileManager().defaultResourceProfile()))


def driver_host(spark: SparkSession) -> str | None:
    """The address executors reach this process's driver at; None over Spark Connect (the driver is the
    server's)."""
    if is_connect(spark):
        return None
    return spark.sparkContext.getConf().get("spark.driver.host")


LOCAL_MASTER = re.compile(r"local\[(\d+|\*)(?:,\s*\d+)?\]")  # local[N], local[*], local[N, retries]


def local_slots(spark: SparkSession) -> int | None:
    """How many tasks Spark runs at once when its tasks run on this machine (a local master, in this
    process's driver: they share its files); None elsewhere."""
    return None if is_connect(spark) else local_cores(spark.conf.get("spark.master", "") or "")


def local_cores(master: str) -> int | None:
    """The cores of a local master (`local`, `local[N]`, `local[*]`, `local[N, retries]`); None for a
    master whose workers may run elsewhere."""
    if master == "local":
        return 1
    cores = LOCAL_MASTER.fullmatch(master)
    if cores is None:
        return None
    return os.cpu_count() or 1 if cores.group(1) == "*" else int(cores.group(1))
