"""Scratch space of a statement: files its evaluation writes for itself, gone when the statement ends."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


class Scratch:
    """Directories for the statement running: made on first use under a root of their kind, which the end
    of the statement removes; on this machine, or under `shared`, a directory every executor of a cluster
    sees too (in the warehouse, where Spark's executors write tables). What reads them (the answer
    collected, the rows written to a table) runs inside the statement."""

    def __init__(self, shared: Path | None = None) -> None:
        self.shared = shared
        self.roots: dict[bool, str] = {}  # shared or not -> the root made for the running statement
        self.depth = 0  # statements running (one inside another: the outermost one's end removes the files)

    def directory(self, prefix: str, shared: bool = False) -> str:
        """A new empty directory; with `shared`, one every executor sees (where there is one)."""
        if shared not in self.roots:
            if shared and self.shared is not None:
                self.shared.mkdir(parents=True, exist_ok=True)
            parent = str(self.shared) if shared and self.shared is not None else None
            self.roots[shared] = tempfile.mkdtemp(prefix="recsql-scratch-", dir=parent)
        return tempfile.mkdtemp(prefix=prefix, dir=self.roots[shared])

    @contextlib.contextmanager
    def statement(self) -> Iterator[None]:
        """The scope of one statement: what it wrote here is removed at its end, however it ends."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if self.depth == 0:
                roots, self.roots = self.roots, {}
                for root in roots.values():
                    shutil.rmtree(root, ignore_errors=True)
