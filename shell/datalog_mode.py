"""The shell's Datalog mode (`\\datalog on`): rules, facts, `.decl` and `.input` lines entered one input at a
time build a program; an input with an `.output` runs the program so far with that output and prints the
answer. An input whose program fails adds nothing, so a mistake can be typed again. `EXPLAIN [ANALYZE]`
before an input with an `.output` shows the plan of the program so far instead, and keeps nothing.

    datalog> tc(X, Y) :- edge(X, Y).
    datalog> tc(X, Y) :- tc(X, Z), edge(Z, Y).
    datalog> .output tc
    datalog> EXPLAIN .output tc
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from translator.datalog.syntax import parse
from translator.errors import TranslationError

DIRECTIVES = (".decl", ".input", ".output")
HEAD = re.compile(r"(?:^|\.)\s*([A-Za-z_]\w*)\s*\(", re.MULTILINE)  # a clause's head, or a .decl's relation
OUTPUT = re.compile(r"^\s*\.output\b", re.MULTILINE)
EXPLAIN = re.compile(r"^\s*EXPLAIN(?:\s+ANALYZE)?\b", re.IGNORECASE)
WORD = re.compile(r"[A-Za-z_.][\w.]*$")


class DatalogProgram:
    """The program the Datalog mode has been given so far."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def relations(self) -> set[str]:
        """The relations the program's clauses and declarations name."""
        return set(HEAD.findall(self.text))

    def enter(self, text: str, run: Callable[[str], int], report: Callable[[str], None]) -> None:
        """Add an input to the program; run the program (`run`, 0 when it succeeded) when the input has
        an `.output`; `report` says what is wrong with an input not kept."""
        explain = EXPLAIN.match(text)
        if explain is not None:
            rest = text[explain.end() :]
            if not OUTPUT.search(rest):
                report(f"{explain.group().strip()} takes the .output whose plan to show: EXPLAIN .output name")
                return
            run("\n".join([explain.group().strip(), *self.lines, rest.strip()]))
            return
        if not OUTPUT.search(text):
            try:
                parse(text)  # a syntax error is reported now, not at the next .output
            except TranslationError as error:
                report(f"syntax error at line {error.line}, column {error.column}: {error.message}")
                return
            self.lines.append(text.strip())
            return
        body = "\n".join(line for line in text.splitlines() if not OUTPUT.match(line))
        program = "\n".join([*self.lines, text])
        if run(program) == 0 and body.strip():
            self.lines.append(body.strip())

    def clear(self) -> None:
        self.lines = []


def is_complete(text: str) -> bool:
    """Whether a Datalog input is ready to run: it ends with a clause's `.` or a directive line."""
    stripped = EXPLAIN.sub("", text.strip(), count=1).strip()
    last = stripped.splitlines()[-1].strip() if stripped else ""
    return stripped.endswith(".") or last.startswith(DIRECTIVES)


class DatalogCompleter(Completer):
    """Directives, the program's own relations and the catalog's tables."""

    def __init__(self, program: DatalogProgram, tables: Iterable[str]):
        self.program = program
        self.tables = tables

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        match = WORD.search(document.text_before_cursor)
        if match is None:
            return
        word = match.group()
        names = DIRECTIVES if word.startswith(".") else sorted(self.program.relations() | set(self.tables))
        for name in names:
            if name.startswith(word) and name != word:
                yield Completion(name, start_position=-len(word))
