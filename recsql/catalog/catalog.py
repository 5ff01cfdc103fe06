"""The catalog: tables and views that persist in a warehouse directory, plus session-registered data.

Layout of the warehouse:

    format.json             the layout's version (older warehouses are upgraded when opened)
    catalog/<name>.json     one entry per table or view (storage/entries.py): created only where none
                            exists, replaced or removed by one rename, so a name is always a whole entry
                            or nothing
    tables/<name>-<id>/     a managed table: a Delta Lake table (Parquet files and _delta_log/)
    statistics/<name>.json  the optimizer's statistics of a table, with the data version they describe

Several processes may share a warehouse. Every statement reads each table at one version (a snapshot,
pinned for the statement), and every change to a managed table is one commit of its log: a statement
that fails, or a process that dies, leaves every table as it was.

The catalog answers the translator (names and columns), the engine (a table's rows for Spark or Arrow)
and the optimizer (statistics), and makes the changes of DDL and DML statements; what each part of it
does alone is in the modules it uses.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType
from sqlglot import exp

from recsql import statistics
from recsql.catalog.changes import TableChanges
from recsql.catalog.file_reads import FileReads
from recsql.catalog.path_tables import PathTables
from recsql.catalog.readers import FileTable, Refused
from recsql.catalog.registered import Registered
from recsql.catalog.spark_tables import SparkTables
from recsql.errors import ProgrammingError
from recsql.spark.defaults import TIME_ZONE
from recsql.spark.lazy import LazySpark
from recsql.spark.session_kinds import arrow_frame
from recsql.statistics import ColumnStatistics, TableStatistics
from recsql.storage.commits import AfterCommits
from recsql.storage.delta import ManagedTable
from recsql.storage.entries import DELTA_KINDS, Entry, EntryStore, Kind, view_query_of
from recsql.storage.files import (
    data_files,
    data_version,
    local_path,
    read_external,
    snapshot_frame,
    spark_options,
    with_file_column,
)
from recsql.storage.format import upgrade
from recsql.storage.kept_rows import INDEX_BUDGET_BYTES, KeptRows
from recsql.storage.names import FILE_COLUMN, FILES_MARK, split_state, split_version, version_name
from recsql.storage.snapshots import DataFile, Snapshot
from recsql.storage.statistics_files import StatisticsFiles
from translator import dialect

DESCRIPTIONS = {
    Kind.VIEW: "a view",
    Kind.MATERIALIZED: "a materialized view",
    Kind.EXTERNAL: "a table over external files",
    Kind.REGISTERED: "a registered DataFrame",
    Kind.SPARK: "a table of Spark's catalog or files",
}
NOT_A_NAME = re.compile(r"\W")  # characters of relation names that Spark view names cannot hold


class Catalog(TableChanges):
    ARROW_STATISTICS_BYTES = 1 << 30  # tables whose files are up to this size get their statistics in this process

    def __init__(self, spark: LazySpark, warehouse: Path):
        self.lazy_spark = spark
        self.warehouse = Path(warehouse).expanduser().resolve()
        self.metadata = self.warehouse / "catalog"
        self.statistics_dir = self.warehouse / "statistics"
        for directory in (self.metadata, self.warehouse / "tables", self.statistics_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self.entries = EntryStore(self.metadata)
        self.statistics_files = StatisticsFiles(self.statistics_dir)
        self.registered = Registered(lambda table: arrow_frame(self.spark, table))
        self.spark_tables = SparkTables(spark)
        self.file_reads = FileReads()
        self.kept_rows: KeptRows[pa.Table] = KeptRows()  # managed tables' rows by version
        self.kept_indexes: KeptRows = KeptRows(INDEX_BUDGET_BYTES)  # what views index their relations by, by version
        self.after_commits = AfterCommits(self.kept_rows, self.statistics_files, self.timezone)
        self.path_tables = PathTables(lambda: self.spark, self.file_reads, self.timezone)
        self.views: dict[str, tuple[str, str]] = {}  # relation → (the version it was read at, its Spark view)
        self.tables: dict[str, ManagedTable] = {}  # by directory: each keeps the log state it has read
        self.pinned: dict[str, Snapshot] | None = None  # the snapshots the running statement reads
        self.entries.finish_drops(self.remove_data)
        upgrade(self.warehouse, self.metadata)

    @property
    def spark(self) -> SparkSession:
        """Spark, for what only Spark reads (started now if it is not yet)."""
        return self.lazy_spark.session()

    def timezone(self) -> str:
        """Spark's session time zone: what a timestamp without one means."""
        return self.lazy_spark.get_setting(TIME_ZONE) or "UTC"

    # -------------------------------------------------------------- statements

    @contextlib.contextmanager
    def statement(self) -> Iterator[None]:
        """While a statement runs, each table it reads stays at the version it first read."""
        self.pinned = {}
        self.spark_tables.begin_statement()
        self.path_tables.begin_statement()
        try:
            yield
        finally:
            self.pinned = None

    # -------------------------------------------------------------- lookups (the translator's view)

    def table_columns(self, name: str) -> tuple[str, ...] | None:
        name = name.lower()
        source = self.session_data(name)
        if source is not None:
            return tuple(source.schema(name).fieldNames())
        entry = self.entry_of(name)
        if entry is None or entry.kind == Kind.VIEW:
            return None
        return tuple(self.schema(name).fieldNames())

    def path_table(self, format: str, path: str) -> str:
        """The relation name of a path table (`parquet.`/data/edges``)."""
        return self.path_tables.add(format, path)

    def session_data(self, name: str) -> Registered | PathTables | SparkTables | None:
        """Where a name that is not a stored table or view reads from: data registered in this session
        (which hides a stored table of its name), files named by their path, or a table Spark knows
        (which a stored one hides)."""
        if name in self.registered:
            return self.registered
        if name in self.path_tables:
            return self.path_tables
        if self.entry_of(name) is None and name in self.spark_tables:
            return self.spark_tables
        return None

    def is_spark_table(self, name: str) -> bool:
        """Whether a name a statement changes is Spark's: not recsql's own, and qualified (`db.t`) or
        known to Spark."""
        return self.entry(name) is None and name not in self.registered and self.spark_tables.owns(name)

    def view_query(self, name: str) -> exp.Expression | None:
        name = name.lower()
        entry = self.entry(name)
        if entry is None or entry.kind != Kind.VIEW or self.session_data(name) is not None:
            return None
        return view_query_of(dialect.parse_one(entry.sql))

    def versioned(self, name: str, kind: str, value: int | str) -> str:
        """The relation naming a table's version (`VERSION AS OF n`) or the version current at an
        instant (`TIMESTAMP AS OF '...'`)."""
        table = self.managed(name, f"{kind} AS OF")
        if kind == "TIMESTAMP":
            try:
                instant = datetime.datetime.fromisoformat(str(value))
            except ValueError:
                raise ProgrammingError(
                    f"TIMESTAMP AS OF takes a timestamp such as '2026-01-31 12:00:00', not {value!r}"
                ) from None
            version = table.version_at(
                instant.replace(tzinfo=None) if instant.tzinfo is None else instant.astimezone().replace(tzinfo=None)
            )
        else:
            version = int(value)
        table.snapshot(version)  # an error now if the table has no such version
        return version_name(name.lower(), version)

    def names(self, database: str | None = None) -> dict[str, Kind]:
        """Every table and view by name, with its kind: table, external, view, registered (this
        session's data, which hides a stored table of the same name), or Spark's (the temporary views
        and the tables of Spark's current database, or of `database`)."""
        spark = dict.fromkeys(self.spark_tables.names(database), Kind.SPARK)
        if database is not None:
            return dict(sorted(spark.items()))
        stored = {entry.name: entry.kind for entry in self.entries.all()}
        return dict(sorted({**spark, **stored, **dict.fromkeys(self.registered, Kind.REGISTERED)}.items()))

    def entry(self, name: str) -> Entry | None:
        return self.entries.get(name)

    def entry_of(self, name: str) -> Entry | None:
        """The entry a relation name reads: `t@3` and `t#files` t's, `v$r0` materialized view v's."""
        view, part = split_state(split_version(name)[0])
        entry = self.entry(view)
        return None if part is not None and (entry is None or entry.kind != Kind.MATERIALIZED) else entry

    def stored(self, name: str) -> Entry:
        """The entry of the stored table (not a view) a relation name (`t`, `t@3`, `t#files`) reads."""
        entry = self.entry_of(name)
        if entry is None or entry.kind == Kind.VIEW:
            raise ProgrammingError(f"table '{name}' not found")
        return entry

    def managed(self, name: str, needed_for: str = "this") -> ManagedTable:
        """The Delta table behind a managed table's name; `needed_for` says what for, in the error that
        another kind of name gets."""
        base = split_version(name)[0]
        entry = self.entry_of(base)
        kind = (
            Kind.REGISTERED
            if base in self.registered
            else entry.kind
            if entry is not None
            else Kind.SPARK
            if base in self.spark_tables
            else None
        )
        if kind is None:
            raise ProgrammingError(f"table '{base}' not found")
        part = split_state(base)[1]
        if kind not in DELTA_KINDS or (kind == Kind.MATERIALIZED and part is None and needed_for != "this"):
            raise ProgrammingError(f"'{base}' is {DESCRIPTIONS[kind]}: {needed_for} needs a table created by recsql")
        root = self.warehouse / entry.path / (part or entry.reflects["output"] if kind == Kind.MATERIALIZED else "")
        key = str(root)
        if key not in self.tables:
            self.tables[key] = ManagedTable(base, root)
        return self.tables[key]

    def snapshot(self, name: str) -> Snapshot:
        """The version of a managed table the running statement reads (`t@3`: version 3)."""
        base, version, _ = split_version(name)
        key = version_name(base, version)
        if self.pinned is not None and key in self.pinned:
            return self.pinned[key]
        entry = self.entry(base) if version is None else None
        if entry is not None and entry.kind == Kind.MATERIALIZED:  # the version its answer is current at
            version = entry.reflects["versions"][entry.reflects["output"]]
        snapshot = self.managed(name).snapshot(version)
        if self.pinned is not None:
            self.pinned[key] = snapshot
        return snapshot

    def restrict(self, name: str, files: tuple[DataFile, ...]) -> None:
        """For the rest of the statement, table `name` reads only these files of its snapshot (the files a
        DELETE, UPDATE or MERGE rewrites)."""
        self.pinned[name.lower()] = self.snapshot(name).restricted(files)

    def files_of(self, name: str, paths: list[str]) -> tuple[DataFile, ...]:
        """The files of the statement's snapshot that `paths` (values of the file column) name."""
        wanted = {local_path(path) for path in paths}
        return tuple(file for file in self.snapshot(name).files if file.path in wanted)

    # -------------------------------------------------------------- rows (the engine's view)

    def dataframe(self, name: str) -> DataFrame:
        name = name.lower()
        source = self.session_data(name)
        if source is not None:
            return source[name]
        entry = self.stored(name)
        if entry.kind in DELTA_KINDS:
            return snapshot_frame(self.spark, self.snapshot(name), split_version(name)[2])
        return read_external(self.spark, entry, self.struct_of(entry))

    def view(self, name: str) -> str:
        """The name of a Spark temporary view of a table's data, for SQL. A view is created once per
        version of the table and kept for the session: a query does not pay for it again."""
        name = name.lower()
        version = self.file_version(name)
        known = self.views.get(name)
        if known is not None and known[0] == version:
            return known[1]
        view = f"recsql_table_{NOT_A_NAME.sub('_', name)}_{uuid.uuid4().hex[:8]}"
        self.dataframe(name).createOrReplaceTempView(view)
        if known is not None:
            self.spark.catalog.dropTempView(known[1])
        self.views[name] = (version, view)
        return view

    def file_version(self, name: str) -> str:
        """What a table is at present: a managed table's version, a fingerprint of an external one's files."""
        name = name.lower()
        source = self.session_data(name)
        if source is not None:
            return source.version(name)
        entry = self.stored(name)
        if entry.kind in DELTA_KINDS:
            return self.snapshot(name).identity + (FILES_MARK if split_version(name)[2] else "")
        return json.dumps(entry.__dict__) + data_version(entry.path)

    def struct_of(self, entry: Entry) -> StructType:
        """An external table's schema: declared, or inferred from its files (by recsql's readers, else by
        Spark) and kept in its entry until they change (a query must not pay for inferring it again)."""
        if entry.struct is not None and entry.inferred_from is None:
            return entry.struct
        version = data_version(entry.path)
        if entry.struct is not None and entry.inferred_from == version:
            return entry.struct
        read = self.external_read(entry)
        struct = read.schema if isinstance(read, FileTable) else read_external(self.spark, entry, None).schema
        entry.schema, entry.inferred_from = json.loads(struct.json()), version
        if self.entry(entry.name) is not None:
            self.entries.publish(entry, replace=True)
        return struct

    def arrow_table(self, name: str) -> pa.Table | str:
        """A table's rows as Arrow, read in this process: registered Arrow data, a managed table, or files
        recsql's readers read as Spark does; else why only Spark reads it."""
        name = name.lower()
        source = self.session_data(name)
        if source is not None:
            return source.arrow_table(name)
        entry = self.stored(name)
        if entry.kind in DELTA_KINDS and split_version(name)[2]:
            return self.snapshot(name).read_arrow(FILE_COLUMN)
        if entry.kind in DELTA_KINDS:
            snapshot = self.snapshot(name)
            return self.kept_rows.get(snapshot.identity, snapshot.read_arrow)
        read = self.external_read(entry)
        return read.table if isinstance(read, FileTable) else str(read)

    def external_read(self, entry: Entry) -> FileTable | Refused:
        """An external table's files read in this process, under its declared schema or inferring one
        (kept while the files stay the same)."""
        declared = entry.struct if entry.inferred_from is None else None
        return self.file_reads.load(entry.format, entry.path, spark_options(entry, declared), declared, self.timezone())

    def small(self, name: str) -> bool:
        """Whether a table's files are small enough to be read in this process for their statistics."""
        entry = self.stored(name)
        size = (
            self.snapshot(name).bytes
            if entry.kind in DELTA_KINDS
            else sum(file.stat().st_size for file in data_files(entry.path))
        )
        return size <= self.ARROW_STATISTICS_BYTES

    def schema(self, name: str) -> StructType:
        """A table's Spark schema (from its log or entry: no Spark analysis)."""
        name = name.lower()
        entry = self.entry_of(name) if self.session_data(name) is None else None
        if entry is not None and entry.kind in DELTA_KINDS:
            schema = self.snapshot(name).schema
            return with_file_column(schema) if split_version(name)[2] else schema
        if entry is not None and entry.kind == Kind.EXTERNAL:
            return self.struct_of(entry)
        source = self.session_data(name)
        return source.schema(name) if source is not None else self.dataframe(name).schema

    # -------------------------------------------------------------- statistics (the optimizer's view)

    def table_statistics(self, name: str) -> TableStatistics | None:
        """Statistics of a table's current data, gathered on first use and cached per data version."""
        name = name.lower()
        source = self.session_data(name)
        if source is not None:
            return source.table_statistics(name)
        base, version, with_files = split_version(name)
        entry = self.entry_of(base)
        if entry is None or entry.kind == Kind.VIEW:
            return None
        if with_files:  # the table's, and a column with as many values as the table has files
            table = self.table_statistics(version_name(base, version))
            files = ColumnStatistics(distinct=len(self.snapshot(name).files))
            return TableStatistics(table.rows, (*table.columns, files), self.file_version(name))
        cached = self.cached_statistics(name)
        return cached if cached is not None else self.analyze(name)

    def cached_statistics(self, name: str) -> TableStatistics | None:
        return self.statistics_files.read(name, lambda: self.statistics_version(name))

    def statistics_version(self, name: str) -> str:
        """The data statistics describe: a table's version, however few of its files a statement reads
        (the statistics of the whole version serve for the files a DELETE or UPDATE rewrites)."""
        if self.session_data(name.lower()) is None and self.stored(name).kind in DELTA_KINDS:
            return self.snapshot(name).key
        return self.file_version(name)

    def statistics_file(self, name: str) -> Path:
        return self.statistics_files.path(name)

    def analyze(self, name: str) -> TableStatistics:
        """Gather a table's statistics now (ANALYZE TABLE) and cache them."""
        name = name.lower()
        source = self.session_data(name)
        if source is not None:
            return source.analyze(name)
        version = self.statistics_version(name)
        table = self.arrow_table(name) if self.small(name) else None
        if isinstance(table, pa.Table):
            gathered = statistics.from_arrow(table, version)
        else:
            gathered = statistics.from_spark(self.dataframe(name), version)
        if version == self.file_version(name):  # not of a part of a version: nothing to keep for others
            self.statistics_files.write(name, gathered)
        return gathered
