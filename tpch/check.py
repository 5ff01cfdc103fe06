"""Comparing two answers of one query: numbers to the cent, rows in order when the query orders them."""

from __future__ import annotations

import datetime
import math
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import sqlglot

CENT = 0.005  # two numbers match when they round to the same cent, give or take rounding at the boundary


def ordered(sql: str) -> bool:
    """The query orders its answer (a top-level ORDER BY)."""
    return sqlglot.parse_one(sql, dialect="spark").args.get("order") is not None


def difference(got: Sequence[tuple], expected: Sequence[tuple], in_order: bool) -> str | None:
    """None when the answers match, else the first difference in words."""
    if len(got) != len(expected):
        return f"{len(got)} rows, expected {len(expected)}"
    if not in_order:
        got, expected = sorted(got, key=sort_key), sorted(expected, key=sort_key)
    for number, (row, reference) in enumerate(zip(got, expected), start=1):
        if len(row) != len(reference) or not all(same(a, b) for a, b in zip(row, reference)):
            return f"row {number}: {row}, expected {reference}"
    return None


def same(value: Any, reference: Any) -> bool:
    if is_number(value) and is_number(reference):
        return math.isclose(float(value), float(reference), rel_tol=1e-12, abs_tol=CENT)
    if isinstance(value, datetime.datetime) != isinstance(reference, datetime.datetime):
        return False
    return value == reference


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def sort_key(row: tuple) -> tuple:
    """Rows of an unordered answer sorted alike on both sides (NULLs first, numbers by their cent)."""
    return tuple(
        (0, "") if value is None else (1, round(float(value), 2)) if is_number(value) else (2, str(value))
        for value in row
    )
