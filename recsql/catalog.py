"""The catalog: tables and views that persist in a warehouse directory, plus session-registered data.

Layout of the warehouse:

    format.json             the layout's version (older warehouses are upgraded when opened)
    catalog/<name>.json     one entry per table or view: created only where none exists, replaced or
                            removed by one rename, so a name is always a whole entry or nothing
    tables/<name>-<id>/     a managed table: a Delta Lake table (Parquet files and _delta_log/)
    statistics/<name>.json  the optimizer's statistics of a table, with the data version they describe

Several processes may share a warehouse. Every statement reads each table at one version (a snapshot,
pinned for the statement), and every change to a managed table is one commit of its log: a statement
that fails, or a process that dies, leaves every table as it was.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import re
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote, urlparse

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType
from sqlglot import exp

from recsql import statistics
from recsql.delta_tables import DataFile, ManagedTable, Snapshot, parquet_files
from recsql.errors import ProgrammingError
from recsql.warehouse_format import upgrade, write_atomically
from recsql.statistics import ColumnStatistics, TableStatistics
from translator import dialect

VERSION_MARK = "@"  # `t@3`: version 3 of table t, as a relation name (time travel)
FILES_MARK = "#files"  # `t#files`: table t with a last column naming the file of each row (DELETE, UPDATE)
FILE_COLUMN = "__recsql_file"
KINDS = {"view": "a view", "external": "a table over external files", "registered": "a registered DataFrame"}
NOT_A_NAME = re.compile(r"\W")  # characters of relation names that Spark view names cannot hold

Rows = pa.Table | DataFrame  # a statement's rows: Arrow computed in this process, or Spark's


@dataclass
class Entry:
    name: str
    kind: str  # table | external | view
    schema: dict | None = None  # external tables: Spark StructType as JSON (declared or inferred)
    path: str | None = None  # managed tables: relative to the warehouse
    format: str = "delta"
    options: dict = field(default_factory=dict)
    sql: str | None = None  # the CREATE VIEW statement
    inferred_from: str | None = None  # the data version a schema read from the files (not declared) describes

    @property
    def struct(self) -> StructType | None:
        return StructType.fromJson(self.schema) if self.schema else None


def view_query_of(create: exp.Create) -> exp.Expression:
    """The query a CREATE VIEW statement defines; a column list `v(a, b)` renames its columns."""
    query = create.expression
    if isinstance(create.this, exp.Schema):
        columns = [exp.to_identifier(column.name) for column in create.this.expressions]
        alias = exp.TableAlias(this=exp.to_identifier(create.this.this.name), columns=columns)
        query = exp.select("*").from_(exp.Subquery(this=query, alias=alias))
    return query


def version_name(base: str, version: int | None) -> str:
    """The relation name of a table's version (`t@3`), or of its current one (`t`)."""
    return base if version is None else f"{base}{VERSION_MARK}{version}"


def split_version(name: str) -> tuple[str, int | None, bool]:
    """`t@3` → ('t', 3, False); `t` → ('t', None, False); `t#files` → ('t', None, True)."""
    name = name.lower()
    files = name.endswith(FILES_MARK)
    base, mark, version = name.removesuffix(FILES_MARK).partition(VERSION_MARK)
    return base, int(version) if mark else None, files


class Catalog:
    ARROW_STATISTICS_BYTES = 64 << 20  # managed tables up to this size are read with Arrow, not Spark

    def __init__(self, spark: SparkSession, warehouse: Path):
        self.spark = spark
        self.warehouse = Path(warehouse).expanduser().resolve()
        self.metadata = self.warehouse / "catalog"
        self.statistics_dir = self.warehouse / "statistics"
        for directory in (self.metadata, self.warehouse / "tables", self.statistics_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self.registered: dict[str, DataFrame] = {}
        self.registered_statistics: dict[str, TableStatistics] = {}
        self.registered_arrow: dict[str, pa.Table] = {}
        self.registrations = 0  # numbers each register() call: a version of registered data
        self.registered_version: dict[str, str] = {}
        self.views: dict[str, tuple[str, str]] = {}  # relation → (the version it was read at, its Spark view)
        self.tables: dict[str, ManagedTable] = {}  # by directory: each keeps the log state it has read
        self.pinned: dict[str, Snapshot] | None = None  # the snapshots the running statement reads
        self.finish_drops()
        upgrade(self.warehouse, self.metadata)

    # -------------------------------------------------------------- statements

    @contextlib.contextmanager
    def statement(self) -> Iterator[None]:
        """While a statement runs, each table it reads stays at the version it first read."""
        self.pinned = {}
        try:
            yield
        finally:
            self.pinned = None

    # -------------------------------------------------------------- lookups (the translator's view)

    def table_columns(self, name: str) -> tuple[str, ...] | None:
        name = name.lower()
        if name in self.registered:
            return tuple(self.registered[name].columns)
        entry = self.entry(split_version(name)[0])
        if entry is None or entry.kind == "view":
            return None
        return tuple(self.schema(name).fieldNames())

    def view_query(self, name: str) -> exp.Expression | None:
        name = name.lower()
        if name in self.registered:
            return None
        entry = self.entry(name)
        if entry is None or entry.kind != "view":
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
                raise ProgrammingError(f"TIMESTAMP AS OF takes a timestamp such as '2026-01-31 12:00:00', "
                                       f"not {value!r}") from None
            version = table.version_at(instant.replace(tzinfo=None) if instant.tzinfo is None
                                       else instant.astimezone().replace(tzinfo=None))
        else:
            version = int(value)
        table.snapshot(version)  # an error now if the table has no such version
        return version_name(name.lower(), version)

    def names(self) -> dict[str, str]:
        """Every table and view by name, with its kind: table, external, view, or registered (this
        session's data, which hides a stored table of the same name)."""
        stored = {}
        for path in sorted(self.metadata.glob("*.json")):
            entry = self.entry(path.stem)
            if entry is not None:
                stored[entry.name] = entry.kind
        return dict(sorted({**stored, **dict.fromkeys(self.registered, "registered")}.items()))

    def entry(self, name: str) -> Entry | None:
        path = self.metadata / f"{name.lower()}.json"
        try:
            return Entry(**json.loads(path.read_text()))
        except FileNotFoundError:
            return None

    def stored(self, name: str) -> Entry:
        """The entry of the stored table (not a view) a relation name (`t`, `t@3`, `t#files`) reads."""
        entry = self.entry(split_version(name)[0])
        if entry is None or entry.kind == "view":
            raise ProgrammingError(f"table '{name}' not found")
        return entry

    def managed(self, name: str, needed_for: str = "this") -> ManagedTable:
        """The Delta table behind a managed table's name; `needed_for` says what for, in the error that
        another kind of name gets."""
        base = split_version(name)[0]
        entry = self.entry(base)
        kind = "registered" if base in self.registered else entry.kind if entry is not None else None
        if kind is None:
            raise ProgrammingError(f"table '{base}' not found")
        if kind != "table":
            raise ProgrammingError(f"'{base}' is {KINDS[kind]}: {needed_for} needs a table created by recsql")
        root = self.warehouse / entry.path
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

    def dataframe(self, name: str) -> DataFrame:
        name = name.lower()
        if name in self.registered:
            return self.registered[name]
        entry = self.stored(name)
        if entry.kind == "table":
            return self.snapshot_frame(self.snapshot(name), split_version(name)[2])
        return self.read_external(entry, self.struct_of(entry))

    def snapshot_frame(self, snapshot: Snapshot, with_files: bool) -> DataFrame:
        """A snapshot's files as a DataFrame (Spark reads the Parquet files the version lists)."""
        if not snapshot.files:
            return self.spark.createDataFrame([], with_file_column(snapshot.schema) if with_files else snapshot.schema)
        frame = self.spark.read.schema(snapshot.schema).parquet(*[file.path for file in snapshot.files])
        return frame.select("*", F.col("_metadata.file_path").alias(FILE_COLUMN)) if with_files else frame

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
        if name in self.registered:
            return self.registered_version[name]
        entry = self.stored(name)
        if entry.kind == "table":
            return self.snapshot(name).identity + (FILES_MARK if split_version(name)[2] else "")
        return json.dumps(entry.__dict__) + data_version(entry.path)

    def read_external(self, entry: Entry, struct: StructType | None) -> DataFrame:
        """An external table's files as a DataFrame; with no schema given, Spark infers it (a job)."""
        reader = self.spark.read
        if struct is not None:
            reader = reader.schema(struct)
        options = dict(entry.options)
        if entry.format == "csv" and struct is None:
            options.setdefault("inferSchema", "true")
        return reader.options(**options).format(entry.format).load(entry.path)

    def struct_of(self, entry: Entry) -> StructType:
        """An external table's schema: declared, or inferred from its files and kept in its entry until
        they change (inferring costs Spark jobs: a query must not pay them for every table it reads)."""
        if entry.struct is not None and entry.inferred_from is None:
            return entry.struct
        version = data_version(entry.path)
        if entry.struct is not None and entry.inferred_from == version:
            return entry.struct
        struct = self.read_external(entry, None).schema
        entry.schema, entry.inferred_from = json.loads(struct.json()), version
        if self.entry(entry.name) is not None:
            self.publish(entry, replace=True)
        return struct

    def arrow_table(self, name: str) -> pa.Table | None:
        """A table's rows as Arrow without a Spark job: registered Arrow data, or a managed table whose
        files are small; None otherwise."""
        name = name.lower()
        if name in self.registered:
            return self.registered_arrow.get(name)
        entry = self.entry(split_version(name)[0])
        if entry is None or entry.kind != "table":
            return None
        snapshot = self.snapshot(name)
        if snapshot.bytes > self.ARROW_STATISTICS_BYTES:
            return None
        return snapshot.read_arrow(FILE_COLUMN if split_version(name)[2] else None)

    def schema(self, name: str) -> StructType:
        """A table's Spark schema (from its log or entry: no Spark analysis)."""
        name = name.lower()
        entry = self.entry(split_version(name)[0]) if name not in self.registered else None
        if entry is not None and entry.kind == "table":
            schema = self.snapshot(name).schema
            return with_file_column(schema) if split_version(name)[2] else schema
        if entry is not None and entry.kind == "external":
            return self.struct_of(entry)
        return self.dataframe(name).schema

    # -------------------------------------------------------------- statistics (the optimizer's view)

    def table_statistics(self, name: str) -> TableStatistics | None:
        """Statistics of a table's current data, gathered on first use and cached per data version."""
        name = name.lower()
        if name in self.registered:
            if name not in self.registered_statistics:
                self.registered_statistics[name] = statistics.from_spark(self.registered[name])
            return self.registered_statistics[name]
        base, version, with_files = split_version(name)
        entry = self.entry(base)
        if entry is None or entry.kind == "view":
            return None
        if with_files:  # the table's, and a column with as many values as the table has files
            table = self.table_statistics(version_name(base, version))
            files = ColumnStatistics(distinct=len(self.snapshot(name).files))
            return TableStatistics(table.rows, (*table.columns, files), self.file_version(name))
        cached = self.cached_statistics(name)
        return cached if cached is not None else self.analyze(name)

    def cached_statistics(self, name: str) -> TableStatistics | None:
        try:
            data = json.loads(self.statistics_file(name).read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        return TableStatistics.from_json(data) if data.get("version") == self.statistics_version(name) else None

    def statistics_version(self, name: str) -> str:
        """The data statistics describe: a table's version, however few of its files a statement reads
        (the statistics of the whole version serve for the files a DELETE or UPDATE rewrites)."""
        if name.lower() not in self.registered and self.stored(name).kind == "table":
            return self.snapshot(name).key
        return self.file_version(name)

    def statistics_file(self, name: str) -> Path:
        return self.statistics_dir / f"{name.lower()}.json"

    def analyze(self, name: str) -> TableStatistics:
        """Gather a table's statistics now (ANALYZE TABLE) and cache them."""
        name = name.lower()
        if name in self.registered:
            self.registered_statistics[name] = statistics.from_spark(self.registered[name])
            return self.registered_statistics[name]
        version = self.statistics_version(name)
        table = self.arrow_table(name)
        if table is not None:
            gathered = statistics.from_arrow(table, version)
        else:
            gathered = statistics.from_spark(self.dataframe(name), version)
        if version == self.file_version(name):  # not of a part of a version: nothing to keep for others
            write_atomically(self.statistics_file(name), json.dumps(gathered.to_json()))
        return gathered

    # -------------------------------------------------------------- changes

    def register(self, name: str, frame: DataFrame, data: pa.Table | None = None) -> None:
        """Register a DataFrame under `name`; when its Arrow data is at hand, statistics come from it."""
        name = name.lower()
        self.registered[name] = frame
        self.registrations += 1
        self.registered_version[name] = f"registered {self.registrations}"
        self.registered_statistics.pop(name, None)
        self.registered_arrow.pop(name, None)
        if data is not None:
            self.registered_statistics[name] = statistics.from_arrow(data)
            self.registered_arrow[name] = data

    def create_table(self, name: str, schema: StructType, rows: Rows | None = None, replace: bool = False,
                     statement: str = "") -> int:
        """CREATE [OR REPLACE] TABLE [AS SELECT]: one commit. Replacing a managed table is a new version
        of it (the old ones stay readable); a new table appears under its name only once complete.
        Returns the rows written."""
        name = name.lower()
        existing = self.absent_unless(name, replace)
        operation = ("CREATE OR REPLACE TABLE" if replace else
                     "CREATE TABLE AS SELECT" if rows is not None else "CREATE TABLE")
        if existing is not None and existing.kind == "table":
            table = self.managed(name)
            before = table.snapshot()
            return self.write(table, [rows] if rows is not None else [], schema, lambda files: table.commit(
                before, files, before.files, schema, operation, statement))
        relative = Path("tables") / f"{name}-{uuid.uuid4().hex[:12]}"
        root = self.warehouse / relative
        table = ManagedTable(name, root)
        root.mkdir(parents=True)
        try:
            written = self.write(table, [rows] if rows is not None else [], schema, lambda files: ManagedTable.create(
                name, root, schema, files, operation, statement))
            self.publish(Entry(name, "table", path=relative.as_posix()), replace=existing is not None)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        if existing is not None:
            self.remove_data(existing)
        return written

    def write(self, table: ManagedTable, parts: list[Rows], schema: StructType, commit) -> int:
        """Write rows as files of `table` and commit them with `commit(files)`; the files of a failed write
        or commit are removed. Rows computed in this process are written with Arrow; Spark's by Spark, in
        parallel, into a staging directory of the table. Returns the rows written."""
        files, staging = [], []
        try:
            for rows in parts:
                if isinstance(rows, pa.Table):
                    files += table.write_arrow(self.conform(table.name, rows, schema), schema, self.timezone)
                    continue
                staging.append(table.staging_directory())
                renamed = self.conform(table.name, rows, schema).toDF(*schema.fieldNames())
                columns = [renamed[f"`{f.name}`"].cast(f.dataType) for f in schema.fields]
                renamed.select(*columns).write.parquet(str(staging[-1]))
                files += parquet_files(staging[-1])
            commit(files)
        except BaseException:
            table.discard(files, staging)
            raise
        return sum(file.rows for file in files)

    def timezone(self) -> str:
        """Spark's session time zone: what a timestamp without one means."""
        return self.spark.conf.get("spark.sql.session.timeZone") or "UTC"

    @staticmethod
    def conform(name: str, rows: Rows, schema: StructType) -> Rows:
        width = rows.num_columns if isinstance(rows, pa.Table) else len(rows.columns)
        if width != len(schema.fields):
            raise ProgrammingError(f"'{name}' has {len(schema.fields)} columns but the rows written have {width}")
        return rows

    def insert(self, name: str, rows: Rows, operation: str, statement: str) -> int:
        """Append rows (columns in the table's order) in one commit; returns their number."""
        table = self.insertable(name)
        schema = table.current().schema
        return self.write(table, [rows], schema, lambda files: table.append(files, schema, operation, statement))

    def rewrite(self, name: str, snapshot: Snapshot, removed: tuple[DataFile, ...], parts: list[Rows],
                operation: str, statement: str) -> None:
        """Replace the files `removed` of `snapshot` by files of the rows `parts`, in one commit (DELETE,
        UPDATE, MERGE)."""
        table = self.insertable(name)
        self.write(table, parts, snapshot.schema, lambda files: table.commit(
            snapshot, files, removed, snapshot.schema, operation, statement))

    def insert_schema(self, name: str) -> StructType:
        """The schema rows are inserted with: the newest version's, read without a snapshot."""
        return self.insertable(name).current().schema

    def insertable(self, name: str) -> ManagedTable:
        if name.lower() != split_version(name)[0]:
            raise ProgrammingError(f"'{name}' is an old version of a table: it cannot be changed")
        return self.managed(name, "changing rows")

    def create_external(self, name: str, format: str, path: str, options: dict, schema: StructType | None) -> None:
        self.absent_unless(name, replace=False)
        if not Path(path).exists():
            raise ProgrammingError(f"path '{path}' of table '{name}' does not exist")
        entry = Entry(name.lower(), "external", json.loads(schema.json()) if schema else None, path, format, options)
        self.struct_of(entry)  # fail now, not at the first query, if the file cannot be read
        self.publish(entry, replace=False)

    def create_view(self, name: str, sql: str, replace: bool = False) -> None:
        existing = self.absent_unless(name, replace)
        self.publish(Entry(name.lower(), "view", sql=sql), replace=replace)
        if existing is not None:
            self.remove_data(existing)

    def vacuum(self, name: str, retain_hours: int) -> int:
        return self.managed(name, "VACUUM").vacuum(retain_hours)

    def history(self, name: str) -> list:
        return self.managed(name, "DESCRIBE HISTORY").history()

    def drop(self, name: str, kind: str, if_exists: bool) -> None:
        name = name.lower()
        if kind == "table" and name in self.registered:
            del self.registered[name]
            self.registered_statistics.pop(name, None)
            self.registered_arrow.pop(name, None)
            return
        entry = self.entry(name)
        wanted = {"table": ("table", "external"), "view": ("view",)}[kind]
        if entry is None or entry.kind not in wanted:
            if if_exists:
                return
            raise ProgrammingError(f"{kind} '{name}' not found")
        tombstone = self.metadata / f".dropped-{name}-{uuid.uuid4().hex}"
        try:
            os.rename(self.metadata / f"{name}.json", tombstone)  # the name is gone at once, or was already
        except FileNotFoundError:
            if if_exists:
                return
            raise ProgrammingError(f"{kind} '{name}' not found (dropped by another statement)") from None
        for cached in [self.statistics_file(name), *self.statistics_dir.glob(f"{name}{VERSION_MARK}*.json")]:
            cached.unlink(missing_ok=True)
        self.finish_drops()

    # -------------------------------------------------------------- helpers

    def absent_unless(self, name: str, replace: bool) -> Entry | None:
        """The entry a CREATE [OR REPLACE] replaces: an error when there is one and it may not."""
        existing = self.entry(name)
        if existing is not None and not replace:
            raise ProgrammingError(f"{'view' if existing.kind == 'view' else 'table'} '{name.lower()}' already exists")
        return existing

    def finish_drops(self) -> None:
        """Remove the data of dropped tables (also of drops a dead process left half done)."""
        for tombstone in self.metadata.glob(".dropped-*"):
            with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
                self.remove_data(Entry(**json.loads(tombstone.read_text())))
            tombstone.unlink(missing_ok=True)

    def remove_data(self, entry: Entry) -> None:
        if entry.kind == "table" and entry.path:
            self.tables.pop(str(self.warehouse / entry.path), None)
            shutil.rmtree(self.warehouse / entry.path, ignore_errors=True)

    def publish(self, entry: Entry, replace: bool) -> None:
        """Make an entry visible under its name: a new name only if no other statement took it first."""
        target = self.metadata / f"{entry.name}.json"
        if replace:
            write_atomically(target, json.dumps(entry.__dict__))
            return
        temporary = self.metadata / f".{entry.name}.{uuid.uuid4().hex}.tmp"
        temporary.write_text(json.dumps(entry.__dict__))
        try:
            os.link(temporary, target)
        except FileExistsError:
            raise ProgrammingError(f"table '{entry.name}' already exists (created by another statement)") from None
        finally:
            temporary.unlink(missing_ok=True)


def with_file_column(schema: StructType) -> StructType:
    return StructType([*schema.fields, StructField(FILE_COLUMN, StringType())])


def local_path(path: str) -> str:
    """A file column's value as a path: Spark gives a URI (file:/tmp/a%20b/part.parquet)."""
    return unquote(urlparse(path).path) if path.startswith("file:") else path


def data_files(path: str) -> list[Path]:
    root = Path(path)
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith((".", "_")))


def data_version(path: str) -> str:
    """A fingerprint of an external table's files (names, sizes, modification times)."""
    parts = []
    for file in data_files(path):
        status = file.stat()
        parts.append(f"{file.name}:{status.st_size}:{status.st_mtime_ns}")
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]
