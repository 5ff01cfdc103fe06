"""What one contribution to a monotonic sum()/count() is (DeALS's msum / mcount).

A sum()/count() relation's value per group is the sum of its contributions, each contributor counting
with its latest (largest) value only. A contributor is one derivation: the rule, and the rows its body
joins, that is the values of every column of its positive atoms, the CTE's own aggregated values aside
(those are what grows from one iteration to the next, so a derivation reading a better value replaces
its earlier contribution instead of adding to it). Two parallel edges (0, 1, 4) and (0, 1, 3) are two
derivations; a table's duplicate rows are one. On acyclic data this gives the ordinary roll-up over
derivation trees (path counts, subtree sizes, bonus roll-ups). DeALS writes the contributor by hand
(`mcount<(Z, C)>`); SQL has no place for it, so it is the whole derivation.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

from sqlglot import exp

from translator.ir import WILDCARD, Atom, Relation, Rule


def contributor(rule: Rule, relations: Mapping[str, Relation], own: Collection[str]) -> tuple[Rule, tuple[str, ...]]:
    """`rule` with a variable for each column its positive atoms leave unnamed, and the variables that
    name its contributions: every column its positive atoms read, but the aggregated columns of the
    relations of `own` (its recursive component) and the variables the head's groups already hold.
    Atoms are numbered in a fixed order, so that every delta variant of a rule (whose joins the planner
    may order differently) names one contribution alike."""
    named = named_wildcards(rule)
    values = set()
    for atom in named.atoms:
        aggregate = relations[atom.relation].aggregate if atom.relation in own else None
        if aggregate is not None:
            values.add(atom.args[aggregate.column])
    groups = {
        term.name
        for position, term in enumerate(rule.terms)
        if isinstance(term, exp.Column) and not aggregated_column(rule, relations, position)
    }
    bound = set().union(*(atom.variables() for atom in named.atoms if not atom.filters))
    return named, tuple(sorted(bound - values - groups))


def aggregated_column(rule: Rule, relations: Mapping[str, Relation], position: int) -> bool:
    aggregate = relations[rule.head].aggregate
    return aggregate is not None and aggregate.column == position


def named_wildcards(rule: Rule) -> Rule:
    """`rule` with each unnamed column of a positive atom given a variable of its own."""
    order = sorted(range(len(rule.body)), key=lambda i: str(rule.body[i]))
    body = list(rule.body)
    for number, position in enumerate(order):
        literal = body[position]
        if isinstance(literal, Atom) and not literal.filters and WILDCARD in literal.args:
            args = tuple(f"__any{number}_{i}" if arg == WILDCARD else arg for i, arg in enumerate(literal.args))
            body[position] = replace(literal, args=args)
    return replace(rule, body=tuple(body))
