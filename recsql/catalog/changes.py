"""The changes DDL and DML statements make to the catalog's tables and views: each one commit of a table's
log, or one entry published or removed, so that a statement that fails, or a process that dies, leaves every
table as it was; the data of a replaced or dropped name removed after its entry is gone."""

from __future__ import annotations

import contextlib
import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from recsql.catalog.registered import Registered
from recsql.errors import ProgrammingError
from recsql.storage.commits import AfterCommits
from recsql.storage.delta import ManagedTable
from recsql.storage.delta_log import Commit
from recsql.storage.entries import DELTA_KINDS, Entry, EntryStore, Kind
from recsql.storage.names import split_state, split_version
from recsql.storage.snapshots import DataFile, Snapshot
from recsql.storage.statistics_files import StatisticsFiles
from recsql.storage.writes import Rows, write_rows


class TableChanges:
    """The catalog's changes: a base of `Catalog`, whose lookups they use (`entry`, `managed`, `struct_of`,
    `timezone`)."""

    warehouse: Path
    entries: EntryStore
    registered: Registered
    statistics_files: StatisticsFiles
    after_commits: AfterCommits
    tables: dict[str, ManagedTable]  # by directory

    def register(self, name: str, frame: DataFrame | None, data: pa.Table | None = None) -> None:
        """Register a Spark DataFrame, or Arrow data, under `name`."""
        self.registered.add(name.lower(), frame, data)

    def create_table(
        self, name: str, schema: StructType, rows: Rows | None = None, replace: bool = False, statement: str = ""
    ) -> int:
        """CREATE [OR REPLACE] TABLE [AS SELECT]: one commit. Replacing a managed table is a new version
        of it (the old ones stay readable); a new table appears under its name only once complete.
        Returns the rows written."""
        name = name.lower()
        existing = self.entries.absent_unless(name, replace)
        operation = (
            "CREATE OR REPLACE TABLE" if replace else "CREATE TABLE AS SELECT" if rows is not None else "CREATE TABLE"
        )
        parts = [rows] if rows is not None else []
        if existing is not None and existing.kind == Kind.TABLE:
            table = self.managed(name)
            before = table.snapshot()
            return write_rows(
                table,
                parts,
                schema,
                lambda files: table.commit(before, files, before.files, schema, operation, statement),
                self.timezone,
            )
        with self.new_data(name, existing) as relative:
            root = self.warehouse / relative
            table = ManagedTable(name, root)
            root.mkdir(parents=True)
            written = write_rows(
                table,
                parts,
                schema,
                lambda files: ManagedTable.create(name, root, schema, files, operation, statement),
                self.timezone,
            )
            self.entries.publish(Entry(name, Kind.TABLE, path=relative.as_posix()), replace=existing is not None)
        return written

    @contextlib.contextmanager
    def new_data(self, name: str, existing: Entry | None) -> Iterator[Path]:
        """A fresh directory of the warehouse (relative to it) for a new table's or view's data, which the
        block writes and publishes the entry of: removed if the block fails; else the data of the entry
        it replaced (`existing`) is removed after."""
        relative = Path("tables") / f"{name}-{uuid.uuid4().hex[:12]}"
        try:
            yield relative
        except BaseException:
            shutil.rmtree(self.warehouse / relative, ignore_errors=True)
            raise
        if existing is not None:
            self.remove_data(existing)

    def insert(self, name: str, rows: Rows, operation: str, statement: str) -> int:
        """Append rows (columns in the table's order) in one commit; returns their number."""
        table = self.insertable(name)
        before = table.snapshot()
        written = write_rows(
            table,
            [rows],
            before.schema,
            lambda files: table.append(files, before.schema, operation, statement),
            self.timezone,
        )
        self.after_commits.appended(name, table, before, rows, written)
        return written

    def rewrite(
        self,
        name: str,
        snapshot: Snapshot,
        removed: tuple[DataFile, ...],
        parts: list[Rows],
        operation: str,
        statement: str,
    ) -> None:
        """Replace the files `removed` of `snapshot` by the rows `parts` in one commit (DELETE, UPDATE, MERGE)."""
        table = self.insertable(name)
        written = write_rows(
            table,
            parts,
            snapshot.schema,
            lambda files: table.commit(snapshot, files, removed, snapshot.schema, operation, statement),
            self.timezone,
        )
        self.after_commits.rewritten(name, table, snapshot, removed, parts, written, operation)

    def insert_schema(self, name: str) -> StructType:
        """The schema rows are inserted with: the newest version's, read without a snapshot."""
        return self.insertable(name).current().schema

    def insertable(self, name: str) -> ManagedTable:
        if name.lower() != split_version(name)[0]:
            raise ProgrammingError(f"'{name}' is an old version of a table: it cannot be changed")
        if split_state(name.lower())[1] is not None:
            raise ProgrammingError(f"'{name}' is kept by a materialized view: it cannot be changed")
        return self.managed(name, "changing rows")

    def create_external(self, name: str, format: str, path: str, options: dict, schema: StructType | None) -> None:
        self.entries.absent_unless(name, replace=False)
        if not Path(path).exists():
            raise ProgrammingError(f"path '{path}' of table '{name}' does not exist")
        entry = Entry(name.lower(), Kind.EXTERNAL, json.loads(schema.json()) if schema else None, path, format, options)
        self.struct_of(entry)  # fail now, not at the first query, if the file cannot be read
        self.entries.publish(entry, replace=False)

    def create_view(self, name: str, sql: str, replace: bool = False) -> None:
        existing = self.entries.absent_unless(name, replace)
        self.entries.publish(Entry(name.lower(), Kind.VIEW, sql=sql), replace=replace)
        if existing is not None:
            self.remove_data(existing)

    def vacuum(self, name: str, retain_hours: int) -> int:
        return self.managed(name, "VACUUM").vacuum(retain_hours)

    def history(self, name: str) -> list[Commit]:
        return self.managed(name, "DESCRIBE HISTORY").history()

    def drop(self, name: str, kind: Kind, if_exists: bool) -> None:
        """DROP TABLE (a managed, external or registered table) or DROP VIEW: the name is gone at once
        (or was already), its data and statistics after."""
        name = name.lower()
        if kind == Kind.TABLE and name in self.registered:
            self.registered.remove(name)
            return
        entry = self.entry(name)
        wanted = {
            Kind.TABLE: (Kind.TABLE, Kind.EXTERNAL),
            Kind.VIEW: (Kind.VIEW,),
            Kind.MATERIALIZED: (Kind.MATERIALIZED,),
        }[kind]
        if entry is not None and entry.kind == Kind.MATERIALIZED and kind != Kind.MATERIALIZED:
            raise ProgrammingError(f"'{name}' is a materialized view: DROP MATERIALIZED VIEW {name} drops it")
        if entry is None or entry.kind not in wanted:
            if if_exists:
                return
            raise ProgrammingError(f"{kind} '{name}' not found")
        if not self.entries.remove(name):
            if if_exists:
                return
            raise ProgrammingError(f"{kind} '{name}' not found (dropped by another statement)")
        self.statistics_files.remove(name)
        self.entries.finish_drops(self.remove_data)

    def remove_data(self, entry: Entry) -> None:
        """Remove a managed table's directory (after its entry is gone or replaced)."""
        if entry.kind in DELTA_KINDS and entry.path:
            for key in [key for key in self.tables if Path(key).is_relative_to(self.warehouse / entry.path)]:
                self.tables.pop(key)
            shutil.rmtree(self.warehouse / entry.path, ignore_errors=True)
