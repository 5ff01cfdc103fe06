"""The catalog's entries: what each name of a warehouse is, one JSON file per table or view in its
`catalog/` directory.

An entry is created only where none exists, and replaced or removed by one rename, so that every process
sharing the warehouse sees a name as a whole entry or nothing. Removing a table's data comes after its
entry is gone (a tombstone records what to remove, should the process die in between).
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from pyspark.sql.types import StructType
from sqlglot import exp

from recsql.errors import ProgrammingError
from recsql.storage.format import write_atomically


class Kind(StrEnum):
    """What a name is. A str enum: entries on disk hold the bare value (`"kind": "table"`), so warehouses
    written before the enum existed read the same and new entries stay byte-identical."""

    TABLE = "table"  # a managed table: a Delta Lake table under tables/
    EXTERNAL = "external"  # a table over files elsewhere (CSV, Parquet, JSON, ORC), read by Spark
    VIEW = "view"  # a stored query
    MATERIALIZED = "materialized view"  # a stored query and its answer, kept current (recsql/views/)
    REGISTERED = "registered"  # this session's data (Connection.register): never stored
    SPARK = "spark"  # a table or view of Spark's catalog, or a path table: read, never stored


DELTA_KINDS = (Kind.TABLE, Kind.MATERIALIZED)  # names whose rows are Delta tables recsql keeps


@dataclass
class Entry:
    name: str
    kind: Kind  # TABLE, EXTERNAL, VIEW or MATERIALIZED
    schema: dict | None = None  # external tables: Spark StructType as JSON (declared or inferred)
    path: str | None = None  # managed tables: relative to the warehouse
    format: str = "delta"
    options: dict = field(default_factory=dict)
    sql: str | None = None  # the CREATE VIEW statement
    inferred_from: str | None = None  # the data version a schema read from the files (not declared) describes
    # materialized views: what their stored relations hold (views/stored.py's Reflected, as JSON)
    reflects: dict | None = None

    def __post_init__(self) -> None:
        self.kind = Kind(self.kind)  # read from JSON as a bare string

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


class EntryStore:
    """The entries of a warehouse's `catalog/` directory, read afresh at every lookup: other processes
    may change them at any time."""

    def __init__(self, directory: Path):
        self.directory = directory

    def get(self, name: str) -> Entry | None:
        """The entry of `name` as it is now; None when there is none."""
        path = self.directory / f"{name.lower()}.json"
        try:
            return Entry(**json.loads(path.read_text()))
        except FileNotFoundError:
            return None

    def all(self) -> list[Entry]:
        """Every entry, by name (an entry removed while they are listed is left out)."""
        entries = (self.get(path.stem) for path in sorted(self.directory.glob("*.json")))
        return [entry for entry in entries if entry is not None]

    def absent_unless(self, name: str, replace: bool) -> Entry | None:
        """The entry a CREATE [OR REPLACE] replaces: an error when there is one and it may not."""
        existing = self.get(name)
        if existing is not None and not replace:
            kind = "table" if existing.kind in (Kind.TABLE, Kind.EXTERNAL) else str(existing.kind)
            raise ProgrammingError(f"{kind} '{name.lower()}' already exists")
        return existing

    def publish(self, entry: Entry, replace: bool) -> None:
        """Make an entry visible under its name: a new name only if no other statement took it first."""
        target = self.directory / f"{entry.name}.json"
        if replace:
            write_atomically(target, json.dumps(entry.__dict__))
            return
        temporary = self.directory / f".{entry.name}.{uuid.uuid4().hex}.tmp"
        temporary.write_text(json.dumps(entry.__dict__))
        try:
            os.link(temporary, target)
        except FileExistsError:
            raise ProgrammingError(f"table '{entry.name}' already exists (created by another statement)") from None
        finally:
            temporary.unlink(missing_ok=True)

    def remove(self, name: str) -> bool:
        """Remove a name's entry at once, leaving it as a tombstone until `finish_drops` removes its data;
        False when it was already gone (dropped by another statement)."""
        tombstone = self.directory / f".dropped-{name}-{uuid.uuid4().hex}"
        try:
            os.rename(self.directory / f"{name}.json", tombstone)
        except FileNotFoundError:
            return False
        return True

    def finish_drops(self, remove_data: Callable[[Entry], None]) -> None:
        """Remove the data of dropped tables (also of drops a dead process left half done)."""
        for tombstone in self.directory.glob(".dropped-*"):
            with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
                remove_data(Entry(**json.loads(tombstone.read_text())))
            tombstone.unlink(missing_ok=True)
