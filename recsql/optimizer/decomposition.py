"""Decomposability (generalized pivoting): can a recursive component be evaluated as independent parts?

A column of a recursive relation is a pivot when every recursive rule copies it unchanged from each
recursive atom of its body to its head: `tc(x, z) :- tc(x, y), edge(y, z)` keeps `x`. Partition the
facts of the exit rules on the pivot, give every part all of the other relations the recursive rules
read, and each part reaches its fixpoint without a fact of any other part: every fact a part derives
has the pivot value of the facts it came from. The union of the parts' fixpoints is the component's.

Non-linear rules (`tc(x, z) :- tc(x, y), tc(y, z)`) and rules that move the value (`reach(y) :-
reach(x), edge(x, y)`) have no pivot. For min()/max()/sum()/count() the pivot must be a group key, so
that every group (and every contribution to it) lives in one part. UNION ALL recursions decompose
alike: a round's rows come from the last round's rows of the same part.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from sqlglot import exp

from recsql.analysis import Component
from translator.ir import Program, Rule


@dataclass(frozen=True)
class Decomposition:
    pivots: dict[str, int]  # relation -> the column its facts are partitioned on
    broadcast: tuple[str, ...]  # the relations and tables every part reads in full


@dataclass(frozen=True)
class NotDecomposable:
    reason: str


def decompose(program: Program, component: Component, recursive_rules: list[Rule]) -> Decomposition | NotDecomposable:
    """The pivot of each relation of `component`, given the rules that read it, or why there is none."""
    if len(component.relations) > 1:
        return NotDecomposable("mutually recursive relations")
    relations = [program.relations[name] for name in component.relations]
    candidates = [r.group_key if r.aggregate is not None else range(len(r.columns)) for r in relations]
    for choice in product(*candidates):
        pivots = dict(zip(component.relations, choice))
        if all(keeps_pivot(rule, pivots) for rule in recursive_rules):
            broadcast = sorted(
                {
                    atom.relation
                    for rule in recursive_rules
                    for atom in rule.atoms
                    if atom.relation not in component and not atom.call_args
                }
            )
            return Decomposition(pivots, tuple(broadcast))
    return NotDecomposable("no column passes unchanged through every recursive rule (no pivot)")


def keeps_pivot(rule: Rule, pivots: dict[str, int]) -> bool:
    """The head's pivot is a variable that every recursive atom of the body holds at its pivot."""
    term = rule.terms[pivots[rule.head]]
    if not isinstance(term, exp.Column) or term.table:
        return False
    recursive = [atom for atom in rule.atoms if atom.relation in pivots and not atom.call_args]
    return all(
        not atom.filters and not atom.optional and atom.args[pivots[atom.relation]] == term.name for atom in recursive
    )
