"""A rule as one query tree (sqlglot), the one definition of what a rule derives for every strategy:
positive atoms joined on their shared variables (inner joins in body order, the optimizer's join order;
outer joins after them), conditions and assignments applied as soon as their variables are bound, semi-
and anti-joins last, then the head's projection or aggregation.

Each step is one nested SELECT whose columns are named after the IR variables it binds, so expressions
(sqlglot trees over variables) go into the query as they are. The tables an atom reads have positional
columns (c0 .. cN; a table function's own names). printing.py prints the tree for Spark or DuckDB.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TypeVar

from sqlglot import exp

from recsql.engine.columns import column_names
from translator.ir import WILDCARD, Assignment, Atom, Condition, JoinMethod, Rule

V = TypeVar("V")  # what names a version of a relation (planner.plan.Version)
AtomSources = Callable[[int, Atom], exp.Expr]  # the table (a name or a table function) a body atom reads
# a join method the optimizer chose -> the side to broadcast
JOIN_HINTS = {JoinMethod.BROADCAST: "r", JoinMethod.BROADCAST_LEFT: "l"}


def identifier(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


def column(name: str, table: str | None = None) -> exp.Column:
    return exp.column(identifier(name), table=identifier(table) if table else None)


def aliased(expression: exp.Expr, name: str) -> exp.Alias:
    return exp.Alias(this=expression, alias=identifier(name))


def table(name: str, alias: str | None = None) -> exp.Table:
    """A table read by name (a Spark view or a DuckDB registered table)."""
    return exp.Table(this=identifier(name), alias=exp.TableAlias(this=identifier(alias)) if alias else None)


def table_function(name: str, arguments: list[exp.Expr]) -> exp.Table:
    """A table function call in FROM, such as range(1, 10)."""
    return exp.Table(this=exp.Anonymous(this=name, expressions=arguments))


def range_call(atom: Atom) -> exp.Table:
    """The table function range(...) an atom reads (its arguments are literals)."""
    return table_function("range", [arg.copy() for arg in atom.call_args])


def versioned_sources(
    versions: tuple[V | None, ...] | None, outside: Callable[[Atom], str], version_table: Callable[[str, V], str]
) -> AtomSources:
    """What a fixpoint's rule reads for each atom: range(...), a relation outside the component, or the
    version of a relation of the component that `versions` names for its position."""

    def source(position: int, atom: Atom) -> exp.Expr:
        if atom.call_args:
            return range_call(atom)
        version = versions[position] if versions else None
        return table(outside(atom) if version is None else version_table(atom.relation, version))

    return source


def select(items: Sequence[exp.Expr], source: exp.Expr | None, where: exp.Expr | None = None) -> exp.Select:
    """SELECT items [FROM source] [WHERE where]; SQL has no empty SELECT list, so a query binding no
    variable keeps a placeholder column."""
    query = exp.Select(expressions=list(items) or [aliased(exp.Null(), "__unit")])
    if source is not None:
        query.set("from_", exp.From(this=source))
    if where is not None:
        query.set("where", exp.Where(this=where))
    return query


def conjunction(conditions: Sequence[exp.Expr]) -> exp.Expr | None:
    return exp.and_(*conditions, copy=False) if conditions else None


def nested(query: exp.Query, alias: str) -> exp.Subquery:
    return exp.Subquery(this=query, alias=exp.TableAlias(this=identifier(alias)))


@dataclass(frozen=True)
class Frame:
    """A query and the variables its columns bind, in order."""

    query: exp.Query
    columns: tuple[str, ...]

    def select(self, items: Sequence[exp.Expr], where: exp.Expr | None = None) -> exp.Select:
        return select(items, nested(self.query, "f"), where)


UNIT = Frame(
    select([aliased(exp.Literal.number(1), "__unit")], None), ()
)  # one row, no variables: a body without atoms


def rule_query(
    rule: Rule, source: AtomSources, extra_terms: tuple[exp.Expr, ...] = (), hints: bool = False
) -> exp.Select:
    """The facts `rule` derives (columns c0 .. cN); `extra_terms` follow the head's columns (contributor
    keys of monotonic sum/count). `hints`: broadcast hints for the join methods the optimizer chose."""
    return project(rule, join_body(rule, source, rule.joins if hints else ()), extra_terms)


def project(rule: Rule, frame: Frame, extra_terms: tuple[exp.Expr, ...]) -> exp.Select:
    """The head's projection (or aggregation) over the joined body."""
    terms = list(rule.terms) + list(extra_terms)
    items = [aliased(term.copy(), name) for term, name in zip(terms, column_names(len(terms)))]
    query = frame.select(items)
    if rule.is_aggregate:
        keys = [term for term in terms if not term.find(exp.AggFunc)]
        grouping = [term.copy() for term in keys if not constant(term)]
        if grouping:
            query.set("group", exp.Group(expressions=grouping))
        elif keys:  # grouped by constants alone: one group where there are rows, none over no row
            rows = exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0))
            query.set("having", exp.Having(this=rows))
    return query


CONSTANT = (exp.Literal, exp.Null, exp.Boolean, exp.Cast, exp.Neg, exp.Paren, exp.DataType, exp.DataTypeParam)


def constant(term: exp.Expr) -> bool:
    """A key made of literals: it groups nothing, and both engines read an integer literal in GROUP BY as the
    position of a select item (GROUP BY 0 an error), so it is left out of GROUP BY."""
    return all(isinstance(node, CONSTANT) for node in term.walk())


def join_body(rule: Rule, source: AtomSources, methods: tuple[JoinMethod, ...] = ()) -> Frame:
    positive = [(i, lit) for i, lit in enumerate(rule.body) if isinstance(lit, Atom) and not lit.filters]
    pending = [lit for lit in rule.body if isinstance(lit, (Condition, Assignment))]
    filters = [(i, lit) for i, lit in enumerate(rule.body) if isinstance(lit, Atom) and lit.filters]
    frame: Frame | None = None
    null_safe: set[str] = set()  # variables bound so far only by atoms matching NULL with NULL
    # inner joins in body order, then outer joins in written order: their ON conditions read only the
    # atoms before them (the order of inner joins does not change what a rule derives)
    ordered = [p for p in positive if not p[1].optional] + [p for p in positive if p[1].optional]
    for number, (position, atom) in enumerate(ordered):
        right = bind_atom(source(position, atom), atom)
        joined_null_safe = null_safe_after(null_safe, frame, right, atom)
        if atom.optional:
            assert atom.on is not None  # the translator gives every outer join its ON condition
            frame = left_join(frame or UNIT, right, atom.on)
        elif frame is None:
            frame = right
        else:
            hint = JOIN_HINTS.get(methods[number]) if number < len(methods) else None
            keys = set(right.columns) if atom.nulls_equal else null_safe
            frame = inner_join(frame, right, keys, hint)
        null_safe = joined_null_safe
        frame, pending = apply_ready(frame, pending)
    frame, pending = apply_ready(frame or UNIT, pending)
    if pending:
        unbound = set().union(*(literal.variables() for literal in pending)) - set(frame.columns)
        raise ValueError(f"rule {rule} uses unbound variables {sorted(unbound)}")
    for position, atom in filters:
        frame = filter_join(frame, bind_atom(source(position, atom), atom), atom)
    return frame


def null_safe_after(null_safe: set[str], frame: Frame | None, right: Frame, atom: Atom) -> set[str]:
    """The variables bound only by atoms matching NULL with NULL once `atom` (read as `right`) joins `frame`:
    such an atom matches NULL with NULL whether it is joined before or after the atoms it meets."""
    if not atom.nulls_equal:
        return null_safe - set(right.columns)
    return null_safe | (set(right.columns) - set(frame.columns if frame is not None else ()))


def apply_ready(frame: Frame, pending: list[Condition | Assignment]) -> tuple[Frame, list[Condition | Assignment]]:
    """Apply conditions and assignments whose variables are bound, repeatedly (assignments bind more).
    An assignment whose variable a join bound first (the join order put the atom reading it, such as an
    IN subquery's relation joined on the probe `2`, before the assignment) is the equality it stands for."""
    progress = True
    while progress:
        progress = False
        for literal in list(pending):
            if not literal.variables() <= set(frame.columns):
                continue
            pending.remove(literal)
            progress = True
            columns = [column(c) for c in frame.columns]
            if isinstance(literal, Assignment) and literal.variable in frame.columns:
                literal = Condition(exp.EQ(this=column(literal.variable), expression=literal.expression.copy()))
            if isinstance(literal, Condition):
                frame = Frame(frame.select(columns, literal.expression.copy()), frame.columns)
            else:
                item = aliased(literal.expression.copy(), literal.variable)
                frame = Frame(frame.select(columns + [item]), frame.columns + (literal.variable,))
    return frame, pending


def both_sides(left: Frame, right: Frame) -> tuple[list[exp.Column], tuple[str, ...]]:
    """The select list of a join of `left` (l) and `right` (r): every left column, then the right's new ones."""
    extra = tuple(c for c in right.columns if c not in left.columns)
    return [column(c, "l") for c in left.columns] + [column(c, "r") for c in extra], left.columns + extra


def left_join(left: Frame, right: Frame, on: exp.Expr) -> Frame:
    """LEFT JOIN ... ON: a left row without a match keeps NULLs for the atom's variables."""
    items, columns = both_sides(left, right)
    query = select(items, nested(left.query, "l"))
    query.set("joins", [exp.Join(this=nested(right.query, "r"), side="LEFT", on=qualified(on, set(right.columns)))])
    return Frame(query, columns)


def inner_join(left: Frame, right: Frame, null_safe: Collection[str], broadcast: str | None = None) -> Frame:
    """Join on the shared variables (a cross product when there are none), NULL matching NULL on those of
    `null_safe` (where one side is an atom that matches NULLs: INTERSECT's, in either order); `broadcast`:
    the side (l or r) to broadcast, as a Spark hint."""
    keys = [c for c in right.columns if c in left.columns]
    items, columns = both_sides(left, right)
    on = conjunction(
        [(exp.NullSafeEQ if k in null_safe else exp.EQ)(this=column(k, "l"), expression=column(k, "r")) for k in keys]
    )
    query = select(items, nested(left.query, "l"))
    join = (
        exp.Join(this=nested(right.query, "r"), on=on)
        if on is not None
        else exp.Join(this=nested(right.query, "r"), kind="CROSS")
    )
    query.set("joins", [join])
    if broadcast is not None:
        hint = exp.JoinHint(this="BROADCAST", expressions=[exp.Table(this=exp.to_identifier(broadcast))])
        query.set("hint", exp.Hint(expressions=[hint]))
    return Frame(query, columns)


def filter_join(left: Frame, right: Frame, atom: Atom) -> Frame:
    """Rows of `left` with some (semi-join) or no (anti-join) row of `right` equal on their shared
    variables (NULL equal to NULL for a `nulls_equal` atom); an atom's `on` condition must hold too
    (EXISTS with a condition, NOT IN's null-aware anti-join)."""
    keys = [c for c in right.columns if c in left.columns]
    equal = exp.NullSafeEQ if atom.nulls_equal and atom.on is None else exp.EQ
    conditions: list[exp.Expr] = [equal(this=column(k, "l"), expression=column(k, "r")) for k in keys]
    if atom.on is not None:
        conditions.insert(0, exp.Paren(this=qualified(atom.on, set(right.columns) - set(keys))))
    exists: exp.Expr = exp.Exists(
        this=select([exp.Literal.number(1)], nested(right.query, "r"), conjunction(conditions))
    )
    if not atom.semi:
        exists = exp.Not(this=exists)
    return Frame(select([column(c, "l") for c in left.columns], nested(left.query, "l"), exists), left.columns)


def bind_atom(source: exp.Expr, atom: Atom) -> Frame:
    """Name a table's columns after the atom's variables; a variable repeated in one atom becomes an
    equality filter, wildcards are dropped."""
    names, seen, equalities = [], [], []
    for i, arg in enumerate(atom.args):
        if arg == WILDCARD or arg in seen:
            names.append(f"__{i}")
            if arg != WILDCARD:
                equalities.append(exp.EQ(this=column(arg), expression=column(f"__{i}")))
        else:
            names.append(arg)
            seen.append(arg)
    source = source.copy()
    source.set("alias", exp.TableAlias(this=identifier("a"), columns=[identifier(n) for n in names]))
    return Frame(select([column(v) for v in seen], source, conjunction(equalities)), tuple(seen))


def qualified(expression: exp.Expr, right: set[str]) -> exp.Expr:
    """`expression` with each variable read from the right side (`r`) when it is one of `right`, else
    from the left side (`l`)."""

    def qualify(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table:
            return column(node.name, "r" if node.name in right else "l")
        return node

    return expression.copy().transform(qualify, copy=False)
