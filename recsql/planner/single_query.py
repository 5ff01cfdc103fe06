"""Whether a recursive stratum, run in this process, may be ONE DuckDB `WITH RECURSIVE` query printed from its
rules instead of the semi-naive loop (a DuckDB query and a Python round trip per iteration).

DuckDB's recursive CTE has the loop's meaning for one relation recursing linearly: under UNION ALL each round
reads the last round's rows, as the loop's delta does; under UNION each round keeps the rows not known yet,
as the loop's set merge does. Its rules are printed as the loop prints them, so values are the same. The
loop's limits stop it where they stop the loop: under UNION ALL a column counting the rounds bounds the
iterations (engine/local/recursive_query.py runs the query in chunks of rounds and checks the limits
between them); under UNION, where such a column would keep rows differing only in it, the query calls back
with each round's rows for the loop's checks. A min() / max() in the header keeps the loop's merge: each
round's candidates grouped, the groups whose value improves on the best known (DuckDB's `USING KEY` recursion
reads what is known as `recurring`) kept, with their round counted as under UNION ALL.

What depends on the data (the types settling from the first round) is checked when the stratum runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from recsql.analysis import Component
from recsql.planner.first_rows import Stop
from translator.ir import Iteration, Program, Rule


@dataclass(frozen=True)
class SingleQuery:
    """The verdict on a recursive stratum, with the reason EXPLAIN gives."""

    fits: bool
    reason: str

    def __str__(self) -> str:
        how = "one DuckDB recursive query" if self.fits else "a DuckDB query per iteration"
        return f"{how}: {self.reason}"


def single_query(
    program: Program, component: Component, recursive_rules: list[Rule], iteration: Iteration, stop: Stop | None
) -> SingleQuery:
    """Whether the stratum of `component` may run in this process as one DuckDB recursive query."""
    if len(component.relations) > 1:
        return SingleQuery(False, "several relations recurse together")
    (name,) = component.relations
    relation = program.relations[name]
    aggregate = relation.aggregate
    if aggregate is not None and not aggregate.function.is_extremum:
        return SingleQuery(False, f"{aggregate.function.value}() in the CTE's header")
    if aggregate is not None and not relation.group_key:
        return SingleQuery(False, f"{aggregate.function.value}() of the whole relation, without groups")
    if stop is not None:
        return SingleQuery(False, "a LIMIT over it stops the iterations as soon as it has its rows")
    if iteration is Iteration.KEYED:
        return SingleQuery(False, "USING KEY: its rounds replace rows by key")
    for rule in recursive_rules:
        refusal = nonlinear(rule, name)
        if refusal:
            return SingleQuery(False, refusal)
    if aggregate is not None:
        return SingleQuery(
            True,
            f"{aggregate.function.value}() in the CTE's header: each round keeps the groups it improves (USING KEY), "
            "a column counting the iterations",
        )
    if iteration is Iteration.BAG:
        return SingleQuery(True, "UNION ALL, its rounds counted by a column (by its rows where a round is one row)")
    return SingleQuery(True, "UNION, each round's new rows counted by a call back as the query runs")


def nonlinear(rule: Rule, name: str) -> str:
    """Why `rule` is not one plain reference to the relation `name` and tables (empty: it is)."""
    references = [atom for atom in rule.atoms if atom.relation == name]
    if len(references) > 1:
        return "a rule reads the relation more than once (non-linear recursion)"
    (reference,) = references
    if reference.filters or reference.optional:
        return "a rule reads the relation in a subquery or an outer join"
    if rule.is_aggregate:
        return "a recursive rule aggregates"
    return ""
