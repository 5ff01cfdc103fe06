"""What the two fixpoint drivers (Spark's `Fixpoint` and the local `LocalFixpoint`) share, so that both
mean the same: the iteration loop with its limits and progress events, and what identifies a
contribution to a monotonic sum/count."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Protocol

from sqlglot import exp

from recsql.errors import OperationalError
from recsql.planner import Stratum
from recsql.settings import Settings
from translator.ir import Program, Relation, Rule


@dataclass(frozen=True)
class Progress:
    """One iteration of a recursive component (0: its exit rules), as reported to a progress listener."""

    relations: tuple[str, ...]
    iteration: int
    delta_rows: int
    total_rows: int
    elapsed: float  # since the component started
    facts: Mapping[str, int] = field(default_factory=dict)  # new facts per relation in this iteration


ProgressListener = Callable[[Progress], None]


class Evaluation(Protocol):
    """A recursive component being evaluated: each call absorbs newly derived facts and says how many
    facts are new (the size of the next delta)."""

    def start(self) -> int:
        """Absorb the facts of the exit rules."""

    def step(self) -> int:
        """Absorb the facts of one iteration of the delta rules."""

    def facts(self) -> Mapping[str, int]:
        """The new facts of each relation in the last start or step."""


class CapacityExceeded(Exception):
    """A local evaluation derived more facts than its stratum's capacity: the component belongs on Spark."""

    def __init__(self, relations: tuple[str, ...]):
        super().__init__(f"{', '.join(relations)} outgrew local evaluation")
        self.relations = relations


class Limits:
    """The bounds of one component's evaluation: iterations (`recsql.max_iterations`, or a CTE's smaller
    MAX RECURSION LEVEL) and derived rows (`recsql.max_rows`). Exceeding one is an error, never a
    silent truncation. `capacity`: derived rows past which the evaluation stops with CapacityExceeded
    (a local evaluation planned from estimates)."""

    def __init__(self, program: Program, stratum: Stratum, settings: Settings, capacity: int | None = None):
        self.program = program
        self.stratum = stratum
        self.capacity = capacity
        self.max_rows = settings.max_rows
        self.max_iterations = settings.max_iterations
        self.limited_by: Relation | None = None
        for name in stratum.relations:
            relation = program.relations[name]
            if relation.max_level is not None and relation.max_level < self.max_iterations:
                self.max_iterations, self.limited_by = relation.max_level, relation

    def check_iteration(self, iteration: int) -> None:
        if iteration > self.max_iterations:
            raise OperationalError(self.iteration_message())

    def check_rows(self, derived: int, iteration: int) -> None:
        if self.capacity is not None and derived > self.capacity:
            raise CapacityExceeded(self.stratum.relations)
        if derived > self.max_rows:
            raise OperationalError(
                f"recursive query over {self.names()} derived more than {self.max_rows} rows by iteration "
                f"{iteration} (recsql.max_rows); raise the limit with SET recsql.max_rows = <n> if this is expected"
            )

    def iteration_message(self) -> str:
        limit, limited_by = self.max_iterations, self.limited_by
        if limited_by is not None:
            return (
                f"recursive CTE '{limited_by.display_name}' exceeded MAX RECURSION LEVEL {limit}: iteration "
                f"{limit + 1} still derives new rows; raise the level in the query if deeper recursion is expected"
            )
        return (
            f"recursive query over {self.names()} did not reach a fixpoint within {limit} iterations "
            f"(recsql.max_iterations): iteration {limit + 1} still derives new rows. Raise the limit with "
            "SET recsql.max_iterations = <n> if the recursion is meant to go deeper; on cyclic data, "
            "UNION ALL and count()/sum() over paths never converge"
        )

    def names(self) -> str:
        return ", ".join(f"'{self.program.relations[n].display_name}'" for n in self.stratum.relations)


def iterate(evaluation: Evaluation, limits: Limits, progress: ProgressListener | None) -> int:
    """Run `evaluation` until an iteration derives nothing new; returns the number of iterations."""
    started = time.monotonic()
    new_rows = derived = evaluation.start()
    iteration = 0

    def report() -> None:
        if progress is not None:
            elapsed = time.monotonic() - started
            progress(Progress(limits.stratum.relations, iteration, new_rows, derived, elapsed, evaluation.facts()))

    report()
    while new_rows:
        iteration += 1
        limits.check_iteration(iteration)
        new_rows = evaluation.step()
        derived += new_rows
        limits.check_rows(derived, iteration)
        report()
    return iteration


def contributor_terms(program: Program, stratum: Stratum, rule: Rule) -> tuple[exp.Expression, ...]:
    """What identifies a contribution to a sum/count: the group keys of the recursive atoms it came
    from, or, for a rule reading no recursive relation, the whole derived row. The atoms are taken in
    a fixed order, so that every delta variant of a rule (whose joins the planner may order differently)
    names one contribution alike."""
    keys = []
    for atom in sorted(rule.atoms, key=str):
        if atom.relation in stratum.relations and not atom.filters:
            relation = program.relations[atom.relation]
            keys.extend(exp.column(atom.args[i]) for i in relation.group_key)
    return tuple(keys) if keys else tuple(term.copy() for term in rule.terms)


def rule_ids(program: Program) -> dict[tuple, int]:
    """A number per rule of the program, naming the rule a contribution comes from (see `rule_key`)."""
    return {rule_key(rule): i for i, rule in enumerate(program.rules)}


def rule_key(rule: Rule) -> tuple:
    """A rule up to the order of its body: the planner may reorder a delta variant's joins, and every
    variant of a rule contributes as that rule."""
    return rule.head, tuple(term.sql() for term in rule.terms), tuple(sorted(str(literal) for literal in rule.body))
