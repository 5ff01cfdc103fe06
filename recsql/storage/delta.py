"""Managed tables as Delta Lake tables: a directory of Parquet files and a transaction log.

Every change is one commit to the log (`_delta_log/NNN.json`), made visible by creating that file only if
no other writer created it first. A statement that fails, or whose process dies, before its commit leaves
files that no version lists: readers never see them. Readers take a snapshot (one version's schema and
files) and read exactly those files, so a query is never disturbed by a writer, and any earlier version
can be read again (time travel).

delta-rs (the `deltalake` package) reads the log, checkpoints it, and makes the commits that remove files.
A blind append (INSERT) is committed here directly: it only adds files, so by the Delta protocol it
conflicts with no concurrent commit but a change of the table's schema, and a commit file of our own costs
a fraction of a millisecond where delta-rs takes several. Spark with the Delta connector reads the same
directory as a Delta table; without the connector, Spark is handed a snapshot's Parquet files.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable
from deltalake.transaction import create_table_with_add_actions
from pyspark.sql.types import StructType

from recsql.errors import DataError, OperationalError, ProgrammingError
from recsql.storage.delta_log import (
    CHECKPOINT_INTERVAL,
    CHECKPOINTS,
    OPERATION,
    STATEMENT,
    Commit,
    add_action,
    add_entry,
    check_reader,
    commit_info,
    commit_name,
    commit_properties,
    delta_errors,
    delta_schema,
    relative,
    remove_entry,
)
from recsql.storage.snapshots import DataFile, Snapshot, stored_rows

KEPT_SNAPSHOTS = 8  # versions of a table kept in memory


@dataclass
class LogState:
    """A table at its newest version read: kept up to date by applying the commits after it."""

    version: int
    schema: StructType
    files: dict[str, DataFile]  # by path relative to the table's directory


class ManagedTable:
    """One Delta table directory. Keeps the latest log state it has read, and reads only what was
    committed since."""

    def __init__(self, name: str, root: Path):
        self.name = name
        self.root = Path(root)
        self.log = self.root / "_delta_log"
        self._state: LogState | None = None  # the newest version read
        self._snapshots: dict[int, Snapshot] = {}  # a few recent versions, by number

    # -------------------------------------------------------------- creating

    @classmethod
    def create(
        cls,
        name: str,
        root: Path,
        schema: StructType,
        files: Iterable[DataFile] = (),
        operation: str = "CREATE TABLE",
        statement: str = "",
    ) -> ManagedTable:
        """A new table whose version 0 holds `files` (written under `root` already)."""
        root.mkdir(parents=True, exist_ok=True)
        with delta_errors(name, root):
            create_table_with_add_actions(
                str(root),
                delta_schema(schema),
                [add_action(root, file) for file in files],
                mode="error",
                commit_properties=commit_properties(operation, statement),
            )
        return cls(name, root)

    # -------------------------------------------------------------- reading

    def snapshot(self, version: int | None = None) -> Snapshot:
        """The newest version, or the one given (ProgrammingError when the table has no such version)."""
        state = self.current()
        version = state.version if version is None else version
        known = self._snapshots.get(version)
        if known is not None:
            return known
        if version == state.version:
            snapshot = Snapshot(str(self.root), version, state.schema, tuple(state.files.values()))
        elif 0 <= version < state.version:
            with delta_errors(self.name, self.root):
                snapshot = self.snapshot_of(DeltaTable(str(self.root), version=version))
            if not all(Path(file.path).exists() for file in snapshot.files):
                raise ProgrammingError(
                    f"version {version} of table '{self.name}' can no longer be read: VACUUM removed its files"
                )
        else:
            raise ProgrammingError(
                f"table '{self.name}' has no version {version} (its versions are 0 to {state.version})"
            )
        while len(self._snapshots) >= KEPT_SNAPSHOTS:
            self._snapshots.pop(next(iter(self._snapshots)))
        self._snapshots[version] = snapshot
        return snapshot

    def current(self) -> LogState:
        """The newest version: the state read before, brought up to date from the commits made since
        (a few small JSON files; the whole log is read through delta-rs only the first time)."""
        if self._state is None:
            with delta_errors(self.name, self.root):
                snapshot = self.snapshot_of(DeltaTable(str(self.root)))
            files = {relative(self.root, file.path): file for file in snapshot.files}
            self._state = LogState(snapshot.version, snapshot.schema, files)
        state = self._state
        while True:
            try:
                lines = (self.log / commit_name(state.version + 1)).read_text().splitlines()
            except FileNotFoundError:
                return state
            for line in lines:
                if line.strip():
                    self.apply(state, json.loads(line))
            state.version += 1

    def apply(self, state: LogState, action: dict) -> None:
        """One action of a commit (Delta protocol: add, remove, metaData, protocol; the rest change no row)."""
        if "add" in action:
            add = action["add"]  # a deletion vector needs reader version 3: the protocol is refused first
            path = unquote(add["path"])
            rows = json.loads(add["stats"]).get("numRecords", -1) if add.get("stats") else -1
            state.files[path] = DataFile(str(self.root / path), add["size"], rows)
        elif "remove" in action:
            state.files.pop(unquote(action["remove"]["path"]), None)
        elif "metaData" in action:
            state.schema = StructType.fromJson(json.loads(action["metaData"]["schemaString"]))
        elif "protocol" in action:
            protocol = action["protocol"]
            check_reader(self.name, protocol.get("minReaderVersion", 1), protocol.get("readerFeatures"))

    def snapshot_of(self, table: DeltaTable) -> Snapshot:
        protocol = table.protocol()
        check_reader(self.name, protocol.min_reader_version, protocol.reader_features)
        actions = pa.table(table.get_add_actions(flatten=True))
        paths = actions.column("path").to_pylist()
        sizes = actions.column("size_bytes").to_pylist()
        counts = actions.column("num_records").to_pylist()
        files = tuple(
            DataFile(str(self.root / path), size, rows if rows is not None else -1)
            for path, size, rows in zip(paths, sizes, counts)
        )
        schema = StructType.fromJson(json.loads(table.schema().to_json()))
        return Snapshot(str(self.root), table.version(), schema, files)

    def version_at(self, instant: datetime.datetime) -> int:
        """The version current at `instant`: the newest committed at or before it."""
        commits = [commit for commit in self.history() if commit.timestamp <= instant]
        if not commits:
            first = min(commit.timestamp for commit in self.history())
            raise ProgrammingError(f"table '{self.name}' did not exist at {instant} (its first version is of {first})")
        return max(commit.version for commit in commits)

    def history(self) -> list[Commit]:
        """Every version, newest first."""
        with delta_errors(self.name, self.root):
            entries = DeltaTable(str(self.root)).history()
        return [
            Commit(
                entry["version"],
                datetime.datetime.fromtimestamp(entry["timestamp"] / 1000),
                entry.get(OPERATION) or entry.get("operation", ""),
                entry.get(STATEMENT, ""),
            )
            for entry in entries
        ]

    def vacuum(self, retain_hours: int) -> int:
        """Remove the files that no version committed in the last `retain_hours` reads (older versions
        can no longer be read), and files left by writers that never committed; returns their number."""
        with delta_errors(self.name, self.root):
            removed = DeltaTable(str(self.root)).vacuum(
                retention_hours=retain_hours, dry_run=False, enforce_retention_duration=False, full=True
            )
        self._snapshots.clear()
        return len(removed)

    # -------------------------------------------------------------- writing

    def new_file_path(self) -> Path:
        return self.root / f"part-{uuid.uuid4().hex}.parquet"

    def staging_directory(self) -> Path:
        """A directory for a writer's files (Spark's); nothing in it is part of the table until committed."""
        return self.root / f"write-{uuid.uuid4().hex}"

    def write_arrow(self, data: pa.Table, schema: StructType, timezone: Callable[[], str]) -> list[DataFile]:
        """Write rows (in the table's column order) as a Parquet file of the table; not yet committed.
        Timestamps without a time zone are taken in `timezone()` (Spark's session time zone)."""
        if data.num_rows == 0:
            return []
        try:
            rows = stored_rows(data, schema, timezone)
        except DataError as error:
            raise DataError(f"cannot store the values in '{self.name}': {error.message}") from None
        path = self.new_file_path()
        pq.write_table(rows, str(path))
        return [DataFile(str(path), path.stat().st_size, data.num_rows)]

    def append(self, files: list[DataFile], schema: StructType, operation: str, statement: str) -> None:
        """Commit files that only add rows (a blind append): it goes after whatever other writers
        committed meanwhile, unless one of them changed the table's schema."""
        if not files:
            return
        info = {"operation": "WRITE", "operationParameters": {"mode": "Append"}, "isBlindAppend": True}
        self.publish(
            commit_info(info, operation, statement),
            [{"add": add_entry(self.root, file)} for file in files],
            self.current().version,
            schema,
            frozenset(),
            "rows were being inserted",
        )

    def commit(
        self,
        snapshot: Snapshot,
        add: list[DataFile],
        remove: Iterable[DataFile],
        schema: StructType,
        operation: str,
        statement: str,
    ) -> None:
        """Commit a change computed from `snapshot` (files removed and added). It goes after the commits
        other writers made since, unless one removed a file this one removes (both rewrote the same
        rows) or changed the schema (Delta's write-serializable isolation: rows appended meanwhile are
        kept as they are). A changed schema replaces the table's schema (CREATE OR REPLACE), through
        delta-rs."""
        if schema != snapshot.schema:  # an overwrite whose metadata carries the new schema
            with delta_errors(self.name, self.root):
                table = DeltaTable(str(self.root), version=snapshot.version)
                table.create_write_transaction(
                    [add_action(self.root, file) for file in add],
                    mode="overwrite",
                    schema=delta_schema(schema),
                    commit_properties=commit_properties(operation, statement),
                )
            return
        removed = list(remove)
        actions = [{"remove": remove_entry(self.root, file)} for file in removed]
        actions += [{"add": add_entry(self.root, file)} for file in add]
        self.publish(
            commit_info({"operation": "WRITE", "operationParameters": {"mode": "Overwrite"}}, operation, statement),
            actions,
            snapshot.version,
            schema,
            frozenset(relative(self.root, file.path) for file in removed),
            "this statement ran",
        )

    def publish(
        self, info: dict, actions: list[dict], read: int, schema: StructType, rewritten: frozenset[str], during: str
    ) -> None:
        """Write a commit as the version after `read` (the version the change was computed from), or,
        when others committed first, after theirs: each is read, and one that removed a file of
        `rewritten` or changed the schema makes this commit fail (OperationalError: run it again)."""
        text = "\n".join(json.dumps(action) for action in [info, *actions]) + "\n"
        temporary = self.log / f".{uuid.uuid4().hex}.json.tmp"
        temporary.write_text(text)
        version = read
        try:
            while True:
                try:
                    os.link(temporary, self.log / commit_name(version + 1))
                    break
                except FileExistsError:  # another writer committed that version first
                    version += 1
                    if self.conflicts(version, schema, rewritten):
                        raise OperationalError(
                            f"table '{self.name}' was changed by another statement while "
                            f"{during}; run the statement again"
                        ) from None
        finally:
            temporary.unlink(missing_ok=True)
        version += 1
        if version % CHECKPOINT_INTERVAL == 0:
            CHECKPOINTS.submit(self.root, version)

    def conflicts(self, version: int, schema: StructType, rewritten: frozenset[str]) -> bool:
        """Whether another writer's commit `version` removed a file of `rewritten` or changed the schema."""
        for line in (self.log / commit_name(version)).read_text().splitlines():
            action = json.loads(line) if line.strip() else {}
            if "remove" in action and unquote(action["remove"]["path"]) in rewritten:
                return True
            if "metaData" in action and StructType.fromJson(json.loads(action["metaData"]["schemaString"])) != schema:
                return True
            if "protocol" in action:
                return True
        return False

    def discard(self, files: Iterable[DataFile], directories: Iterable[Path]) -> None:
        """Remove files written for a commit that did not happen."""
        for file in files:
            Path(file.path).unlink(missing_ok=True)
        for directory in directories:
            shutil.rmtree(directory, ignore_errors=True)
