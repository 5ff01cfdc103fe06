"""Output formats of query results, shared by the script runner and the interactive shell.

`table` is for people (rich table, right-aligned numbers, a visible NULL, a row count and the time; on a
terminal, a table taller or wider than the screen goes through a pager); `csv` and `json` (one object
per line) are for programs, so they carry nothing but the rows.
"""

from __future__ import annotations

import contextlib
import csv
import datetime
import decimal
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

FORMATS = ("table", "csv", "json")

# Spark type names whose values read best right-aligned.
_NUMERIC_TYPES = ("tinyint", "smallint", "int", "integer", "bigint", "long", "float", "double", "real", "decimal")

# Width of a console that is not a terminal: wide enough that a table written to a file or a pipe
# is never squeezed or wrapped.
_PIPE_WIDTH = 10_000

# The pager when $PAGER is not set: colours kept (-R), long lines scrolled sideways rather than wrapped
# (-S), quit at once when the text fits the screen (-F), the screen not cleared on exit (-X).
_DEFAULT_PAGER = "less -SRXF"


@dataclass(frozen=True)
class Fetched:
    """A query's answer as the cursor gave it, plus how long it took."""

    columns: Sequence[str]
    types: Sequence[str | None]
    rows: Sequence[Sequence[Any]]
    seconds: float


def render(fetched: Fetched, out: TextIO, fmt: str, timing: bool = True) -> None:
    """Write `fetched` to `out` in format `fmt` (one of FORMATS); `timing`: say how long it took."""
    if fmt == "table":
        write_table(fetched, out, timing)
    else:
        {"csv": write_csv, "json": write_json}[fmt](fetched, out)


def console(out: TextIO) -> Console:
    """A rich console on `out`: colours and terminal width on a terminal, plain and unbounded elsewhere."""
    return Console(file=out, width=None if out.isatty() else _PIPE_WIDTH, highlight=False)


def write_table(fetched: Fetched, out: TextIO, timing: bool = True) -> None:
    """A rich table followed by the line `N rows (0.12 s)`, paged on a terminal when it does not fit."""
    table = Table(box=box.SIMPLE_HEAD, header_style="bold", show_edge=False)
    for index, name in enumerate(fetched.columns):
        numeric = _is_numeric(fetched.types[index], [row[index] for row in fetched.rows])
        table.add_column(name, justify="right" if numeric else "left")
    for row in fetched.rows:
        table.add_row(*(_cell(value) for value in row))
    summary = Text(
        count_rows(len(fetched.rows)) + (f" ({fetched.seconds:.2f} s)" if timing else "") + "\n", style="dim"
    )
    target = console(out)
    if out.isatty() and _page(target, table, len(fetched.rows), summary):
        return
    target.print(table)
    target.print(summary)


def _page(target: Console, table: Table, rows: int, summary: Text) -> bool:
    """Show the table through the pager if it is taller or wider than the terminal; False if it fits
    (or there is no pager) and the caller prints it."""
    width = Measurement.get(target, target.options, table).maximum
    height = rows + 4  # header, its rule, the summary and a new prompt
    command = os.environ.get("PAGER") or (_DEFAULT_PAGER if shutil.which("less") else None)
    if (width <= target.width and height <= target.height) or not command:
        return False
    wide = Console(
        width=max(width, target.width), force_terminal=True, color_system=target.color_system, highlight=False
    )
    with wide.capture() as captured:
        wide.print(table)
        wide.print(summary)
    with contextlib.suppress(KeyboardInterrupt):  # the pager has its own Ctrl-C; the shell goes on
        subprocess.run(command, shell=True, input=captured.get(), text=True, check=False)
    return True


def write_status(message: str, out: TextIO, fmt: str) -> None:
    """Confirm a statement without result (`CREATE TABLE`); only for people, so only in table format."""
    if fmt == "table":
        console(out).print(Text(message, style="dim"))


def write_csv(fetched: Fetched, out: TextIO) -> None:
    """A header line, then one line per row; NULL is an empty field."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(fetched.columns)
    writer.writerows([[_csv_value(value) for value in row] for row in fetched.rows])


def write_json(fetched: Fetched, out: TextIO) -> None:
    """One JSON object per row (JSON lines), keyed by column name; NULL is null."""
    for row in fetched.rows:
        out.write(json.dumps(dict(zip(fetched.columns, row)), default=_json_value, ensure_ascii=False) + "\n")


def _is_numeric(type_code: str | None, values: list[Any]) -> bool:
    """Whether a column holds numbers: by its type, or by its values when the type is unknown."""
    if type_code is not None:
        return type_code.lower().startswith(_NUMERIC_TYPES)
    present = [value for value in values if value is not None]
    return bool(present) and all(_is_number(value) for value in present)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def _cell(value: Any) -> Text:
    """Table cell text; never parsed as rich markup, so data like `[red]` prints as it is."""
    return Text("NULL", style="dim") if value is None else Text(_text(value))


def _text(value: Any) -> str:
    """A value as Spark SQL prints it: booleans in lower case, arrays as `[a, b]`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join("NULL" if item is None else _text(item) for item in value) + "]"
    return str(value)


def _csv_value(value: Any) -> str:
    return "" if value is None else _text(value)


def _json_value(value: Any) -> Any:
    """JSON for the values json cannot write itself: dates as ISO text, decimals as numbers."""
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    return str(value)


def count_rows(rows: int) -> str:
    """`1 row`, `2 rows`."""
    return "1 row" if rows == 1 else f"{rows} rows"
