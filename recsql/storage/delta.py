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

import contextlib
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable, Schema
from deltalake.exceptions import CommitFailedError, DeltaError
from deltalake.transaction import AddAction, CommitProperties, create_table_with_add_actions
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from recsql.errors import DataError, NotSupportedError, OperationalError, ProgrammingError

KEPT_SNAPSHOTS = 8  # versions of a table kept in memory
CHECKPOINT_INTERVAL = 100  # Delta's default: a checkpoint of the log every 100 versions
OPERATION = "recsql.operation"  # commit metadata: the SQL operation (Delta's own key is delta-rs's to set)
STATEMENT = "recsql.statement"  # commit metadata: the statement's text


@dataclass(frozen=True)
class DataFile:
    path: str  # absolute
    size: int
    rows: int


@dataclass(frozen=True)
class Snapshot:
    """One version of a table: what every reader of that version sees."""

    root: str
    version: int
    schema: StructType
    files: tuple[DataFile, ...]
    part: str = ""  # names a subset of the version's files (see restricted)

    @property
    def key(self) -> str:
        """Names this version of this table among all tables and versions (for caches)."""
        return f"{self.root}@{self.version}"

    @property
    def identity(self) -> str:
        """Names what is read: this version, or the part of it `restricted` made."""
        return self.key + self.part

    def restricted(self, files: tuple[DataFile, ...]) -> Snapshot:
        """The same version reduced to some of its files."""
        names = hashlib.sha1("|".join(file.path for file in files).encode()).hexdigest()[:16]
        return Snapshot(self.root, self.version, self.schema, files, f"#{names}")

    @property
    def bytes(self) -> int:
        return sum(file.size for file in self.files)

    @property
    def rows(self) -> int:
        """From the log's statistics (or, for a file written without them, its Parquet footer)."""
        return sum(file.rows if file.rows >= 0 else pq.read_metadata(file.path).num_rows for file in self.files)

    @property
    def arrow_schema(self) -> pa.Schema:
        return storage_schema(self.schema)

    def read_arrow(self, file_column: str | None = None) -> pa.Table:
        """The rows as Arrow, read from the Parquet files in this process; with `file_column`, a last
        column holding each row's file."""
        schema = self.arrow_schema
        if file_column is None:
            if not self.files:
                return schema.empty_table()
            return pq.ParquetDataset([file.path for file in self.files], schema=schema).read()
        schema = schema.append(pa.field(file_column, pa.string()))
        parts = []
        for file in self.files:
            rows = pq.read_table(file.path, schema=self.arrow_schema)
            parts.append(rows.append_column(file_column, pa.repeat(pa.scalar(file.path), rows.num_rows)))
        return pa.concat_tables(parts) if parts else schema.empty_table()


@dataclass
class LogState:
    """A table at its newest version read: kept up to date by applying the commits after it."""

    version: int
    schema: StructType
    files: dict[str, DataFile]  # by path relative to the table's directory


@dataclass(frozen=True)
class Commit:
    version: int
    timestamp: datetime.datetime
    operation: str
    statement: str


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


# ------------------------------------------------------------------ helpers


class Checkpoints:
    """Writes log checkpoints in a process of their own, at the lowest priority: reading a hundred
    commits and writing their checkpoint costs more than the hundred inserts that made them, and need
    not hold up the next statement. A checkpoint only saves readers the replay of the commits before
    it: one that fails, or is skipped while the previous one still runs, costs nothing but time."""

    PROGRAM = (
        "import os, sys; hasattr(os, 'nice') and os.nice(19); from deltalake import DeltaTable; "
        "DeltaTable(sys.argv[1], version=int(sys.argv[2])).create_checkpoint()"
    )

    def __init__(self) -> None:
        self.running: subprocess.Popen | None = None

    def submit(self, root: Path, version: int) -> None:
        if self.running is not None and self.running.poll() is None:
            return
        with contextlib.suppress(OSError):
            self.running = subprocess.Popen(
                [sys.executable, "-c", self.PROGRAM, str(root), str(version)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )


CHECKPOINTS = Checkpoints()


def storage_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema of a table's files: Delta stores a TIMESTAMP as an instant (UTC)."""
    return to_arrow_schema(schema, timezone="UTC")


def stored_rows(data: pa.Table, schema: StructType, timezone: Callable[[], str]) -> pa.Table:
    """Rows (in the table's column order) as its files store them, and as they read back; a DataError
    naming the column whose type cannot hold a value."""
    arrow_schema = storage_schema(schema)
    columns = []
    for i, field in enumerate(schema.fields):
        try:
            columns.append(stored_column(data.column(i), arrow_schema.field(i).type, timezone))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as error:
            raise DataError(f"column '{field.name}' ({field.dataType.simpleString()}): {error}") from None
    return pa.Table.from_arrays(columns, schema=arrow_schema)


def stored_column(column: pa.ChunkedArray, target: pa.DataType, timezone: Callable[[], str]) -> pa.ChunkedArray:
    """A column cast to the type its file stores, a timestamp without a time zone taken in `timezone()`."""
    if pa.types.is_timestamp(target) and target.tz and pa.types.is_timestamp(column.type) and not column.type.tz:
        column = pc.assume_timezone(column, timezone())
    return column.cast(target)


def parquet_files(directory: Path) -> list[DataFile]:
    """The Parquet files a writer (Spark) left in a directory, with their row counts (from the footers)."""
    return [
        DataFile(str(path), path.stat().st_size, pq.read_metadata(str(path)).num_rows)
        for path in sorted(Path(directory).rglob("*.parquet"))
        if not path.name.startswith((".", "_"))
    ]


def delta_schema(schema: StructType) -> Schema:
    """Delta's schema is Spark's StructType JSON: the same types, the same names."""
    nullable = StructType([field.__class__(field.name, field.dataType, True) for field in schema.fields])
    return Schema.from_json(nullable.json())


def commit_name(version: int) -> str:
    return f"{version:020}.json"


def now_ms() -> int:
    return int(time.time() * 1000)


def relative(root: Path, path: str) -> str:
    return Path(path).relative_to(root).as_posix()


def add_entry(root: Path, file: DataFile) -> dict:
    return {
        "path": relative(root, file.path),
        "partitionValues": {},
        "size": file.size,
        "modificationTime": now_ms(),
        "dataChange": True,
        "stats": json.dumps({"numRecords": file.rows}),
    }


def remove_entry(root: Path, file: DataFile) -> dict:
    return {
        "path": relative(root, file.path),
        "deletionTimestamp": now_ms(),
        "dataChange": True,
        "extendedFileMetadata": True,
        "partitionValues": {},
        "size": file.size,
    }


def commit_info(info: dict, operation: str, statement: str) -> dict:
    return {"commitInfo": {"timestamp": now_ms(), **info, OPERATION: operation, STATEMENT: statement}}


def add_action(root: Path, file: DataFile) -> AddAction:
    entry = add_entry(root, file)
    return AddAction(entry["path"], entry["size"], {}, entry["modificationTime"], True, entry["stats"])


def commit_properties(operation: str, statement: str) -> CommitProperties:
    return CommitProperties(custom_metadata={OPERATION: operation, STATEMENT: statement})


def check_reader(name: str, reader_version: int, features: list[str] | None) -> None:
    """Files are read as the log lists them: a table that needs more of a reader (deletion vectors, column
    mapping) is refused, not read wrong."""
    if reader_version > 1:
        needed = ", ".join(features or [f"reader version {reader_version}"])
        raise NotSupportedError(f"table '{name}' uses Delta features recsql cannot read yet: {needed}")


@contextlib.contextmanager
def delta_errors(name: str, root: Path) -> Iterator[None]:
    """delta-rs and file-system failures as recsql errors naming the table, not a path of the warehouse."""
    try:
        yield
    except CommitFailedError:
        raise OperationalError(
            f"table '{name}' was changed by another statement at the same time; run the statement again"
        ) from None
    except (DeltaError, OSError) as error:
        if isinstance(error, FileExistsError):
            raise
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if isinstance(error, OSError) and error.strerror:
            text = error.strerror
        text = text.replace(str(root), f"<{name}>")
        raise OperationalError(f"table '{name}' cannot be read or written: {text}") from None
