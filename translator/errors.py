"""Errors raised while parsing and translating SQL.

The translator knows nothing of DB-API; the recsql package maps these onto its PEP 249 classes
(TranslationError -> ProgrammingError, UnsupportedError -> NotSupportedError).
"""

from __future__ import annotations

from sqlglot import exp


class TranslationError(Exception):
    """SQL the user got wrong: syntax, unknown names, misplaced aggregates."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column

    @classmethod
    def at_node(cls, message: str, node: exp.Expr | None) -> TranslationError:
        """An error positioned at the first token of `node` that sqlglot recorded a position for."""
        line, column = position_of(node)
        return cls(message, line, column)


class UnsupportedError(TranslationError):
    """Valid SQL that recsql does not implement (yet)."""


class NotInSpark(UnsupportedError):
    """Valid SQL that neither the IR models nor Spark SQL evaluates (a CTE reading an outer query's columns,
    a subquery correlated across two levels): refused with what to write instead, not left to Spark."""


def position_of(node: exp.Expr | None) -> tuple[int | None, int | None]:
    """(line, column) of the leftmost identifier or literal under `node`, as sqlglot recorded it."""
    if node is None:
        return None, None
    best: tuple[int, int] | None = None
    for sub in node.walk():
        meta = getattr(sub, "_meta", None) or {}
        if "line" in meta:
            found = (meta["line"], meta["col"] - max(meta.get("end", 0) - meta.get("start", 0), 0))
            if best is None or found < best:
                best = found
    return best if best else (None, None)
