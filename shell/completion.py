"""Tab completion for the shell: SQL keywords, functions, tables, views, their columns, the CTEs of the
statement being typed with their columns, and the meta-commands with their arguments.

The SQL words come from `shell.vocabulary` (only what recsql accepts); the meta-commands and the kind of
each of their arguments from the command table the completer is given, so a command added there
completes with no change here. The known tables come from a `Schema` the shell refreshes after each
statement; what the statement itself defines is read by `shell.scope` on every key press.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document

from shell.commands import Argument, CommandTable, Kind
from shell.scope import Schema, Scope
from shell.statements import tokenize
from shell.vocabulary import FUNCTIONS, KEYWORDS

# After these words comes the name of a table or view.
RELATION_CONTEXT = {"FROM", "JOIN", "INTO", "TABLE", "VIEW", "DESCRIBE", "DESC", "ANALYZE", "EXISTS"}
_WORD = re.compile(r"[\w.`]+$")


class SqlCompleter(Completer):
    def __init__(self, schema: Schema, commands: CommandTable):
        self.schema = schema
        self.commands = commands
        self.paths = PathCompleter(expanduser=True)

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        if document.text.lstrip().startswith("\\"):
            yield from self.meta(document, complete_event)
            return
        word = _word_before(document.text_before_cursor)
        scope = Scope.of(document.text, self.schema)
        qualifier, _, prefix = word.rpartition(".")
        if qualifier:
            yield from _matches(prefix, scope.columns_of(qualifier), "column")
            return
        previous = _previous_keyword(document.text_before_cursor[: len(document.text_before_cursor) - len(word)])
        if previous in RELATION_CONTEXT:
            yield from _matches(prefix, scope.ctes, "CTE")
            yield from self.relations(prefix)
            return
        yield from _matches(prefix, scope.visible_columns(), "column")
        yield from _matches(prefix, scope.ctes, "CTE")
        yield from self.relations(prefix)
        yield from _matches(prefix, FUNCTIONS, "function")
        keywords = KEYWORDS if not prefix or not prefix.islower() else [k.lower() for k in KEYWORDS]
        yield from _matches(prefix, keywords, "keyword")

    def relations(self, prefix: str) -> Iterator[Completion]:
        for name, (kind, _) in self.schema.relations.items():
            yield from _matches(prefix, [name], kind)

    def meta(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        """A meta-command's name, then each argument as the command table says what it names."""
        text = document.text_before_cursor.lstrip()
        words = text.split()
        if len(words) <= 1 and not text.endswith(" "):
            yield from _matches(text, self.commands.names(), "command")
            return
        command = self.commands.find(words[0])
        argument = command.argument(len(words) - (0 if text.endswith(" ") else 1)) if command else None
        if argument is not None:
            yield from self.argument(argument, "" if text.endswith(" ") else words[-1], complete_event)

    def argument(self, argument: Argument, current: str, complete_event: CompleteEvent) -> Iterator[Completion]:
        """What may stand for `argument`, the cursor's word being `current`."""
        if argument.kind is Kind.TABLE:
            yield from self.relations(current)
        elif argument.kind is Kind.SETTING:
            yield from _matches(current, self.schema.settings, "setting")
        elif argument.kind is Kind.PATH:
            yield from self.paths.get_completions(Document(current, len(current)), complete_event)
        elif argument.kind is Kind.CHOICE:
            yield from _matches(current, argument.choices, "")


def _word_before(text: str) -> str:
    match = _WORD.search(text)
    return match.group(0).replace("`", "") if match else ""


def _matches(prefix: str, candidates: Iterable[str], meta: str) -> Iterator[Completion]:
    lowered = prefix.lower()
    for candidate in candidates:
        if candidate.lower().startswith(lowered) and candidate != prefix:
            yield Completion(candidate, start_position=-len(prefix), display_meta=meta)


def _previous_keyword(text: str) -> str:
    """The last word before the cursor's word, upper-cased ('' at the start)."""
    tokens = tokenize(text)[0]
    return tokens[-1].text.upper() if tokens else ""
