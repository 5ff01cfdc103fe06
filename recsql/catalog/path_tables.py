"""Path tables: files named in a query (`parquet.`/data/edges``, `csv.`...``, `json.`...``, `orc.`...``,
`delta.`...``), read as Spark reads that format with its default options: in this process by recsql's
readers when they can (a Delta table by recsql's own reader), else by Spark.

Answers as `Registered` does (a schema, Arrow rows, a Spark frame, a version, statistics), so that the
catalog treats all three kinds of session data alike. A statement reads each path table as it was when
the statement first read it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from recsql import statistics
from recsql.catalog.file_reads import FileReads
from recsql.catalog.readers import FileTable, Refused
from recsql.errors import NotSupportedError
from recsql.statistics import TableStatistics
from recsql.storage.delta import ManagedTable
from recsql.storage.files import data_version, snapshot_frame
from recsql.storage.snapshots import Snapshot

DELTA = "delta"


def path_table_name(format: str, path: str) -> str:
    """The relation name of a path table, as written in SQL: parquet.`/data/edges`."""
    return f"{format.lower()}.`{path}`"


class PathTables:
    def __init__(self, spark: Callable[[], SparkSession], reads: FileReads, timezone: Callable[[], str]):
        self.spark = spark
        self.reads = reads
        self.timezone = timezone
        self.paths: dict[str, tuple[str, str]] = {}  # relation name → (format, path as written)
        self.deltas: dict[str, ManagedTable] = {}
        self.snapshots: dict[str, Snapshot] = {}  # this statement's
        self.frames: dict[str, tuple[str, DataFrame]] = {}  # Spark's frame of a path table, by version
        self.statistics: dict[tuple[str, str], TableStatistics] = {}  # by name and version

    def begin_statement(self) -> None:
        self.snapshots.clear()

    def add(self, format: str, path: str) -> str:
        """The relation name of `format`.`path`, remembered for the engine to read."""
        name = path_table_name(format, path)
        key = name.lower()
        known = self.paths.get(key)
        if known is not None and known[1] != path:
            raise NotSupportedError(f"path tables '{name}' and '{path_table_name(*known)}' differ only in case")
        self.paths[key] = (format.lower(), path)
        return key

    def __contains__(self, name: object) -> bool:
        return name in self.paths

    # ------------------------------------------------------------------ rows

    def read(self, name: str) -> FileTable | Refused:
        """The table's rows as read in this process, or why Spark reads them."""
        format, path = self.paths[name]
        if format == DELTA:
            snapshot = self.snapshot(name)
            return FileTable(snapshot.schema, snapshot.read_arrow())
        return self.reads.load(format, path, {}, None, self.timezone())

    def arrow_table(self, name: str) -> pa.Table | str:
        read = self.read(name)
        return read.table if isinstance(read, FileTable) else str(read)

    def schema(self, name: str) -> StructType:
        read = self.read(name)
        return read.schema if isinstance(read, FileTable) else self[name].schema

    def __getitem__(self, name: str) -> DataFrame:
        """The table as a Spark DataFrame (made once per version of its files)."""
        version = self.version(name)
        known = self.frames.get(name)
        if known is None or known[0] != version:
            format, path = self.paths[name]
            spark = self.spark()
            frame = (
                snapshot_frame(spark, self.snapshot(name), False)
                if format == DELTA
                else spark.read.format(format).load(path)
            )
            self.frames[name] = known = (version, frame)
        return known[1]

    def snapshot(self, name: str) -> Snapshot:
        if name not in self.snapshots:
            if name not in self.deltas:
                self.deltas[name] = ManagedTable(name, Path(self.paths[name][1]))
            self.snapshots[name] = self.deltas[name].snapshot(None)
        return self.snapshots[name]

    def version(self, name: str) -> str:
        format, path = self.paths[name]
        return self.snapshot(name).identity if format == DELTA else data_version(path)

    # ------------------------------------------------------------------ statistics

    def table_statistics(self, name: str) -> TableStatistics:
        key = (name, self.version(name))
        if key not in self.statistics:
            self.analyze(name)
        return self.statistics[key]

    def analyze(self, name: str) -> TableStatistics:
        """Gather statistics now: from the rows read in this process, else with one Spark job."""
        table = self.arrow_table(name)
        gathered = statistics.from_arrow(table) if isinstance(table, pa.Table) else statistics.from_spark(self[name])
        self.statistics[(name, self.version(name))] = gathered
        return gathered
