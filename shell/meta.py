"""The shell's backslash commands (`\\d`, `\\load`, `\\timing on`, ...), psql style.

Each command is a function of the runner and its arguments, and one entry of COMMANDS, the table that
running, `\\help` and Tab completion all read. Commands about data issue SQL through the runner like any
statement (`\\d` is SHOW TABLES, `\\d NAME` is DESCRIBE NAME), so they are cancellable and their errors
read like a statement's.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path

from rich.table import Table
from rich.text import Text
from sqlglot import exp

from shell.commands import Argument, CommandTable, Kind, MetaCommand
from shell.datalog_mode import DatalogProgram
from shell.render import FORMATS, console
from shell.runner import Runner


class Quit(Exception):
    """`\\q`: leave the shell."""


class UsageError(Exception):
    """A meta-command given the wrong arguments."""


FILE_FORMATS = {
    ".csv": "csv",
    ".tsv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".json": "json",
    ".jsonl": "json",
    ".orc": "orc",
}
_SETTING = re.compile(r"^[A-Za-z_][\w.]*$")
ON_OFF = ("on", "off")


def run_meta(runner: Runner, line: str) -> None:
    """Run one meta-command line; raises Quit for `\\q`."""
    head, _, rest = line.strip().partition(" ")
    command = COMMANDS.find(head)
    name = command.name if command else head
    try:
        args = shlex.split(rest)  # a path with blanks is quoted
    except ValueError as error:  # an unclosed quote
        runner.report(f"{name}: {error}")
        return
    if command is None:
        runner.report(f"unknown command {name}: \\help lists the commands")
        return
    try:
        command.run(runner, args)
    except UsageError as error:
        runner.report(f"{name}: {error}. Usage: {name} {command.usage}".rstrip())


# ------------------------------------------------------------------ commands


def show_help(runner: Runner, args: list[str]) -> None:
    table = Table(box=None, show_header=False, padding=(0, 2, 0, 0))
    table.add_column(style="bold")
    table.add_column()
    for command in COMMANDS:
        table.add_row(Text(f"{command.name} {command.usage}".rstrip()), Text(command.summary))
    out = console(runner.out)
    out.print(
        "SQL statements end with ;  (Enter inside a statement starts a new line). "
        "Tab completes, Ctrl-C cancels a running query, Ctrl-D quits.\n",
        markup=False,
    )
    out.print(table)


def describe(runner: Runner, args: list[str]) -> None:
    if len(args) > 1:
        raise UsageError("takes at most one name")
    name = ".".join(identifier(part) for part in args[0].split(".")) if args else None  # db.t: Spark's
    runner.run_source(f"DESCRIBE {name}" if name else "SHOW TABLES", None)


def load(runner: Runner, args: list[str]) -> None:
    """A table over a CSV, Parquet, JSON or ORC file (or a directory of them), its format from the name."""
    if len(args) != 2:
        raise UsageError("takes a table name and a path")
    name, path = identifier(args[0]), Path(args[1]).expanduser().resolve()
    if not path.exists():
        runner.report(f"\\load: {args[1]} does not exist")
        return
    file_format = format_of(path)
    if file_format is None:
        runner.report(
            f"\\load: cannot tell the format of {args[1]}: "
            f"name it {', '.join(sorted(FILE_FORMATS))} (or a directory of such files)"
        )
        return
    import recsql  # here, not at the top: the prompt must not wait for Spark's Python modules

    options = {"path": str(path)}
    if file_format == "csv":
        options.update(header="true", inferSchema="true", sep="\t" if path.suffix == ".tsv" else ",")
    listed = ", ".join(f"{key} {exp.Literal.string(value).sql(dialect='spark')}" for key, value in options.items())
    try:
        runner.query(f"CREATE TABLE {name} USING {file_format} OPTIONS ({listed})")
        rows = runner.query(f"SELECT count(*) FROM {name}")[0][0]
        columns = ", ".join(f"{column} {kind}" for column, kind in runner.query(f"DESCRIBE {name}"))
    except recsql.QueryCancelled:
        runner.report("cancelled")
        return
    except recsql.Error as error:
        runner.report(f"\\load: {error.message}")
        return
    console(runner.out).print(f"{args[0]}: {rows:,} rows from {args[1]} ({columns})", markup=False, style="dim")


def include(runner: Runner, args: list[str]) -> None:
    if len(args) != 1:
        raise UsageError("takes one file")
    runner.run_script(args[0])


def switch(option: str) -> Callable[[Runner, list[str]], None]:
    """A command turning a boolean option on or off (or showing it, without an argument)."""

    def run(runner: Runner, args: list[str]) -> None:
        if args:
            if len(args) > 1 or args[0].lower() not in ON_OFF:
                raise UsageError("takes on or off")
            setattr(runner.options, option, args[0].lower() == "on")
        state = "on" if getattr(runner.options, option) else "off"
        console(runner.out).print(f"{option} is {state}", style="dim")

    return run


def set_format(runner: Runner, args: list[str]) -> None:
    if args:
        if len(args) > 1 or args[0].lower() not in FORMATS:
            raise UsageError(f"takes one of {', '.join(FORMATS)}")
        runner.options.format = args[0].lower()
    console(runner.out).print(f"output format is {runner.options.format}", style="dim")


def set_setting(runner: Runner, args: list[str]) -> None:
    if not args:
        runner.run_source("SET", None)
        return
    if len(args) != 2 or not _SETTING.match(args[0]):
        raise UsageError("takes a setting name and a value")
    runner.run_source(f"SET {args[0]} = {exp.Literal.string(args[1]).sql(dialect='spark')}", None)


def datalog_mode(runner: Runner, args: list[str]) -> None:
    """`\\datalog on|off|clear`: Datalog mode (rules build a program, `.output` runs it), SQL again, or a
    new program."""
    choice = args[0].lower() if args else ("off" if runner.datalog is not None else "on")
    if choice not in ("on", "off", "clear"):
        raise UsageError("takes on, off or clear")
    if choice == "off":
        runner.datalog = None
    elif choice == "clear" or runner.datalog is None:
        runner.datalog = DatalogProgram()
    state = "on: rules build a program, an .output runs it" if runner.datalog is not None else "off"
    console(runner.out).print(f"datalog is {state}", style="dim")


def quit_shell(runner: Runner, args: list[str]) -> None:
    raise Quit


# ------------------------------------------------------------------ helpers


def identifier(name: str) -> str:
    """`name` as SQL, quoted when it needs to be."""
    return exp.to_identifier(name).sql(dialect="spark")


def format_of(path: Path) -> str | None:
    """The file format of a file by its suffix, or of a directory by the suffix of its files."""
    if path.is_file():
        return FILE_FORMATS.get(path.suffix.lower())
    suffixes = {child.suffix.lower() for child in path.rglob("*") if child.is_file()}
    formats = {FILE_FORMATS[suffix] for suffix in suffixes if suffix in FILE_FORMATS}
    return formats.pop() if len(formats) == 1 else None


_NAME = Argument("NAME", Kind.TABLE)
_ON_OFF = Argument.choice(*ON_OFF)
COMMANDS = CommandTable(
    [
        MetaCommand("\\help", "this list", show_help, aliases=("\\?", "\\h")),
        MetaCommand(
            "\\d", "tables and views; with NAME, its columns and their types", describe, (_NAME,), optional=True
        ),
        MetaCommand(
            "\\load",
            "a table over a CSV, Parquet, JSON or ORC file or directory",
            load,
            (_NAME, Argument("PATH", Kind.PATH)),
        ),
        MetaCommand("\\i", "run the SQL script FILE", include, (Argument("FILE", Kind.PATH),)),
        MetaCommand(
            "\\explain", "show each query's plan above its result", switch("explain"), (_ON_OFF,), optional=True
        ),
        MetaCommand("\\timing", "show the time each statement takes", switch("timing"), (_ON_OFF,), optional=True),
        MetaCommand("\\format", "how results are printed", set_format, (Argument.choice(*FORMATS),), optional=True),
        MetaCommand(
            "\\set",
            "change a recsql or Spark setting; without arguments, list them",
            set_setting,
            (Argument("KEY", Kind.SETTING), Argument("VALUE", Kind.TEXT)),
            optional=True,
        ),
        MetaCommand(
            "\\datalog",
            "Datalog mode: rules build a program, an .output runs it (off: SQL; clear: a new program)",
            datalog_mode,
            (Argument.choice("on", "off", "clear"),),
            optional=True,
        ),
        MetaCommand("\\q", "quit (as Ctrl-D does)", quit_shell, aliases=("\\quit",)),
    ]
)
