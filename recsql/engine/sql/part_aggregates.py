"""The two queries of an aggregate computed in parts (planner/part_aggregate.py): the partial query each
task runs over its facts (columns c0 .. cN), and the query combining the partial rows into the aggregate
relation's columns. The partial rows hold the group columns (g0 ..), then one partial per call (p0 ..).

A count combines as the sum of the counts (0 where no task had a row: a global count of nothing is 0); a
sum over integers as the sum of exact partial sums, cast to BIGINT as Spark types an integer sum; a sum over
floating point numbers, a min and a max as themselves. Combined values are cast to the types the relation's
columns have in the iteration the fixpoint ended with (`types`), as its facts would have been.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql.types import DataType, DecimalType
from sqlglot import exp

from recsql.engine.columns import column_names
from recsql.engine.sql.rules import aliased, column, select
from recsql.planner.part_aggregate import Combined, Grouped, PartAggregate

EXACT_SUM = DecimalType(38, 0)  # a partial sum of integers: no part's sum overflows it


def group_name(position: int) -> str:
    return f"g{position}"


def partial_name(position: int) -> str:
    return f"p{position}"


def partial_query(aggregate: PartAggregate, facts: exp.Expr, exact_sums: Sequence[bool]) -> exp.Select:
    """Each task's partial aggregates of its facts; `exact_sums`: per partial call, whether it is a sum of
    integers (computed as an exact DECIMAL)."""
    names = column_names(len(aggregate.rule.atoms[0].args))
    groups = [aliased(column(names[c]), group_name(i)) for i, c in enumerate(aggregate.groups)]
    partials = []
    for i, (call, exact) in enumerate(zip(aggregate.partials, exact_sums)):
        argument = exp.Star() if call.column is None else column(names[call.column])
        value: exp.Expr = exp.func(call.function, argument)
        if exact:
            value = exp.Cast(this=value, to=exp.DataType.build(EXACT_SUM.simpleString()))
        partials.append(aliased(value, partial_name(i)))
    query = select(groups + partials, facts)
    return query.group_by(*[column(group_name(i)) for i in range(len(groups))]) if groups else query


def final_query(
    aggregate: PartAggregate, partial: exp.Expr, exact_sums: Sequence[bool], types: Sequence[DataType]
) -> exp.Select:
    """The aggregate relation's rows (columns c0 .. cN) from the tasks' partial rows; `types`: of the
    recursive relation's columns as its facts would have been typed."""
    groups = {c: i for i, c in enumerate(aggregate.groups)}

    def typed(value: exp.Expr, source_column: int) -> exp.Expr:
        return exp.Cast(this=value, to=exp.DataType.build(types[source_column].simpleString(), dialect="spark"))

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
            items.append(combined(term, column(partial_name(calls)), exact_sums[calls], typed))
            calls += 1
    query = select([aliased(item, name) for item, name in zip(items, column_names(len(items)))], partial)
    keys = [column(group_name(groups[term.column])) for term in aggregate.terms if isinstance(term, Grouped)]
    return query.group_by(*keys) if keys else query


def combined(
    call: Combined, partial: exp.Column, exact_sum: bool, typed: Callable[[exp.Expr, int], exp.Expr]
) -> exp.Expr:
    """One call's value from its partials."""
    if call.function == "count":
        return exp.func("coalesce", exp.func("sum", partial), exp.Literal.number(0))
    if call.function == "sum":
        total = exp.func("sum", partial)
        return exp.Cast(this=total, to=exp.DataType.build("BIGINT")) if exact_sum else total
    assert call.column is not None
    return typed(exp.func(call.function, partial), call.column)
