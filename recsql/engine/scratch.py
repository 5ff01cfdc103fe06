"""Scratch space of a statement: files its evaluation writes for itself, gone when the statement ends."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator


class Scratch:
    """Directories on this machine for the statement running: made on first use under one root, which
    the end of the statement removes. What reads them (the answer collected, the rows written to a
    table) runs inside the statement."""

    def __init__(self) -> None:
        self.root: str | None = None
        self.depth = 0  # statements running (one inside another: the outermost one's end removes the files)

    def directory(self, prefix: str) -> str:
        """A new empty directory."""
        if self.root is None:
            self.root = tempfile.mkdtemp(prefix="recsql-scratch-")
        return tempfile.mkdtemp(prefix=prefix, dir=self.root)

    @contextlib.contextmanager
    def statement(self) -> Iterator[None]:
        """The scope of one statement: what it wrote here is removed at its end, however it ends."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if self.depth == 0 and self.root is not None:
                root, self.root = self.root, None
                shutil.rmtree(root, ignore_errors=True)
