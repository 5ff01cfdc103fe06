"""Tables recsql reads but does not keep: the names Spark's catalog knows (temporary and global temporary
views, tables of its databases and catalogs, the Hive metastore's when the session uses one).

A name that is not recsql's own is looked up here, once per statement: a statement reads each such table
as it was when first looked up, and a view created between two statements is seen by the second. While
Spark is not running and its catalog keeps nothing between sessions, it knows no name: looking one up
starts nothing.
Statistics come from Spark's catalog when it has them (ANALYZE TABLE ... FOR ALL COLUMNS in Spark),
else from one aggregation job, kept for the session as long as Spark's plan of the table is the same.
"""

from __future__ import annotations

import re

import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from recsql import statistics
from recsql.spark.lazy import LazySpark
from recsql.spark.session_kinds import arrow_frame
from recsql.statistics import ColumnStatistics, TableStatistics
from recsql.storage.writes import Rows, row_count

SIZE = re.compile(r"(?:(\d+) bytes)?(?:, )?(?:(\d+) rows)?")


def is_internal(name: str) -> bool:
    """Whether a Spark view is one recsql made for its own queries (catalog.view, engine Views)."""
    return name.lower().startswith("recsql_")


class SparkTables:
    """The tables of Spark's catalog a session's statements read, by (lower-case) relation name. Answers
    as `Registered` does (a frame, a version, statistics), so that the catalog treats both alike."""

    def __init__(self, spark: LazySpark):
        self.lazy_spark = spark
        self.frames: dict[str, DataFrame | None] = {}  # this statement's lookups (None: Spark has no such name)
        self.statements = 0
        self.statistics: dict[tuple[str, int], TableStatistics] = {}  # by name and plan

    @property
    def spark(self) -> SparkSession:
        return self.lazy_spark.session()

    # ------------------------------------------------------------------ names

    def begin_statement(self) -> None:
        """Forget the lookups of the last statement: Spark's tables may have changed since."""
        self.frames.clear()
        self.statements += 1

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.lookup(name) is not None

    def __getitem__(self, name: str) -> DataFrame:
        frame = self.lookup(name)
        if frame is None:
            raise KeyError(name)
        return frame

    def lookup(self, name: str) -> DataFrame | None:
        if name not in self.frames:
            self.frames[name] = self.read(name)
        return self.frames[name]

    def read(self, name: str) -> DataFrame | None:
        if is_internal(name) or not self.lazy_spark.may_know_names() or not self.spark.catalog.tableExists(name):
            return None
        try:
            frame = self.spark.table(name)
            _ = frame.columns  # analysed now (a Spark Connect frame is analysed lazily)
        except AnalysisException:
            return None
        return frame

    def schema(self, name: str) -> StructType:
        return self[name].schema

    def arrow_table(self, name: str) -> str:
        """Why Spark reads it: only Spark reads its tables."""
        return "a table of Spark's catalog"

    def version(self, name: str) -> str:
        """What a table is at present, as far as recsql can tell: Spark does not say when a table of its
        catalog changes, so each statement reads it afresh."""
        return f"spark {self.statements}"

    def names(self, database: str | None = None) -> list[str]:
        """The tables and views Spark lists in `database`, or in its current database with the temporary
        views (Spark lists those in every database: only here are they named)."""
        if not self.lazy_spark.may_know_names():
            return []
        listed = [table for table in self.spark.catalog.listTables(database) if not is_internal(table.name)]
        if database is None:
            return [table.name.lower() for table in listed]
        return [
            f"{database}.{table.name}".lower()
            for table in listed
            if not table.isTemporary or (table.namespace or [None])[0] == database
        ]

    # ------------------------------------------------------------------ statistics

    def table_statistics(self, name: str) -> TableStatistics:
        key = (name, self[name].semanticHash())
        if key not in self.statistics:
            self.statistics[key] = self.kept_by_spark(name) or statistics.from_spark(self[name])
        return self.statistics[key]

    def analyze(self, name: str) -> TableStatistics:
        """Gather statistics now (recsql's ANALYZE TABLE), with one Spark job."""
        key = (name, self[name].semanticHash())
        self.statistics[key] = statistics.from_spark(self[name])
        return self.statistics[key]

    def kept_by_spark(self, name: str) -> TableStatistics | None:
        """The statistics Spark's catalog keeps of a table, if it has row and column statistics."""
        if not self.spark.catalog.tableExists(name):
            return None
        try:
            described = {row[0]: row[1] for row in self.spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()}
            rows = SIZE.fullmatch(described.get("Statistics") or "")
            if rows is None or rows.group(2) is None:
                return None
            total = int(rows.group(2))
            columns = [self.column_statistics(name, column, total) for column in self[name].columns]
        except AnalysisException:  # a temporary view: Spark keeps no statistics of it
            return None
        if any(column is None for column in columns):
            return None
        return TableStatistics(total, tuple(columns))

    def column_statistics(self, name: str, column: str, rows: int) -> ColumnStatistics | None:
        described = {row[0]: row[1] for row in self.spark.sql(f"DESCRIBE TABLE EXTENDED {name} `{column}`").collect()}
        distinct, nulls = described.get("distinct_count"), described.get("num_nulls")
        if distinct in (None, "NULL") or nulls in (None, "NULL"):
            return None
        return ColumnStatistics(
            int(distinct),
            int(nulls) / rows if rows else 0.0,
            statistics.numeric(described.get("min")),
            statistics.numeric(described.get("max")),
        )

    # ------------------------------------------------------------------ changes

    def owns(self, name: str) -> bool:
        """Whether a name a statement changes is Spark's: qualified (`db.t`: recsql's own names have one
        part), or a table or view Spark knows."""
        return "." in name or name in self

    def insert(self, name: str, rows: Rows) -> int:
        """INSERT INTO a table of Spark's catalog, by column position as SQL inserts; Spark's table format
        decides whether a failed insert leaves part of its rows."""
        frame = self.frame_of(rows)
        written = row_count(rows)
        frame.write.insertInto(name)
        return written

    def create(self, name: str, rows: Rows, replace: bool) -> int:
        """CREATE [OR REPLACE] TABLE db.t AS SELECT: a table of Spark's catalog, in its default format."""
        frame = self.frame_of(rows)
        written = row_count(rows)
        frame.write.mode("overwrite" if replace else "errorifexists").saveAsTable(name)
        return written

    def frame_of(self, rows: Rows) -> DataFrame:
        return arrow_frame(self.spark, rows) if isinstance(rows, pa.Table) else rows
