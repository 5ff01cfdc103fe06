"""Scalar subqueries that may return more than one row for a row of the query: an error, as in SQL.

A scalar subquery is an outer-joined relation (translator/conditions.py); joined as it is, a subquery
with two rows for a row of the query would repeat that row. Where the relation is not at most one row per
correlation key by construction (an aggregate without GROUP BY or grouped by those keys, a LIMIT 1,
a single row), the query joins instead its rows counted per key, and the value it reads is an error
where that count is above 1. Both engines print the check: Spark's `raise_error`, DuckDB's `error`.

Contributes: at_most_one_row, one_row_value.
"""

from __future__ import annotations

from sqlglot import exp

from translator.errors import position_of
from translator.ir import RAISE_ERROR, Program, var, variables_of


def at_most_one_row(program: Program, relation: str, keys: frozenset[int], seen: frozenset[str] = frozenset()) -> bool:
    """Whether `relation` has at most one row for each value of its columns at `keys`, as its rules make it:
    a window of one row, a monotonic aggregate grouped by keys among them, one rule that aggregates grouped
    by them (or by what they determine), computes a row from no relation, or reads one relation at most one
    row per the columns its key variables come from. False where it cannot tell."""
    info = program.relations.get(relation)
    if info is None or relation in seen:
        return False
    if info.window is not None and info.window.limit is not None and info.window.limit <= 1:
        return True
    if info.aggregate is not None:
        return set(info.group_key) <= keys
    rules = program.rules_for(relation)
    if len(rules) != 1:
        return False
    rule = rules[0]
    key_variables = {term.name for i, term in enumerate(rule.terms) if i in keys and isinstance(term, exp.Column)}
    if rule.is_aggregate:
        return all(
            i in keys or variables_of(term) <= key_variables
            for i, term in enumerate(rule.terms)
            if not term.find(exp.AggFunc)
        )
    joined = [atom for atom in rule.atoms if not atom.filters]
    if not joined:
        return True
    if len(joined) > 1 or joined[0].optional or joined[0].call_args:
        return False
    atom = joined[0]
    inner_keys = frozenset(i for i, arg in enumerate(atom.args) if arg in key_variables)
    return at_most_one_row(program, atom.relation, inner_keys, seen | {relation})


def one_row_value(value: str, rows: str, subquery: exp.Expr) -> exp.Expr:
    """A scalar subquery's `value` where it is read, an error where its count of `rows` for the row of the
    query is above 1. The error is part of the value, not a condition of its own: a condition on the
    subquery's columns alone could be evaluated on its rows before the join (after the outer join was made
    inner), failing for keys no row of the query has, and a condition on the value could drop a row before
    the check did."""
    line, column = position_of(subquery)
    where = f" (line {line}, column {column})" if line is not None else ""
    message = exp.Literal.string(f"a scalar subquery returned more than one row{where}")
    error = exp.Anonymous(this=RAISE_ERROR, expressions=[message])
    more = exp.GT(this=var(rows), expression=exp.Literal.number(1))
    return exp.Case(ifs=[exp.If(this=more, true=error)], default=var(value))
