"""The two queries of an aggregate computed in parts (planner/part_aggregate.py): the partial query each
task runs over its facts (columns c0 .. cN), and the query combining the partial rows into the aggregate
relation's columns. The partial rows hold the group columns (g0 ..), then one partial per call (p0 ..).

A count combines as the sum of the counts (0 where no task had a row: a global count of nothing is 0); a
sum, a min and a max as themselves. A sum of integers is a BIGINT, as Spark types it: past its range, a
partial sum fails under ANSI mode and wraps around without it, as Spark's own partial sums do (the sum of
wrapped partial sums is the whole sum wrapped). A column whose facts the tasks hold wider than the
types they would have had in the iteration the fixpoint ended with (`casts`) is cast to that type.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pyspark.sql.types import DataType
from sqlglot import exp

from recsql.engine.columns import column_names
from recsql.engine.sql.rules import aliased, column, select
from recsql.planner.part_aggregate import Combined, Grouped, PartAggregate

INTEGERS = 2**64  # a wrapped sum of BIGINTs is its value modulo this, in the BIGINT range


def group_name(position: int) -> str:
    return f"g{position}"


def partial_name(position: int) -> str:
    return f"p{position}"


def partial_query(aggregate: PartAggregate, facts: exp.Expr, integer_sums: Sequence[bool], ansi: bool) -> exp.Select:
    """Each task's partial aggregates of its facts (for DuckDB); `integer_sums`: per partial call, whether
    it is a sum of integers; `ansi`: Spark's ANSI mode."""
    names = column_names(len(aggregate.rule.atoms[0].args))
    groups = [aliased(column(names[c]), group_name(i)) for i, c in enumerate(aggregate.groups)]
    partials = []
    for i, (call, integers) in enumerate(zip(aggregate.partials, integer_sums)):
        argument = exp.Star() if call.column is None else column(names[call.column])
        value: exp.Expr = exp.func(call.function, argument)
        if integers:
            value = exp.Cast(this=value if ansi else wrapped(value), to=exp.DataType.build("BIGINT"))
        partials.append(aliased(value, partial_name(i)))
    query = select(groups + partials, facts)
    return query.group_by(*[column(group_name(i)) for i in range(len(groups))]) if groups else query


def wrapped(total: exp.Expr) -> exp.Expr:
    """An integer (a HUGEINT sum) wrapped into the BIGINT range, as adding BIGINTs wraps around."""
    shift, modulus = exp.Literal.number(2**63), exp.Literal.number(INTEGERS)
    remainder = exp.Mod(this=exp.paren(exp.Add(this=total, expression=shift)), expression=modulus)
    positive = exp.Mod(this=exp.paren(exp.Add(this=remainder, expression=modulus.copy())), expression=modulus.copy())
    return exp.Sub(this=exp.paren(positive), expression=shift.copy())


def final_query(aggregate: PartAggregate, partial: exp.Expr, casts: Mapping[int, DataType]) -> exp.Select:
    """The aggregate relation's rows (columns c0 .. cN) from the tasks' partial rows; `casts`: the types of
    the recursive relation's columns (by position) that its facts would have had, where they differ."""
    groups = {c: i for i, c in enumerate(aggregate.groups)}

    def typed(value: exp.Expr, source_column: int) -> exp.Expr:
        if source_column not in casts:
            return value
        return exp.Cast(this=value, to=exp.DataType.build(casts[source_column].simpleString(), dialect="spark"))

    items: list[exp.Expr] = []
    calls = 0  # the partial calls seen so far
    for term in aggregate.terms:
        if isinstance(term, Grouped):
            items.append(typed(column(group_name(groups[term.column])), term.column))
        elif term.distinct:
            assert term.column is not None
            argument = typed(column(group_name(groups[term.column])), term.column)
            items.append(exp.func(term.function, exp.Distinct(expressions=[argument])))
        else:
            items.append(combined(term, column(partial_name(calls)), typed))
            calls += 1
    query = select([aliased(item, name) for item, name in zip(items, column_names(len(items)))], partial)
    keys = [column(group_name(groups[term.column])) for term in aggregate.terms if isinstance(term, Grouped)]
    return query.group_by(*keys) if keys else query


def combined(call: Combined, partial: exp.Column, typed: Callable[[exp.Expr, int], exp.Expr]) -> exp.Expr:
    """One call's value from its partials."""
    if call.function == "count":
        return exp.func("coalesce", exp.func("sum", partial), exp.Literal.number(0))
    if call.function == "sum":
        return exp.func("sum", partial)
    assert call.column is not None
    return typed(exp.func(call.function, partial), call.column)
