"""The Delta transaction log as recsql writes and checks it: commit files and their actions (add, remove,
commitInfo with the statement that made them), what delta-rs is handed (schemas, add actions, commit
properties), the reader features recsql refuses, delta-rs failures as recsql errors, and the log's
checkpoints, written in a process of their own."""

from __future__ import annotations

import contextlib
import datetime
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from deltalake import Schema
from deltalake.exceptions import CommitFailedError, DeltaError
from deltalake.transaction import AddAction, CommitProperties
from pyspark.sql.types import StructType

from recsql.errors import NotSupportedError, OperationalError
from recsql.storage.snapshots import DataFile

CHECKPOINT_INTERVAL = 100  # Delta's default: a checkpoint of the log every 100 versions
OPERATION = "recsql.operation"  # commit metadata: the SQL operation (Delta's own key is delta-rs's to set)
STATEMENT = "recsql.statement"  # commit metadata: the statement's text


@dataclass(frozen=True)
class Commit:
    version: int
    timestamp: datetime.datetime
    operation: str
    statement: str


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
