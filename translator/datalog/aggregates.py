"""Soufflé's aggregates in rule bodies as rules with aggregates in their heads, which the IR has.

    out(X, N) :- node(X), N = count : { edge(X, _) }.

becomes a relation grouping the aggregate's body by the variables it shares with the rest of its rule
(`X`, the correlation), read by the rule where the aggregate stood:

    count_1(X, count<_>) :- edge(X, _).
    out(X, N) :- node(X), count_1(X, N).
    out(X, N) :- node(X), !count_1(X, _), N = 0.     // count and sum of nothing are 0

A correlated variable the aggregate's own atoms do not bind (`count : { d(Y), Y < X }`) takes its values
from the rest of the rule, a context relation joined into the aggregate's body. Min, max and mean of
nothing make no value: the rule derives nothing there, as in Soufflé.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, replace

from sqlglot import exp

from translator.datalog.syntax import (
    AtomSyntax,
    BodyAggregate,
    BodyLiteral,
    Clause,
    ComparisonSyntax,
    HeadAggregate,
    HeadTerm,
    ProgramSyntax,
)
from translator.errors import TranslationError
from translator.ir import WILDCARD, variables_of

EMPTY_IS_ZERO = ("count", "sum")
SUMMED = ("mcount", "msum")


def without_body_aggregates(syntax: ProgramSyntax) -> ProgramSyntax:
    """`syntax` with every body aggregate made a relation of its own (module docstring)."""
    if not any(clause.aggregates for clause in syntax.clauses):
        return syntax
    taken = {clause.head.relation for clause in syntax.clauses} | {
        literal.relation for clause in syntax.clauses for literal in clause.body if isinstance(literal, AtomSyntax)
    }
    names = RelationNames(taken)
    clauses = [made for clause in syntax.clauses for made in rewritten(clause, names)]
    return replace(syntax, clauses=clauses)


class RelationNames:
    """Names for the relations the rewrite makes (`count_1`, `min_2`, `context_3`), none a program's own."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken
        self.numbers = itertools.count(1)

    def new(self, stem: str) -> str:
        name = next(f"{stem}_{n}" for n in self.numbers if f"{stem}_{n}" not in self.taken)
        self.taken.add(name)
        return name


def rewritten(clause: Clause, names: RelationNames) -> Iterator[Clause]:
    """The clauses that say what `clause` says with its first body aggregate read from a relation (and so,
    recursively, until none is left)."""
    if not clause.aggregates:
        yield clause
        return
    if any(isinstance(term, HeadAggregate) for term in clause.terms):
        yield from bindings_first(clause, names)
        return
    aggregate, *others = clause.aggregates
    outer = clause.body
    correlated = sorted(shared_variables(aggregate, clause) - {aggregate.variable})
    relation = names.new(aggregate.function)
    inner = list(aggregate.body)
    if bound_outside_only(aggregate, clause):
        context = names.new("context")
        yield from rewritten(context_clause(context, correlated, clause, aggregate), names)
        inner.insert(0, AtomSyntax(context, tuple(map(exp.column, correlated)), False, aggregate.place))
    term = HeadAggregate(aggregate.function, aggregate.argument, aggregate.place)
    group = tuple(map(exp.column, correlated))
    yield from rewritten(
        Clause(
            AtomSyntax(relation, group, False, aggregate.place),
            (*group, term),
            tuple(inner),
            aggregate.place,
            aggregate.aggregates,
        ),
        names,
    )
    value = exp.column(aggregate.variable)
    if not group and aggregate.function not in EMPTY_IS_ZERO:  # one row, NULL for a min of nothing
        is_value = exp.Not(this=exp.Is(this=value.copy(), expression=exp.Null()))
        read: tuple[BodyLiteral, ...] = (
            AtomSyntax(relation, (value,), False, aggregate.place),
            ComparisonSyntax(is_value, aggregate.place),
        )
    elif group or aggregate.function not in EMPTY_IS_ZERO:
        read = (AtomSyntax(relation, (*group, value), False, aggregate.place),)
    else:  # one row, NULL for a sum of nothing
        raw = exp.column(f"{aggregate.variable}_raw")
        zero_if_null = exp.EQ(this=value, expression=exp.func("coalesce", raw, exp.Literal.number(0)))
        read = (AtomSyntax(relation, (raw,), False, aggregate.place), ComparisonSyntax(zero_if_null, aggregate.place))
    yield from rewritten(replace(clause, body=(*outer, *read), aggregates=tuple(others)), names)
    tainted = Tainted.of(clause)
    bound_outside = bound_by_atoms(tuple(literal for literal in outer if not tainted.touches(literal)))
    if aggregate.function in EMPTY_IS_ZERO and group and set(correlated) <= bound_outside:
        none = AtomSyntax(relation, (*group, exp.column(WILDCARD)), True, aggregate.place)
        is_zero = exp.EQ(this=exp.column(aggregate.variable), expression=exp.Literal.number(0))
        zero = ComparisonSyntax(is_zero, aggregate.place)
        yield from rewritten(replace(clause, body=(*outer, none, zero), aggregates=tuple(others)), names)


def bindings_first(clause: Clause, names: RelationNames) -> Iterator[Clause]:
    """A rule aggregating in its head whose body aggregates too: its body's bindings first, a relation of
    their own (which the rules the body aggregates become derive together), then the head's aggregate over
    them, once."""
    literals = named_wildcards(clause.body)
    variables: tuple[exp.Expr, ...] = tuple(map(exp.column, sorted(variables_in(literals) - {WILDCARD})))
    variables = variables or (exp.Literal.number(1),)
    bindings = AtomSyntax(names.new(f"{clause.head.relation}_bindings"), variables, False, clause.place)
    yield from rewritten(Clause(bindings, variables, literals, clause.place, clause.aggregates), names)
    yield replace(clause, body=(bindings,), aggregates=())


def bound_outside_only(aggregate: BodyAggregate, clause: Clause) -> set[str]:
    """The variables correlating the aggregate with its rule that its own atoms do not bind: their values
    come from the rest of the rule (a context relation)."""
    correlated = shared_variables(aggregate, clause) - {aggregate.variable}
    return correlated - bound_by_atoms(aggregate.body)


def shared_variables(aggregate: BodyAggregate, clause: Clause) -> set[str]:
    """The variables of the aggregate's body that the rest of its rule names too (not another aggregate:
    the variables of each aggregate's body are its own)."""
    inside = variables_in(aggregate.body) | nested_variables(aggregate)
    outside = variables_in(clause.body) | {v for term in clause.head.arguments for v in variables_of(term)}
    return (inside & outside) - {WILDCARD}


def nested_variables(aggregate: BodyAggregate) -> set[str]:
    found = variables_of(aggregate.argument) if aggregate.argument is not None else set()
    for inner in aggregate.aggregates:
        found |= variables_in(inner.body) | nested_variables(inner)
    return found


def variables_in(body: tuple[BodyLiteral, ...] | list[BodyLiteral]) -> set[str]:
    found: set[str] = set()
    for literal in body:
        expressions = literal.arguments if isinstance(literal, AtomSyntax) else (literal.expression,)
        for expression in expressions:
            found |= variables_of(expression)
    return found


def bound_by_atoms(body: tuple[BodyLiteral, ...]) -> set[str]:
    return variables_in([literal for literal in body if isinstance(literal, AtomSyntax) and not literal.negated])


@dataclass(frozen=True)
class Tainted:
    """The variables of a rule whose values come from its body aggregates: their own, and those no atom
    binds that a comparison ties to one (`X = N + 1`, N an aggregate's)."""

    variables: frozenset[str]

    @classmethod
    def of(cls, clause: Clause) -> Tainted:
        tainted = {aggregate.variable for aggregate in clause.aggregates}
        bound = bound_by_atoms(clause.body)
        comparisons = [literal for literal in clause.body if isinstance(literal, ComparisonSyntax)]
        grown = True
        while grown:
            grown = False
            for comparison in comparisons:
                found = variables_of(comparison.expression) - bound
                if found & tainted and not found <= tainted:
                    tainted |= found
                    grown = True
        return cls(frozenset(tainted))

    def touches(self, literal: BodyLiteral) -> bool:
        return bool(variables_in([literal]) & self.variables)


def context_clause(name: str, correlated: list[str], clause: Clause, aggregate: BodyAggregate) -> Clause:
    """`name(correlated...) :- ` the rule's literals that do not read an aggregate's value: every binding
    of the correlated variables the rule can make (and perhaps more, which the rule's own join drops)."""
    tainted = Tainted.of(clause)
    body = tuple(literal for literal in clause.body if not tainted.touches(literal))
    head = tuple(map(exp.column, correlated))
    return Clause(AtomSyntax(name, head, False, aggregate.place), head, body, aggregate.place)


def sums_outside_recursion(syntax: ProgramSyntax, recursive: set[str]) -> ProgramSyntax:
    """`mcount` and `msum` of relations outside any recursion as stratified aggregates: a derivation
    there is a binding of the rule's body (`deg(X, mcount<_>) :- edge(X, _).` counts edges; `mcount<X>`
    the distinct Xs; `msum<C>` adds each binding's C; a pair `msum<(Z, C)>` each Z's largest C), where
    a relation with no recursion would otherwise count its distinct rows. A relation of several rules, or
    of a pair, sums parts, one group per rule and contributor:
    `h_part_1(K.., rule, Z, max<C>) :- body.` and `h(K.., sum<C>) :- h_part_1(K.., _, _, C).`"""
    names = RelationNames({clause.head.relation for clause in syntax.clauses})
    clauses: list[Clause] = []
    for relation in dict.fromkeys(clause.head.relation for clause in syntax.clauses):
        rules = [clause for clause in syntax.clauses if clause.head.relation == relation]
        summed = [t for c in rules for t in c.terms if isinstance(t, HeadAggregate) and t.function in SUMMED]
        if relation in recursive or not summed:
            clauses += rules
        elif len(rules) == 1 and summed[0].contributor is None:
            clauses.append(replace(rules[0], terms=tuple(map(stratified, rules[0].terms))))
        else:
            clauses += summed_parts(relation, rules, names.new(f"{relation}_part"))
    return replace(syntax, clauses=clauses)


def stratified(term: HeadTerm) -> HeadTerm:
    """The stratified aggregate a rule's own `mcount`/`msum` (not a pair) is when its relation does not
    recurse."""
    if not isinstance(term, HeadAggregate) or term.function not in SUMMED:
        return term
    if term.function == "msum":
        return HeadAggregate("sum", term.argument, term.place)
    return HeadAggregate("count" if term.argument is None else "countd", term.argument, term.place)


def summed_parts(relation: str, rules: list[Clause], part: str) -> Iterator[Clause]:
    """Each rule's sums, per contributor of a pair, tagged by the rule; then their sum per group."""
    width = len(rules[0].terms)
    position = next(i for i, t in enumerate(rules[0].terms) if isinstance(t, HeadAggregate))
    place = rules[0].place
    for number, rule in enumerate(rules):
        term = rule.terms[position] if len(rule.terms) == width else None
        if not isinstance(term, HeadAggregate) or term.function not in SUMMED:
            raise TranslationError(
                f"the rules of '{relation}' aggregate differently", rule.place.line, rule.place.column
            )
        groups = [term for i, term in enumerate(rule.terms) if i != position and isinstance(term, exp.Expr)]
        value: HeadTerm
        if term.contributor is not None:
            contributor, value = term.contributor, HeadAggregate("max", term.argument, term.place)
        else:
            contributor, value = exp.Literal.number(0), stratified(term)
        plain = (*groups, exp.Literal.number(number), contributor)
        yield replace(rule, head=AtomSyntax(part, plain, False, rule.head.place), terms=(*plain, value))
    keys: list[HeadTerm] = [exp.column(f"_k{i}") for i in range(width - 1)]
    total = exp.column("_total")
    read = AtomSyntax(part, (*keys, exp.column(WILDCARD), exp.column(WILDCARD), total), False, place)  # type: ignore[arg-type]
    head = AtomSyntax(relation, tuple(keys), False, place)  # type: ignore[arg-type]
    keys.insert(position, HeadAggregate("sum", total, place))
    yield Clause(head, tuple(keys), (read,), place)


DUPLICATES_COUNT = ("count", "sum", "mean")


def bodies_as_sets(syntax: ProgramSyntax) -> ProgramSyntax:
    """A count, sum or mean whose body reads a table counts each binding of the body once, though the
    table may hold a row twice (a relation is a set): such a body becomes a relation of its own,
    `count_body_1(X, Y) :- edge(X, Y).`, which the aggregate reads."""
    derived = {clause.head.relation for clause in syntax.clauses}
    names = RelationNames(derived | {a.relation for c in syntax.clauses for a in c.body if isinstance(a, AtomSyntax)})
    clauses: list[Clause] = []
    for clause in syntax.clauses:
        counted = any(isinstance(t, HeadAggregate) and t.function in DUPLICATES_COUNT for t in clause.terms)
        reads_table = any(
            isinstance(literal, AtomSyntax) and not literal.negated and literal.relation not in derived
            for literal in clause.body
        )
        if not (counted and reads_table):
            clauses.append(clause)
            continue
        literals = named_wildcards(clause.body)
        variables: tuple[exp.Expr, ...] = tuple(map(exp.column, sorted(variables_in(literals) - {WILDCARD})))
        variables = variables or (exp.Literal.number(1),)  # no variable: one binding, or none
        body = AtomSyntax(names.new(f"{clause.head.relation}_body"), variables, False, clause.place)
        clauses += [Clause(body, variables, literals, clause.place), replace(clause, body=(body,))]
    return replace(syntax, clauses=clauses)


def named_wildcards(body: tuple[BodyLiteral, ...]) -> tuple[BodyLiteral, ...]:
    """The body with each `_` of a positive atom a variable of its own: a binding differs by them too."""
    numbers = itertools.count()

    def named(argument: exp.Expr) -> exp.Expr:
        is_wildcard = isinstance(argument, exp.Column) and argument.name == WILDCARD
        return exp.column(f"_w{next(numbers)}") if is_wildcard else argument

    return tuple(
        replace(literal, arguments=tuple(map(named, literal.arguments)))
        if isinstance(literal, AtomSyntax) and not literal.negated
        else literal
        for literal in body
    )
