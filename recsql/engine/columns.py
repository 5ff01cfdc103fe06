"""Names every strategy gives the columns it evaluates: relations have positional columns c0 .. cN, and a
contribution to a monotonic sum/count is (group keys, RULE_ID, CONTRIBUTOR, VALUE)."""

from __future__ import annotations

RULE_ID, CONTRIBUTOR, VALUE = "__rule", "__contributor", "__value"


def column_names(width: int) -> list[str]:
    return [f"c{i}" for i in range(width)]
