"""qmark parameters, bound into the parsed tree as literals (never spliced into SQL text)."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Sequence
from typing import Any

from sqlglot import exp

from recsql.errors import InterfaceError, ProgrammingError


def bind(statement: exp.Expression, params: Sequence[Any] | None) -> exp.Expression:
    placeholders = sorted(statement.find_all(exp.Placeholder), key=lambda p: p.meta.get("start", 0))
    params = list(params) if params is not None else []
    if isinstance(params, (str, bytes)):
        raise InterfaceError("parameters must be a sequence such as a tuple, not a string")
    if len(params) != len(placeholders):
        raise ProgrammingError(
            f"the statement has {len(placeholders)} parameter markers (?) but {len(params)} values were given"
        )
    if not placeholders:
        return statement
    statement = statement.copy()
    for placeholder in sorted(statement.find_all(exp.Placeholder), key=lambda p: p.meta.get("start", 0)):
        placeholder.replace(to_literal(params.pop(0)))
    return statement


def to_literal(value: Any) -> exp.Expression:
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float, decimal.Decimal)):
        literal = exp.Literal.number(abs(value) if value < 0 else value)
        return exp.Neg(this=literal) if value < 0 else literal
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, datetime.datetime):
        return exp.cast(exp.Literal.string(value.isoformat(sep=" ")), "timestamp")
    if isinstance(value, datetime.date):
        return exp.cast(exp.Literal.string(value.isoformat()), "date")
    raise InterfaceError(f"unsupported parameter type {type(value).__name__}")
