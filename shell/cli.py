"""The `recsql` command: run scripts (`recsql run`), one-liners (`recsql -c`) or the interactive shell.

Results go to stdout, errors to stderr as `FILE:LINE:COLUMN: ErrorClass: message`, so editors and CI logs
can jump to the failing place; the exit code is non-zero when a statement failed.

`recsql` (and with it pyspark) is imported only where needed: after warnings are silenced and Spark's
stderr redirected, and not at all for `--help` or a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence, TextIO

from shell.render import FORMATS, Result, count_rows, render, write_status
from shell.statements import Statement, command_tag, script_position, split

if TYPE_CHECKING:
    from recsql import Connection, Cursor, Error

# Settings the command line passes to every connection; `--conf` overrides them.
DEFAULT_CONF = {"spark.log.level": "ERROR"}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `recsql` console script; returns the process exit code."""
    parser = _parser()
    args = parser.parse_intermixed_args(argv)
    _check(parser, args)
    warnings.simplefilter("ignore")  # library warnings (pandas versions, ...) mean nothing to a user
    with _native_stderr_silenced() as err:
        try:
            return _run(args, sys.stdout, err)
        except KeyboardInterrupt:
            err.write("interrupted\n")
            return 130


def run_files(conn: Connection, paths: Sequence[str], out: TextIO, err: TextIO, fmt: str = "table",
              continue_on_error: bool = False) -> int:
    """Run scripts one after the other; stops at the first failing one unless `continue_on_error`."""
    status = 0
    for path in paths:
        status = run_script(conn, path, out, err, fmt, continue_on_error) or status
        if status and not continue_on_error:
            break
    return status


def run_script(conn: Connection, path: str, out: TextIO, err: TextIO, fmt: str = "table",
               continue_on_error: bool = False) -> int:
    """Run the statements of the script at `path`; returns 0, or 1 when a statement failed.

    Relative data paths in the script are resolved against the script's directory, so a script runs the
    same from any working directory.
    """
    try:
        source = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        err.write(f"{path}: cannot read: {error.strerror}\n")
        return 1
    previous = conn.base_dir
    conn.base_dir = str(Path(path).resolve().parent)
    try:
        return run_source(conn, source, str(path), out, err, fmt, continue_on_error)
    finally:
        conn.base_dir = previous


def run_source(conn: Connection, source: str, name: str | None, out: TextIO, err: TextIO, fmt: str = "table",
               continue_on_error: bool = False) -> int:
    """Run each statement of `source` in order, printing results to `out` and errors to `err`.

    `name` is the file name errors start with; None leaves it out (the interactive shell).
    """
    import recsql

    status = 0
    cursor = conn.cursor()
    try:
        for statement in split(source):
            try:
                execute(cursor, statement.text, out, fmt)
            except recsql.Error as error:
                err.write(format_error(error, statement, name, source) + "\n")
                status = 1
                if not continue_on_error:
                    break
    finally:
        cursor.close()
    return status


def execute(cursor: Cursor, sql: str, out: TextIO, fmt: str) -> None:
    """Execute one statement and print its result, or a short confirmation when it has none."""
    started = time.perf_counter()
    cursor.execute(sql)
    if cursor.description is None:
        count = f" ({count_rows(cursor.rowcount)})" if cursor.rowcount >= 0 else ""
        write_status(command_tag(sql) + count, out, fmt)
        return
    rows = cursor.fetchall()
    columns = [column[0] for column in cursor.description]
    types = [column[1] for column in cursor.description]
    render(Result(columns, types, rows, time.perf_counter() - started), out, fmt)


def format_error(error: Error, statement: Statement, name: str | None, source: str) -> str:
    """`NAME:LINE:COLUMN: ErrorClass: message`, then the line of the script with a caret under the column.

    Without a position in the error, the position is the statement's start and no caret is shown.
    """
    kind = f"{type(error).__name__}: {error.message}"
    if error.line is None:
        return f"{name}:{statement.line}:{statement.column}: {kind}" if name else kind
    line, column = script_position(statement, error.line, error.column or 1)
    head = f"{name}:{line}:{column}: {kind}" if name else kind
    return head + _caret(source, line, column)


def _caret(source: str, line: int, column: int) -> str:
    """Two lines quoting the script's `line` with a `^` under `column` (tabs kept, so it lines up)."""
    lines = source.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    text = lines[line - 1]
    pad = "".join(char if char == "\t" else " " for char in text[: column - 1])
    return f"\n    {text}\n    {pad}^"


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Connect, do what the arguments ask, close."""
    import recsql

    try:
        conn = _connect(args, err)
    except recsql.Error as error:
        err.write(f"recsql: cannot start: {type(error).__name__}: {error.message}\n")
        return 1
    try:
        if args.sql is not None:
            return run_source(conn, args.sql, "<command>", out, err, args.format, args.continue_on_error)
        if args.command == "run":
            return run_files(conn, args.files, out, err, args.format, args.continue_on_error)
        from shell.repl import repl

        return repl(conn, args.format)
    finally:
        conn.close()


def _connect(args: argparse.Namespace, err: TextIO) -> Connection:
    """A connection as the options say, with a spinner while Spark starts when a person is watching."""
    import recsql

    conf = {**DEFAULT_CONF, **dict(args.conf)}
    if not err.isatty():
        return recsql.connect(master=args.master, conf=conf, warehouse=args.warehouse)
    from rich.console import Console

    with Console(file=err).status("Starting Spark…"):
        return recsql.connect(master=args.master, conf=conf, warehouse=args.warehouse)


@contextlib.contextmanager
def _native_stderr_silenced() -> Iterator[TextIO]:
    """Silence what Spark's JVM writes to the process's stderr; yield a stream to the real stderr.

    The JVM inherits file descriptor 2 whenever it starts (at connect or later), and prints its log
    set-up and warnings there; pointing fd 2 at /dev/null and Python's own messages at a copy of the
    original keeps the terminal to results and recsql's messages.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)
    real = os.fdopen(saved, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    previous, sys.stderr = sys.stderr, real
    try:
        yield real
    finally:
        real.flush()
        sys.stderr = previous
        os.dup2(saved, 2)
        os.close(saved)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="recsql",
        description="Recursive SQL on Apache Spark. Without a command, opens the interactive shell.",
        epilog="examples:  recsql run examples/reachability.sql   recsql -c 'SELECT 1 + 1' --format csv",
    )
    parser.add_argument("command", nargs="?", choices=["run"], metavar="run",
                        help="run the SQL scripts FILE... in order")
    parser.add_argument("files", nargs="*", metavar="FILE", help="SQL script (with `run`)")
    parser.add_argument("-c", dest="sql", metavar="SQL", help="run these ;-separated statements and exit")
    parser.add_argument("--master", help="Spark master URL (default: an embedded local Spark)")
    parser.add_argument("--conf", action="append", default=[], type=_setting, metavar="KEY=VALUE",
                        help="a Spark or recsql setting (repeatable)")
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format (default: table)")
    parser.add_argument("--warehouse", metavar="DIR", help="directory of persistent tables (default: ~/.recsql)")
    parser.add_argument("--continue-on-error", action="store_true",
                        help="run the remaining statements after one fails (exit code still non-zero)")
    return parser


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject argument combinations argparse cannot express (exits with status 2, like argparse)."""
    if args.command == "run" and not args.files:
        parser.error("run needs at least one FILE")
    if args.sql is not None and (args.command or args.files):
        parser.error("-c cannot be combined with run or files")


def _setting(text: str) -> tuple[str, str]:
    """Parse a `--conf KEY=VALUE` argument."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()
