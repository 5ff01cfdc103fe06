"""The interactive shell: type SQL, end it with `;`, see the answer.

Enter runs the input once it ends with a statement-ending `;` and starts a new line otherwise, so long
recursive queries can be typed and edited as a whole; history persists across sessions.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from shell.cli import run_source
from shell.statements import is_complete

if TYPE_CHECKING:
    from recsql import Connection

HISTORY = Path("~/.recsql_history").expanduser()
PROMPT = "recsql> "
GREETING = "recsql: recursive SQL on Spark. End statements with ;  Ctrl-D quits."


def repl(conn: Connection, fmt: str = "table") -> int:
    """Read statements and print their results until Ctrl-D; returns the exit code (0)."""
    session: PromptSession[str] = PromptSession(
        history=FileHistory(str(HISTORY)),
        multiline=True,
        key_bindings=_key_bindings(),
        prompt_continuation=_continuation,
    )
    print(GREETING)
    while True:
        try:
            text = session.prompt(PROMPT)
        except KeyboardInterrupt:  # Ctrl-C drops the current input, like a shell
            continue
        except EOFError:
            return 0
        _run(conn, text, fmt)


def _run(conn: Connection, text: str, fmt: str) -> None:
    """Run the input; an unexpected failure is reported in one line and the session goes on."""
    try:
        run_source(conn, text, None, sys.stdout, sys.stderr, fmt)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
    except Exception as error:  # noqa: BLE001 - a bug must not end the user's session
        print(f"{type(error).__name__}: {error}", file=sys.stderr)


def _key_bindings() -> KeyBindings:
    """Enter runs a finished statement (or empty input) and adds a new line to an unfinished one."""
    bindings = KeyBindings()

    @bindings.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if not buffer.text.strip() or is_complete(buffer.text):
            buffer.validate_and_handle()
        else:
            buffer.insert_text("\n")

    return bindings


def _continuation(width: int, line_number: int, wrap_count: int) -> str:
    """The prompt of the second and later lines: `...>` aligned with `recsql>`."""
    return "...> ".rjust(width)
