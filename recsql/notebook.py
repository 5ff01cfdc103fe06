"""recsql in Jupyter: a cursor holding an answer shows it as an HTML table, and while a statement runs a
progress bar says where its recursion is (relations, iteration, new facts, total), closed when the
statement ends. A connection made in a Jupyter kernel shows progress so by itself. (A kernel interrupt
cancels the running statement: recsql.cancellation.)"""

from __future__ import annotations

import html
import sys
import time
from collections.abc import Sequence

import pyarrow as pa

from recsql.engine.progress import Progress, StatementProgress

SHOWN_ROWS = 50  # rows of an answer shown in its HTML table
UPDATE_SECONDS = 0.25  # the progress display changes at most this often


def in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (IPython with a kernel, not a terminal)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def html_table(names: Sequence[str], types: Sequence[str], head: pa.Table, total: int) -> str:
    """The first rows of an answer as an HTML table, with its column types and how many rows it has."""
    header = "".join(
        f"<th>{html.escape(name)}<br><small>{html.escape(kind)}</small></th>" for name, kind in zip(names, types)
    )
    columns = [column.to_pylist() for column in head.columns]
    body = "".join(
        "<tr>" + "".join(f"<td>{'NULL' if value is None else html.escape(str(value))}</td>" for value in row) + "</tr>"
        for row in zip(*columns)
    )
    shown = f"first {head.num_rows:,} of {total:,} rows" if head.num_rows < total else f"{total:,} rows"
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table><p><small>{shown}</small></p>"


class NotebookProgress(StatementProgress):
    """The progress of the statement running, as a display of the cell that runs it."""

    def __init__(self) -> None:
        self.handle = None  # the cell's display, once the first iteration is reported
        self.started = time.monotonic()
        self.updated = 0.0
        self.latest: Progress | None = None

    def __call__(self, event: Progress) -> None:
        from IPython.display import display

        self.latest = event
        now = time.monotonic()
        if self.handle is None:
            self.started = now - event.elapsed
            self.handle = display(self.view(running=True), raw=True, display_id=True)
        elif now - self.updated >= UPDATE_SECONDS:
            self.handle.update(self.view(running=True), raw=True)
        else:
            return
        self.updated = now

    def finished(self, error: BaseException | None) -> None:
        if self.handle is not None:
            self.handle.update(self.view(running=False, error=error), raw=True)
        self.handle, self.latest = None, None

    def view(self, running: bool, error: BaseException | None = None) -> dict[str, str]:
        """The display's text and HTML: an indeterminate bar while running, the outcome after."""
        assert self.latest is not None
        text = f"{self.latest.summary()} · {time.monotonic() - self.started:.1f} s"
        if running:
            bar = "<progress style='width: 12em'></progress> "
        else:
            bar = ""
            text += " · done" if error is None else f" · stopped: {type(error).__name__}"
        return {"text/plain": text, "text/html": f"<div>{bar}<code>{html.escape(text)}</code></div>"}
