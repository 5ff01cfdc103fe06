"""The interactive shell: type SQL, end it with `;`, see the answer.

Enter runs the input once it ends with a statement-ending `;` (or is a backslash command) and starts a
new line otherwise, so long recursive queries can be typed and edited as a whole. History persists in
~/.recsql_history; Tab completes names the catalog and the statement define; SQL is highlighted.
"""

from __future__ import annotations

import sys
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import DynamicCompleter
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.lexers import DynamicLexer, PygmentsLexer
from prompt_toolkit.patch_stdout import patch_stdout
from pygments.lexers.prolog import PrologLexer
from pygments.lexers.sql import SqlLexer

from shell.completion import SqlCompleter
from shell.datalog_mode import DatalogCompleter
from shell.datalog_mode import is_complete as datalog_complete
from shell.meta import COMMANDS, Quit, run_meta
from shell.render import console
from shell.runner import Runner
from shell.scope import Schema
from shell.statements import is_complete

HISTORY = Path("~/.recsql_history")
PROMPT = "recsql> "
DATALOG_PROMPT = "datalog> "
GREETING = "recsql: recursive SQL on Spark. End statements with ;  \\help for help, Ctrl-D quits."
QUIT_WORDS = ("quit", "exit")


def repl(runner: Runner) -> int:
    """Read statements and meta-commands and print their results until Ctrl-D or \\q; returns 0."""
    schema = Schema()
    sql_completer, sql_lexer, datalog_lexer = (
        SqlCompleter(schema, COMMANDS),
        PygmentsLexer(SqlLexer),
        PygmentsLexer(PrologLexer),
    )
    session: PromptSession[str] = PromptSession(
        history=FileHistory(str(HISTORY.expanduser())),
        multiline=True,
        key_bindings=_key_bindings(runner),
        prompt_continuation=_continuation,
        lexer=DynamicLexer(lambda: datalog_lexer if runner.datalog is not None else sql_lexer),
        completer=DynamicCompleter(
            lambda: DatalogCompleter(runner.datalog, schema.relations) if runner.datalog is not None else sql_completer
        ),
        complete_while_typing=False,
    )
    print(GREETING)
    with patch_stdout(raw=True):  # a message printed while the prompt is shown goes above it
        runner.startup.on_failure(_report_failure)
        while True:
            try:
                prompt = DATALOG_PROMPT if runner.datalog is not None else PROMPT
                text = session.prompt(prompt, pre_run=runner.startup.start)  # Spark starts once the prompt shows
            except KeyboardInterrupt:  # Ctrl-C drops the current input, like a shell
                continue
            except EOFError:
                return 0
            try:
                _run(runner, text)
            except Quit:
                return 0
            if text.strip():  # what ran may have created or dropped tables
                _refresh(runner, schema)


def _run(runner: Runner, text: str) -> None:
    """Run the input; an unexpected failure is reported in one line and the session goes on."""
    stripped = text.strip()
    try:
        if stripped.startswith("\\"):
            run_meta(runner, stripped)
        elif stripped.rstrip(";").lower() in QUIT_WORDS:
            raise Quit
        elif stripped and runner.datalog is not None:
            runner.datalog.enter(text, lambda program: runner.run_program(program, None), runner.report)
        elif stripped:
            runner.run_source(text, None)
    except KeyboardInterrupt:  # Ctrl-C outside a statement (waiting for Spark, in the pager)
        runner.report("interrupted")
    except Quit:
        raise
    except Exception as error:
        runner.report(f"{type(error).__name__}: {error}")


def _report_failure(error: BaseException) -> None:
    """Why Spark did not start, printed above the prompt (sys.stdout is the prompt's proxy here)."""
    console(sys.stdout).print(f"recsql: {getattr(error, 'message', error)}", style="red", markup=False)


def _refresh(runner: Runner, schema: Schema) -> None:
    """Catch up the completer with the catalog (tables may have been created or dropped)."""
    import recsql

    if not runner.startup.ready:
        return
    try:
        tables = runner.query("SHOW TABLES")
        settings = runner.query("SET")
    except recsql.Error:
        return
    schema.relations = {name: (kind, tuple(columns)) for name, kind, columns, _ in tables}
    schema.settings = tuple(key for key, _ in settings)


def _key_bindings(runner: Runner) -> KeyBindings:
    """Enter runs a finished statement (in Datalog mode: a clause ending in `.` or a directive), a
    meta-command or empty input, and adds a new line otherwise."""
    bindings = KeyBindings()

    @bindings.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        text = buffer.text.strip()
        complete = datalog_complete if runner.datalog is not None else is_complete
        if not text or text.startswith("\\") or text.rstrip(";").lower() in QUIT_WORDS or complete(buffer.text):
            buffer.validate_and_handle()
        else:
            buffer.insert_text("\n")

    return bindings


def _continuation(width: int, line_number: int, wrap_count: int) -> str:
    """The prompt of the second and later lines: `...>` aligned with `recsql>`."""
    return "...> ".rjust(width)
