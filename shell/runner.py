"""Running statements for the command line and the interactive shell alike.

Each statement runs on a worker thread while this thread waits, so Ctrl-C (a KeyboardInterrupt here)
can cancel it through the connection and leave the session usable. On a terminal a live progress line
shows what a recursive evaluation is doing. Results render as the options say; errors are printed as
`FILE:LINE:COLUMN: ErrorClass: message` with the line and a caret, so editors and CI logs can jump to
the failing place.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, TypeVar

from shell.datalog_mode import DatalogProgram
from shell.progress import ProgressLine
from shell.render import Fetched, console, count_rows, render, write_status
from shell.startup import Startup
from shell.statements import Statement, command_tag, script_position, split

if TYPE_CHECKING:
    from recsql import Connection, Cursor, Error

T = TypeVar("T")

QUERY_TAGS = ("SELECT", "WITH", "VALUES", "TABLE", "FROM", "(")
DATALOG_SUFFIX = ".dl"  # `recsql run prog.dl` runs a Datalog program
CANCELLED = 130  # exit code of a script stopped by Ctrl-C, as shells give for SIGINT
RECANCEL_SECONDS = 1.0  # a cancelled statement is cancelled again this often until it stops


@dataclass
class Options:
    """What the shell's meta-commands and the command line's flags change."""

    format: str = "table"
    timing: bool = True  # the time below each result
    explain: bool = False  # each query's plan above its result


class Runner:
    def __init__(self, startup: Startup, out: TextIO, err: TextIO, options: Options | None = None):
        self.startup = startup
        self.out = out
        self.err = err
        self.options = options or Options()
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="recsql-statement")
        self.progress = ProgressLine(err) if err.isatty() else None
        self.datalog: DatalogProgram | None = None  # the shell's Datalog mode: the program entered so far

    @property
    def connection(self) -> Connection:
        """The connection, waiting for Spark to start if it has not yet (raises recsql.Error if it failed)."""
        connection = self.startup.wait(self.err)
        if self.progress is not None and connection.progress is None:
            connection.progress = self.progress
            self.progress.spark_starting = lambda: connection.spark_starting
        return connection

    # -------------------------------------------------------------- scripts

    def run_files(self, paths: list[str], continue_on_error: bool = False) -> int:
        """Run scripts one after the other; stops at the first failing one unless `continue_on_error`."""
        status = 0
        for path in paths:
            status = self.run_script(path, continue_on_error) or status
            if status == CANCELLED or (status and not continue_on_error):
                break
        return status

    def run_script(self, path: str, continue_on_error: bool = False) -> int:
        """Run the statements of the script at `path` (a Datalog program when it ends in .dl); returns 0,
        1 when a statement failed, 130 when cancelled.

        Relative data paths in the script are resolved against the script's directory, so a script runs
        the same from any working directory.
        """
        try:
            source = Path(path).expanduser().read_text(encoding="utf-8")
        except OSError as error:
            self.err.write(f"{path}: cannot read: {error.strerror}\n")
            return 1
        connection = self.connect()
        if connection is None:
            return 1
        previous = connection.base_dir
        connection.base_dir = str(Path(path).expanduser().resolve().parent)
        try:
            if Path(path).suffix == DATALOG_SUFFIX:
                return self.run_program(source, str(path))
            return self.run_source(source, str(path), continue_on_error)
        finally:
            connection.base_dir = previous

    def run_program(self, source: str, name: str | None) -> int:
        """Run a Datalog program, printing the answer of each `.output` in order (a table it stores, as
        a status line); returns 0, 1 when it failed, 130 when cancelled."""
        import recsql

        connection = self.connect()
        if connection is None:
            return 1
        cursor = connection.cursor()
        started = time.perf_counter()
        try:
            self.cancellable(lambda: cursor.execute_datalog(source))
            for relation in cursor.outputs:
                cursor.use_output(relation)
                if cursor.description is None:  # stored as a table
                    write_status(f"{relation} stored ({count_rows(cursor.rowcount)})", self.out, self.options.format)
                else:
                    self.show(cursor, f".output {relation}", started)
        except recsql.QueryCancelled:
            self.err.write("cancelled\n")
            return CANCELLED
        except recsql.Error as error:
            self.report(format_error(error, Statement(source, 1, 1), name, source))
            return 1
        finally:
            cursor.close()
        return 0

    def run_source(self, source: str, name: str | None, continue_on_error: bool = False) -> int:
        """Run each statement of `source` in order, printing results to `out` and errors to `err`.

        `name` is the file name errors start with; None leaves it out (the interactive shell).
        """
        import recsql

        if self.connect() is None:
            return 1
        status = 0
        for statement in split(source):
            try:
                self.execute(statement.text)
            except recsql.QueryCancelled:
                self.err.write("cancelled\n")
                return CANCELLED
            except recsql.Error as error:
                self.report(format_error(error, statement, name, source))
                status = 1
                if not continue_on_error:
                    break
        return status

    def connect(self) -> Connection | None:
        """The connection, or None after printing why Spark could not start."""
        import recsql

        try:
            return self.connection
        except recsql.Error as error:
            self.report(f"recsql: {error.message}")
            return None

    # -------------------------------------------------------------- statements

    def execute(self, sql: str) -> None:
        """Execute one statement and print its result, or a short confirmation when it has none."""
        if self.options.explain and command_tag(sql) in QUERY_TAGS:
            self.show_plan(sql)
        started = time.perf_counter()
        cursor = self.connection.cursor()
        try:
            self.cancellable(lambda: cursor.execute(sql))
            self.show(cursor, sql, started)
        finally:
            cursor.close()

    def query(self, sql: str) -> list[tuple]:
        """The rows of a statement the shell issues itself (SHOW TABLES for completion, \\load's table);
        none for a statement without a result."""
        cursor = self.connection.cursor()
        try:
            self.cancellable(lambda: cursor.execute(sql))
            return cursor.fetchall() if cursor.description is not None else []
        finally:
            cursor.close()

    def show_plan(self, sql: str) -> None:
        lines = [row[0] for row in self.query(f"EXPLAIN {sql}")]
        console(self.out).print("\n".join(lines) + "\n", style="dim", markup=False)

    def show(self, cursor: Cursor, sql: str, started: float) -> None:
        """The statement's result (its time counts fetching the rows), or its confirmation."""
        if cursor.description is None:
            details = [count_rows(cursor.rowcount)] if cursor.rowcount >= 0 else []
            if self.options.timing:
                details.append(f"{time.perf_counter() - started:.2f} s")
            message = command_tag(sql) + (f" ({', '.join(details)})" if details else "")
            write_status(message, self.out, self.options.format)
            return
        rows = cursor.fetchall()
        columns = [column[0] for column in cursor.description]
        types = [column[1] for column in cursor.description]
        render(
            Fetched(columns, types, rows, time.perf_counter() - started),
            self.out,
            self.options.format,
            self.options.timing,
        )

    def cancellable(self, call: Callable[[], T]) -> T:
        """Run `call` on the worker thread; Ctrl-C cancels the connection's running statement, and the
        call then raises QueryCancelled."""
        future = self.worker.submit(call)
        with self.progress_shown():
            try:
                return future.result()
            except KeyboardInterrupt:
                return self.cancel(future)

    def cancel(self, future: Future[T]) -> T:
        """Cancel until the statement stops: a job it starts after a cancel is cancelled by the next."""
        connection = self.connection
        while True:
            connection.cancel()
            try:
                return future.result(timeout=RECANCEL_SECONDS)
            except (FutureTimeout, KeyboardInterrupt):
                continue

    @contextlib.contextmanager
    def progress_shown(self) -> Iterator[None]:
        if self.progress is None:
            yield
            return
        with self.progress.shown():
            yield

    def report(self, message: str) -> None:
        """An error message: red on a terminal, plain text elsewhere (logs, editors)."""
        if self.err.isatty():
            console(self.err).print(message, style="red", markup=False)
        else:
            self.err.write(message + "\n")

    def close(self) -> None:
        self.worker.shutdown(wait=False, cancel_futures=True)
        self.startup.close()


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
