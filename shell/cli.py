"""The `recsql` command: run scripts (`recsql run`), one-liners (`recsql -c`) or the interactive shell.

Results go to stdout, errors and progress to stderr; the exit code is non-zero when a statement failed.

`recsql` (and with it pyspark) is imported only where needed: after warnings are silenced and Spark's
stderr redirected, and not at all for `--help` or a usage error.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, TextIO

from shell.render import FORMATS
from shell.runner import CANCELLED, Options, Runner
from shell.startup import Startup

if TYPE_CHECKING:
    from recsql import Connection


def command() -> None:
    """The `recsql` console script: main(), then out at once. Python's teardown of the modules a run
    loaded (pandas, Arrow, DuckDB, Spark's client) takes a quarter of a second and more, and does
    nothing a finished run needs: its output is flushed, its statements committed, the exit handlers
    libraries registered have run (Spark Connect releases its server session), and an embedded
    Spark's JVM stops by itself once this process is gone."""
    status = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    atexit._run_exitfuncs()
    os._exit(status)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs what the arguments ask; returns the process exit code."""
    parser = _parser()
    args = parser.parse_intermixed_args(argv)
    _check(parser, args)
    warnings.simplefilter("ignore")  # library warnings (pandas versions, ...) mean nothing to a user
    with _native_stderr_silenced() if args.log_level is None else contextlib.nullcontext(sys.stderr) as err:
        try:
            return _run(args, sys.stdout, err)
        except KeyboardInterrupt:
            err.write("interrupted\n")
            return CANCELLED


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Open the connection, do what the arguments ask, close. The shell starts Spark in the background
    while its user types; a script or command starts it only if a statement needs it."""
    interactive = args.sql is None and args.command != "run" and sys.stdin.isatty()
    runner = Runner(Startup(lambda: _connect(args, interactive)), out, err, Options(format=args.format))
    try:
        if args.sql is not None and args.datalog:
            return runner.run_program(args.sql, "<command>")
        if args.sql is not None:
            return runner.run_source(args.sql, "<command>", args.continue_on_error)
        if args.command == "run":
            return runner.run_files(args.files, args.continue_on_error)
        if not interactive:  # `recsql < script.sql`: a script, not a conversation
            return runner.run_source(sys.stdin.read(), "<stdin>", args.continue_on_error)
        from shell.repl import repl

        return repl(runner)
    finally:
        runner.close()


def _connect(args: argparse.Namespace, interactive: bool) -> Connection:
    import recsql
    from recsql.settings import SparkStart

    conf = {"recsql.spark_start": SparkStart.BACKGROUND if interactive else SparkStart.ON_DEMAND, **dict(args.conf)}
    return recsql.connect(
        master=args.master, conf=conf, warehouse=args.warehouse, log_level=args.log_level, remote=args.remote
    )


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
    parser.add_argument(
        "command", nargs="?", choices=["run"], metavar="run", help="run the SQL scripts FILE... in order"
    )
    parser.add_argument("files", nargs="*", metavar="FILE", help="SQL script, or Datalog program (.dl) (with `run`)")
    parser.add_argument("-c", dest="sql", metavar="SQL", help="run these ;-separated statements and exit")
    parser.add_argument("--datalog", action="store_true", help="-c runs a Datalog program, not SQL")
    parser.add_argument("--master", help="Spark master URL (default: an embedded local Spark)")
    parser.add_argument(
        "--remote",
        metavar="URL",
        help="a Spark Connect server to run on (sc://host:port) instead of a Spark in this process",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        type=_setting,
        metavar="KEY=VALUE",
        help="a Spark or recsql setting (repeatable)",
    )
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format (default: table)")
    parser.add_argument("--warehouse", metavar="DIR", help="directory of persistent tables (default: ~/.recsql)")
    parser.add_argument(
        "--verbose",
        dest="log_level",
        action="store_const",
        const="warn",
        help="show Spark's warnings and errors on the terminal (default: in a log file)",
    )
    parser.add_argument(
        "--log-level",
        dest="log_level",
        metavar="LEVEL",
        help="show Spark's log on the terminal at this level (error, warn, info, debug)",
    )
    parser.add_argument(
        "--continue-on-error",
        action="store_true",
        help="run the remaining statements after one fails (exit code still non-zero)",
    )
    return parser


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject argument combinations argparse cannot express (exits with status 2, like argparse)."""
    if args.command == "run" and not args.files:
        parser.error("run needs at least one FILE")
    if args.sql is not None and (args.command or args.files):
        parser.error("-c cannot be combined with run or files")
    if args.datalog and args.sql is None:
        parser.error("--datalog goes with -c (a .dl file given to run is a Datalog program already)")
    if args.master and args.remote:
        parser.error("--master and --remote cannot be combined: a Spark Connect server has its own master")


def _setting(text: str) -> tuple[str, str]:
    """Parse a `--conf KEY=VALUE` argument."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()
