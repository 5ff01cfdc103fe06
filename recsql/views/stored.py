"""What a materialized view stores, recorded in its catalog entry (`Entry.reflects`): a Delta table per
relation of its program (`<view directory>/<part>/`), the version of each that is current, and the
version of each base table those reflect. The entry is replaced at once (one rename) after the tables'
commits: a reader, or a process that dies in between, sees the relations of one set of base versions."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from recsql.storage.entries import Entry
from recsql.storage.names import state_name, version_name


@dataclass
class Reflected:
    output: str  # the part holding the view's answer
    parts: dict[str, str]  # relation of the program -> the part storing it (an alias shares its source's)
    program: str  # the program, as Datalog: a view whose program reads differently now is computed again
    versions: dict[str, int] = field(default_factory=dict)  # part -> the current version of its table
    bases: dict[str, list] = field(default_factory=dict)  # base table -> [its directory, its version]

    @classmethod
    def of(cls, entry: Entry) -> Reflected:
        return cls(**entry.reflects)

    def as_json(self) -> dict:
        return asdict(self)

    def relation(self, view: str, relation: str) -> str:
        """The name a program reads a stored relation by (its current version)."""
        part = self.parts[relation]
        return version_name(state_name(view, part), self.versions[part])

    def describe(self) -> str:
        """The base versions, for SHOW TABLES: `edge@7, road@3`."""
        return ", ".join(f"{name}@{version}" for name, (_, version) in sorted(self.bases.items()))


@contextlib.contextmanager
def maintaining(catalog_directory: Path, view: str) -> Iterator[None]:
    """One process at a time changes a view's tables (others wait): its entry is then re-read."""
    with open(catalog_directory / f".{view}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
