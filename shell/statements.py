"""Split SQL scripts into statements and map statement positions back to the script.

Splitting uses the recsql dialect's tokenizer rather than a hand-written scanner, so a `;` inside a string
literal, a quoted identifier, a comment or a `DATALOG $$ ... $$` program never ends a statement, with
exactly the quoting and escaping rules of the dialect the engine parses.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from translator.dialect import RecSQL

_OBJECT_KINDS = ("TABLE", "VIEW", "DATABASE", "SCHEMA", "FUNCTION")


@dataclass(frozen=True)
class Statement:
    """One statement of a script: its text and where that text starts in the script (1-based)."""

    text: str
    line: int
    column: int


def split(script: str) -> list[Statement]:
    """Statements of `script` in order, without their `;`, leading comments or empty statements.

    An unterminated string or comment does not raise here: the text from the last complete statement
    on becomes one final statement, so the engine reports the syntax error at its real place.
    """
    tokens, complete = tokenize(script)
    statements = []
    start = None  # offset of the first token of the statement being read
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if start is not None:
                statements.append(_statement(script, start, token.start))
            start = None
        elif start is None:
            start = token.start
    if not complete:
        start = _first_code(script, tokens) if start is None else start
    if start is not None and script[start:].strip():
        statements.append(_statement(script, start, len(script)))
    return statements


def is_complete(text: str) -> bool:
    """True when `text` ends with a `;` that ends a statement (not one in a string or comment).

    The interactive shell uses it to decide whether Enter runs the input or starts a new line.
    """
    tokens, complete = tokenize(text)
    return complete and bool(tokens) and tokens[-1].token_type == TokenType.SEMICOLON


def command_tag(text: str) -> str:
    """The kind of a statement, as a confirmation names it: `CREATE TABLE`, `DROP VIEW`, `INSERT`, `SET`."""
    words = [token.text.upper() for token in tokenize(text)[0][:6]]
    if words and words[0] in ("CREATE", "DROP", "ALTER"):
        kind = next((word for word in words[1:] if word in _OBJECT_KINDS), None)
        return f"{words[0]} {kind}" if kind else words[0]
    return words[0] if words else ""


def script_position(statement: Statement, line: int, column: int) -> tuple[int, int]:
    """Position in the script of the 1-based (line, column) inside `statement.text`."""
    if line == 1:
        return statement.line, statement.column + column - 1
    return statement.line + line - 1, column


def tokenize(text: str) -> tuple[list[Token], bool]:
    """Tokens of `text` and whether tokenizing reached the end (False on an unterminated literal)."""
    tokenizer = RecSQL.tokenizer_class()
    try:
        return tokenizer.tokenize(text), True
    except TokenError:
        return tokenizer.tokens, False


def _first_code(script: str, tokens: list[Token]) -> int:
    """Offset of the first non-blank character after the last `;` (where tokenizing failed)."""
    after = next((t.end + 1 for t in reversed(tokens) if t.token_type == TokenType.SEMICOLON), 0)
    return after + len(script[after:]) - len(script[after:].lstrip())


def _statement(script: str, start: int, end: int) -> Statement:
    """The statement spanning script[start:end], trailing blanks removed."""
    line = script.count("\n", 0, start) + 1
    column = start - (script.rfind("\n", 0, start) + 1) + 1
    return Statement(script[start:end].rstrip(), line, column)
