"""Ownership for a distributed evaluation whose tasks keep their facts (strategies/exchanged.py): the
column whose value says which task owns a fact of a recursive relation.

Each task evaluates the delta rules over its own delta and whole copies of the relations the recursive
rules read, so every rule may read the component only once: a rule joining two facts of the recursive
relation (`tc(x, z) :- tc(x, y), tc(y, z)`) would miss the pairs held by different tasks. The owner of a
min()/max()/sum()/count() relation is a group key, so that a group's candidates and contributions all
reach the task that merges them; a set's or a bag's may be any column.
"""

from __future__ import annotations

from collections.abc import Sequence

from recsql.analysis import Component
from translator.ir import Program, Rule


def owner_column(
    program: Program, component: Component, recursive_rules: list[Rule], distinct: Sequence[float] = ()
) -> int | None:
    """The owner column of the component's relation, or None when its tasks could not keep their facts
    (several relations, a rule reading the relation twice, an aggregate without a group key). Of the
    columns that may own, the one with the most distinct values (`distinct`, estimated per column): the
    facts spread over the tasks as evenly as its values do (`reach(7, y)` by y, not by the 7)."""
    if len(component.relations) != 1:
        return None
    (name,) = component.relations
    if any(sum(atom.relation == name for atom in rule.atoms) > 1 for rule in recursive_rules):
        return None
    relation = program.relations[name]
    candidates = relation.group_key if relation.aggregate is not None else range(len(relation.columns))
    if not candidates:
        return None
    return max(candidates, key=lambda column: distinct[column] if column < len(distinct) else 0.0)
