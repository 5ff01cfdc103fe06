"""Calls in a Datalog program's expressions as recsql's SQL reads them: Soufflé's functors (`cat`,
`to_string`, `substr`, binary `min`/`max`, ...) as the SQL functions they mean, parsed by the recsql
dialect so that they are the trees a SQL query's calls are."""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from translator.dialect import RecSQL

SOUFFLE_FUNCTORS = {  # Soufflé's name: the SQL it means, over its arguments {0}, {1}, ...
    "to_string": "CAST({0} AS STRING)",
    "to_number": "CAST({0} AS BIGINT)",
    "to_float": "CAST({0} AS DOUBLE)",
    "strlen": "LENGTH({0})",
    "substr": "SUBSTRING({0}, {1} + 1, {2})",  # Soufflé counts from 0, SQL from 1
}
VARIADIC = {"cat": "CONCAT", "min": "LEAST", "max": "GREATEST"}
PLACEHOLDER = "__functor_argument_"  # a name no program's variable takes in the parsed call


def functor(name: str, arguments: list[exp.Expr]) -> exp.Expr:
    """A call in an expression as recsql's SQL reads it: Soufflé's functors as their SQL functions, any
    other name as the SQL function of that name; a ValueError says what is wrong with the call."""
    lowered = name.lower()
    placeholders = [f"{PLACEHOLDER}{i}" for i in range(len(arguments))]
    if lowered in SOUFFLE_FUNCTORS:
        template = SOUFFLE_FUNCTORS[lowered]
        wanted = len(set(re.findall(r"\{\d\}", template)))
        if len(arguments) != wanted:
            raise ValueError(f"{name} takes {wanted} argument(s), not {len(arguments)}")
        text = template.format(*placeholders)
    else:
        text = f"{VARIADIC.get(lowered, name)}({', '.join(placeholders)})"
    try:
        call = sqlglot.parse_one(text, read=RecSQL)
    except sqlglot.errors.ParseError:
        raise ValueError(f"unknown function {name}") from None
    by_name = dict(zip(placeholders, arguments))
    return call.transform(
        lambda node: by_name[node.name].copy() if isinstance(node, exp.Column) and node.name in by_name else node
    )
