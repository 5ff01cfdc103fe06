"""The queries that merge derived facts into a relation, combine a relation's rules and shape the answer,
each defined once: its tree (printed for Spark or DuckDB by printing.py) beside the rule that gives the
column types Spark gives its result (so the local evaluator, which casts to them, and the type inference,
which reads them, follow the same definition).

A query reads named inputs (`Query.inputs`); states.py says which inputs and which queries each kind of
relation uses. All relations have positional columns (columns.py); NULL equals NULL wherever facts are
compared, as in set operations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, reduce
from typing import Any, Protocol

from sqlglot import exp

from recsql.engine.columns import CONTRIBUTOR, RULE_ID, VALUE, column_names
from recsql.engine.sql.printing import Dialect, Printer, renamed
from recsql.engine.sql.rules import aliased, column, conjunction, identifier, nested, select, table
from translator.ir import Aggregate, Program, Relation, SortKey, Window

CANDIDATES, FULL, DELTA, MERGED, CONTRIBUTIONS, DERIVED = (
    "__candidates",
    "__full",
    "__delta",
    "__merged",
    "__contributions",
    "__derived",
)


Row = tuple[Any, ...]  # the column types of a relation, in the terms of a type system (TypeRules): opaque here


class TypeRules(Protocol):
    """The type system a query's result types are told in (types/spark_types.py: Spark's)."""

    integer: object  # the type of an integer literal
    string: object

    def wider(self, left: Row, right: Row) -> Row:
        """The types of a union of relations of these types."""

    def total(self, value: object) -> object:
        """The type of sum() over values of this type."""


@dataclass(eq=False)
class Query:
    """A query over named inputs, and the types of its result from the types of its inputs."""

    tree: exp.Query
    inputs: tuple[str, ...]
    types: Callable[..., Row]  # (type rules, then the inputs' types by name) -> the result's types
    printed: dict[tuple[Dialect, bool], str] = field(default_factory=dict, compare=False)

    def sql(self, printer: Printer, names: Mapping[str, str] | None = None) -> str:
        """The query for `printer`'s engine, reading the inputs of `names` under those names. Printed once
        per engine when its inputs keep their names: an evaluation runs the same query every iteration."""
        if names:
            return printer.sql(renamed(self.tree, names))
        key = (printer.dialect, printer.ansi)
        if key not in self.printed:
            self.printed[key] = printer.sql(self.tree)
        return self.printed[key]


def everything(source: str, alias: str | None = None) -> exp.Select:
    return select([exp.Star()], table(source, alias))


def same_rows(left: str, right: str, names: Sequence[str]) -> exp.Expr:
    """Equality of the columns `names` of two aliased inputs, NULL equal to NULL."""
    return conjunction([exp.NullSafeEQ(this=column(n, left), expression=column(n, right)) for n in names]) or exp.true()


def absent_from(source: str, alias: str, names: Sequence[str]) -> exp.Not:
    """NOT EXISTS a row of `source` equal to the current row (`alias`) on `names`."""
    probe = select([exp.Literal.number(1)], table(source, "o"), same_rows("o", alias, names))
    return exp.Not(this=exp.Exists(this=probe))


def union_all(queries: Sequence[exp.Query]) -> exp.Query:
    return reduce(lambda left, right: exp.Union(this=left, expression=right, distinct=False), queries)


@lru_cache(maxsize=1024)
def new_facts(width: int) -> Query:
    """Distinct candidates not yet known: a set's delta. An anti-join, not EXCEPT: DuckDB then hashes
    the candidates rather than the larger, growing full relation, about twice as fast."""
    names = column_names(width)
    tree = select([exp.Star()], table(CANDIDATES, "c"), absent_from(FULL, "c", names))
    tree.set("distinct", exp.Distinct())
    return Query(tree, (CANDIDATES, FULL), lambda rules, **types: types[CANDIDATES])


def all_rows() -> Query:
    """The candidates as they are: a UNION ALL relation's delta."""
    return Query(everything(CANDIDATES), (CANDIDATES,), lambda rules, **types: types[CANDIDATES])


@lru_cache(maxsize=1024)
def best(relation: Relation) -> Query:
    """The min()/max() of each group of the candidates."""
    assert relation.aggregate is not None  # asked of a relation with a header aggregate only
    names = column_names(len(relation.columns))
    function = relation.aggregate.function.value
    items = [
        aliased(exp.func(function, column(n)), n) if i == relation.aggregate.column else column(n)
        for i, n in enumerate(names)
    ]
    tree = select(items, table(CANDIDATES, "s"))
    keys = [column(names[i]) for i in relation.group_key]
    if keys:
        tree.set("group", exp.Group(expressions=keys))
    return Query(tree, (CANDIDATES,), lambda rules, **types: types[CANDIDATES])


@lru_cache(maxsize=1024)
def improved(relation: Relation, outer_join: bool) -> Query:
    """The groups of the candidates whose min()/max() is better than the known one, or new. `outer_join`:
    compared with the known facts (one per group) through an outer join, filtered, where the engine runs
    it faster than the anti-join of `improves` (DuckDB: a hash join, where the anti-join's other
    conditions make it compare each candidate with its group's facts one by one)."""
    names = column_names(len(relation.columns))
    candidates = nested(best(relation).tree, "b")
    if not outer_join:
        tree = select([column(n, "b") for n in names], candidates, improves(relation, table(FULL)))
        return Query(tree, (CANDIDATES, FULL), lambda rules, **types: types[CANDIDATES])
    assert relation.aggregate is not None  # asked of a relation with a header aggregate only
    value = names[relation.aggregate.column]
    better = relation.aggregate.function.better()
    kept = exp.or_(
        exp.Is(this=column(value, "f"), expression=exp.Null()),
        better(this=column(value, "b"), expression=column(value, "f")),
    )
    tree = select([column(n, "b") for n in names], candidates, kept)
    keys = [names[i] for i in relation.group_key]
    tree.set("joins", [exp.Join(this=table(FULL, "f"), side="LEFT", on=same_rows("b", "f", keys))])
    return Query(tree, (CANDIDATES, FULL), lambda rules, **types: types[CANDIDATES])


def improves(relation: Relation, known: exp.Table) -> exp.Not:
    """Whether the candidate row `b` improves on its group's facts in `known`: none of them has a value (not
    NULL) that the candidate's does not better.

    NOT EXISTS (an anti-join), not an outer join filtered: Spark estimates an outer join's size as the
    product of its sides', and a checkpoint keeps its plan's estimate, so each iteration's delta would be
    estimated as the product of the last one's and the full relation's, whose digits double each
    iteration: past twenty iterations, estimating them took Spark longer than the iterations themselves."""
    assert relation.aggregate is not None  # asked of a relation with a header aggregate only
    names = column_names(len(relation.columns))
    value = names[relation.aggregate.column]
    better = relation.aggregate.function.better()
    bettered = exp.func("coalesce", better(this=column(value, "b"), expression=column(value, "f")), exp.false())
    known = known.copy()
    known.set("alias", exp.TableAlias(this=identifier("f")))
    as_good = select(
        [exp.Literal.number(1)],
        known,
        conjunction(
            [
                same_rows("f", "b", [names[i] for i in relation.group_key]),
                exp.Not(this=exp.Is(this=column(value, "f"), expression=exp.Null())),
                exp.Not(this=bettered),
            ]
        ),
    )
    return exp.Not(this=exp.Exists(this=as_good))


@lru_cache(maxsize=1024)
def overall_best(relation: Relation) -> Query:
    """The min()/max() of a relation without groups over what is known and the candidates."""
    assert relation.aggregate is not None  # asked of a relation with a header aggregate only
    names = column_names(len(relation.columns))
    both = union_all([everything(FULL), everything(CANDIDATES)])
    items = [aliased(exp.func(relation.aggregate.function.value, column(n)), n) for n in names]
    return Query(
        select(items, nested(both, "u")),
        (FULL, CANDIDATES),
        lambda rules, **types: rules.wider(types[FULL], types[CANDIDATES]),
    )


@lru_cache(maxsize=1024)
def one_per_key(relation: Relation) -> Query:
    """A USING KEY round's rows: one candidate per key (any one of them, as DuckDB keeps whichever it meets
    last); under UNION, only those the relation does not hold as they are."""
    names = column_names(len(relation.columns))
    keys = [column(names[i]) for i in relation.group_key]
    pick = exp.Window(
        this=exp.RowNumber(), partition_by=keys, order=exp.Order(expressions=[exp.Ordered(this=k.copy()) for k in keys])
    )
    ranked = select([exp.Star(), aliased(pick, "__pick")], table(CANDIDATES, "c"))
    tree = select(
        [column(n) for n in names], nested(ranked, "r"), exp.EQ(this=column("__pick"), expression=exp.Literal.number(1))
    )
    inputs: tuple[str, ...] = (CANDIDATES,)
    if relation.distinct:
        tree = select([exp.Star()], nested(tree, "k"), absent_from(FULL, "k", names))
        inputs = (CANDIDATES, FULL)
    return Query(tree, inputs, lambda rules, **types: types[CANDIDATES])


@lru_cache(maxsize=1024)
def replace_groups(relation: Relation) -> Query:
    """The known facts with the groups of the delta replaced by the delta's rows."""
    names = column_names(len(relation.columns))
    keys = [names[i] for i in relation.group_key]
    kept = select([exp.Star()], table(FULL, "f"), absent_from(DELTA, "f", keys))
    return Query(
        union_all([kept, everything(DELTA)]),
        (FULL, DELTA),
        lambda rules, **types: rules.wider(types[FULL], types[DELTA]),
    )


def identity_columns(relation: Relation) -> list[str]:
    """What identifies a contribution: its group, its rule and its contributor key."""
    names = column_names(len(relation.columns))
    return [names[i] for i in relation.group_key] + [RULE_ID, CONTRIBUTOR]


def candidate_columns(relation: Relation) -> list[str]:
    """The columns of a relation's candidates: its own, or for sum()/count() those of a contribution."""
    if relation.aggregate is not None and relation.aggregate.function.is_sum:
        return identity_columns(relation) + [VALUE]
    return column_names(len(relation.columns))


@lru_cache(maxsize=1024)
def contributions_of(relation: Relation, rule_id: int, contributors: int) -> Query:
    """A rule's output (head columns, then `contributors` contributor columns) as contributions: group
    keys, the rule, the contributor key as a JSON array of strings, the value."""
    assert relation.aggregate is not None  # asked of a relation with a header aggregate only
    value = relation.aggregate.column
    names = column_names(len(relation.columns))
    width = len(names)
    parts = [exp.Cast(this=column(f"c{width + i}"), to=exp.DataType.build("text")) for i in range(contributors)]
    items: list[exp.Expr] = [column(names[i]) for i in relation.group_key] + [
        aliased(exp.Literal.number(rule_id), RULE_ID),
        aliased(exp.JSONFormat(this=exp.Array(expressions=parts)), CONTRIBUTOR),
        aliased(column(names[value]), VALUE),
    ]

    def types(rules: TypeRules, **inputs: Row) -> Row:
        derived = inputs[DERIVED]
        keys = tuple(derived[i] for i in relation.group_key)
        return keys + (rules.integer, rules.string, derived[value])

    return Query(select(items, table(DERIVED, "d")), (DERIVED,), types)


@lru_cache(maxsize=1024)
def largest_contributions(relation: Relation, first: bool) -> Query:
    """Each contributor's largest (latest) value over the known contributions and the candidates."""
    identity = [column(n) for n in identity_columns(relation)]
    inputs = (CANDIDATES,) if first else (CONTRIBUTIONS, CANDIDATES)
    source = everything(CANDIDATES) if first else union_all([everything(CONTRIBUTIONS), everything(CANDIDATES)])
    tree = select(identity + [aliased(exp.Max(this=column(VALUE)), VALUE)], nested(source, "c"))
    tree.set("group", exp.Group(expressions=[c.copy() for c in identity]))
    return Query(tree, inputs, lambda rules, **types: reduce(rules.wider, [types[name] for name in inputs]))


@lru_cache(maxsize=1024)
def changed_groups(relation: Relation) -> Query:
    """The contributions (of MERGED) of the groups with a new or larger contribution than before."""
    names = column_names(len(relation.columns))
    keys = [names[i] for i in relation.group_key]
    differing = exp.Except(this=everything(MERGED), expression=everything(CONTRIBUTIONS), distinct=True)
    changed = select([column(k) for k in keys], nested(differing, "d"))
    changed.set("distinct", exp.Distinct())
    probe = select([exp.Literal.number(1)], nested(changed, "g"), same_rows("m", "g", keys))
    tree = select([exp.Star()], table(MERGED, "m"), exp.Exists(this=probe))
    return Query(tree, (MERGED, CONTRIBUTIONS), lambda rules, **types: types[MERGED])


@lru_cache(maxsize=1024)
def read(source: str) -> Query:
    """All rows of the input `source`."""
    return Query(everything(source), (source,), lambda rules, **types: types[source])


@lru_cache(maxsize=1024)
def totals(relation: Relation, contributions: Query) -> Query:
    """The sum of each group's contributions (the result of `contributions`), as the relation's facts."""
    assert relation.aggregate is not None  # asked of a relation with a header aggregate only
    names = column_names(len(relation.columns))
    keys = [names[i] for i in relation.group_key]
    value = relation.aggregate.column
    items = [aliased(exp.Sum(this=column(VALUE)), n) if i == value else column(n) for i, n in enumerate(names)]
    tree = select(items, nested(contributions.tree, "c"))
    if keys:
        tree.set("group", exp.Group(expressions=[column(k) for k in keys]))

    def types(rules: TypeRules, **inputs: Row) -> Row:
        summed = contributions.types(rules, **inputs)
        key_types = iter(summed[: len(keys)])
        return tuple(rules.total(summed[-1]) if i == value else next(key_types) for i in range(len(names)))

    return Query(tree, contributions.inputs, types)


def relation_query(relation: Relation, parts: Sequence[exp.Query]) -> exp.Query:
    """A non-recursive relation: the union of its rules' queries, deduplicated or aggregated as declared,
    then the rows its window keeps. For sum()/count() each distinct derived row is one contribution."""
    tree = combined(relation, union_all(parts))
    if relation.window is None:
        return tree
    return windowed(select([exp.Star()], nested(tree, "w")), relation.window)


def combined(relation: Relation, union: exp.Query) -> exp.Query:
    names = column_names(len(relation.columns))
    aggregate = relation.aggregate
    if aggregate is None:
        if not relation.distinct:
            return union
        distinct = select([exp.Star()], nested(union, "u"))
        distinct.set("distinct", exp.Distinct())
        return distinct
    summed = aggregate.function.is_sum
    source: exp.Expr = nested(union, "u")
    if summed:
        rows = select([exp.Star()], source)
        rows.set("distinct", exp.Distinct())
        source = nested(rows, "d")
    function = Aggregate.SUM if summed else aggregate.function
    items = [
        aliased(exp.func(function.value, column(n)), n) if i == aggregate.column else column(n)
        for i, n in enumerate(names)
    ]
    tree = select(items, source)
    keys = [column(names[i]) for i in relation.group_key]
    if keys:
        tree.set("group", exp.Group(expressions=keys))
    return tree


def answer_query(source: exp.Expr, program: Program) -> exp.Select:
    """The output relation's visible columns (c0 .. c{width-1}), ordered, skipped and limited as the
    query says; ORDER BY may read the hidden columns after them."""
    width = len(program.output_columns)
    return windowed(select([column(n) for n in column_names(width)], source), program.window)


def windowed(tree: exp.Select, window: Window) -> exp.Select:
    """`tree`'s rows ordered, skipped and limited as `window` says (the keys read columns c0 .. cN)."""
    if window.order_by:
        tree.set("order", exp.Order(expressions=[sort_key(key) for key in window.order_by]))
    if window.limit is not None:
        tree.set("limit", exp.Limit(expression=exp.Literal.number(window.limit)))
    if window.offset:
        tree.set("offset", exp.Offset(expression=exp.Literal.number(window.offset)))
    return tree


def shapes_answer(program: Program) -> bool:
    """Whether the answer is more than the output relation's visible columns as they are."""
    return bool(program.order_by or program.limit is not None or program.offset)


def sort_key(key: SortKey) -> exp.Ordered:
    """Spark's default: NULLs first ascending, last descending, unless the query says otherwise."""
    nulls_first = key.nulls_first if key.nulls_first is not None else not key.descending
    return exp.Ordered(this=column(f"c{key.column}"), desc=key.descending, nulls_first=nulls_first)
