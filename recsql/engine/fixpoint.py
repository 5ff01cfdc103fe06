"""Semi-naive evaluation of one recursive component, written once for every engine (spark/engine.py,
local/engine.py, and the type inference of types/result_types.py): the exit rules, then the stratum's
delta variants until no new fact is derived (or, for UNION ALL, until a round derives no row), within
the limits of `recsql.max_iterations`, `recsql.max_rows` and a local evaluation's capacity."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import numpy as np
from sqlglot import exp

from recsql.engine.progress import Progress, ProgressListener
from recsql.engine.sql import queries as q
from recsql.engine.sql.queries import Query
from recsql.engine.states import Engine, Facts, State, SumState, state_for
from recsql.errors import OperationalError
from recsql.planner.first_rows import Path
from recsql.planner.plan import Stratum, Variant, Version
from recsql.settings import Settings
from translator.contributions import contributor
from translator.ir import Atom, Program, Relation, Rule, var

Versions = tuple[Version | None, ...] | None  # per body literal, the version an atom of the component reads


Candidates = TypeVar("Candidates")  # an engine's handle of derived facts not yet merged (SQL text, a DataFrame)


class RuleEngine(Engine[Facts], Protocol[Facts, Candidates]):
    """An engine that derives facts from rules, besides keeping them (states.Engine)."""

    def begin(self, iteration: int) -> None:
        """The next merges belong to this iteration (0: the exit rules)."""

    def arrange(self, variants: Sequence[Variant], delta_rows: Mapping[str, float]) -> Sequence[Variant]:
        """The variants to evaluate this iteration, their joins ordered for deltas of these sizes."""

    def publish(self, relation: str, version: Version, facts: Facts) -> None:
        """Make a version of a relation of the component readable by the rules derived next."""

    def derive(self, rule: Rule, versions: Versions, extra_terms: tuple[exp.Expr, ...]) -> Candidates:
        """The candidates of `rule`, each atom of the component reading its published version."""

    def contribute(self, query: Query, derived: Candidates) -> Candidates:
        """Candidates: `query` (of input queries.DERIVED) over a rule's derived facts."""

    def union(self, relation: str, parts: list[Candidates]) -> Candidates:
        """The candidates of a relation from several rules."""

    def seeded(self, facts: Facts) -> Candidates:
        """Facts computed elsewhere, as candidates."""

    def count(self, derived: Candidates) -> int:
        """How many candidates a rule derived (`derive`'s result)."""


Kept = TypeVar(
    "Kept", covariant=True
)  # the facts a Reached holds: only read, so a Reached of any facts is one of objects


@dataclass(frozen=True)
class Reached(Generic[Kept]):
    """Where a fixpoint stopped short of its end: per relation, the facts known before the last iteration
    and the new facts of that iteration (the next one's input), after `iterations` iterations. Another
    evaluation given this goes on from there (Fixpoint's `reached`)."""

    known: Mapping[str, Kept]
    new: Mapping[str, Kept]
    iterations: int
    seconds: float = 0.0  # how long the evaluation took to get there
    facts: int = 0  # how many facts it had derived
    expected: int = 0  # how many it was expected to have after its next iteration


class CapacityExceeded(Exception):
    """A local evaluation derived, or was about to derive, more facts than its stratum's capacity: the
    component belongs on Spark. `reached`: where the evaluation stopped (set by the fixpoint that raised
    it)."""

    def __init__(self, relations: tuple[str, ...], facts: int, expected: int):
        super().__init__(f"{', '.join(relations)} outgrew local evaluation")
        self.relations = relations
        self.facts = facts
        self.expected = expected
        self.reached: Reached[object] | None = None


class Limits:
    """The bounds of one component's evaluation: iterations (`recsql.max_iterations`, or a CTE's smaller
    MAX RECURSION LEVEL) and derived rows (`recsql.max_rows`). Exceeding one is an error, never a
    silent truncation; so is growing past `max_rows` in the next iteration as the last one grew (a
    recursion whose rows double would spend most of its time on the iteration that passes the bound).
    `capacity`: derived rows past which the evaluation stops with CapacityExceeded (a local evaluation
    planned from estimates), as soon as its growth says the next iteration would pass them: the
    iterations before are cheap, the one that passes them the costliest, and its work would be thrown
    away or moved. `stop`: the rows after which the evaluation may end, a LIMIT over the stratum having
    what it needs (first_rows.py)."""

    def __init__(self, program: Program, stratum: Stratum, settings: Settings, capacity: int | None = None):
        self.program = program
        self.stratum = stratum
        self.capacity = capacity
        self.stop = stratum.stop
        self.max_rows = settings.max_rows
        self.max_iterations = settings.max_iterations
        self.limited_by: Relation | None = None
        for name in stratum.relations:
            relation = program.relations[name]
            if relation.max_level is not None and relation.max_level < self.max_iterations:
                self.max_iterations, self.limited_by = relation.max_level, relation

    def enough(self, counted: Sequence[int]) -> bool:
        """Whether the rows counted for each watch of the stop (Fixpoint.watched, summed) are all there."""
        return self.stop is not None and all(rows >= watch.rows for rows, watch in zip(counted, self.stop.watches))

    def row_bound(self) -> int:
        """The rows derived, with those the next iteration is expected to derive (`next_rows`), up to which
        `check_rows` holds whatever the growth."""
        return min(self.max_rows, self.capacity if self.capacity is not None else self.max_rows)

    def check_iteration(self, iteration: int) -> None:
        if iteration > self.max_iterations:
            raise OperationalError(self.iteration_message())

    def check_rows(self, derived: int, iteration: int, new_rows: int = 0, previous_rows: int = 0) -> None:
        """`new_rows`, `previous_rows`: the new facts of this iteration and of the one before."""
        expected = derived + next_rows(new_rows, previous_rows)
        if derived > self.max_rows:
            raise OperationalError(
                f"recursive query over {self.names()} derived more than {self.max_rows} rows by iteration "
                f"{iteration} (recsql.max_rows); raise the limit with SET recsql.max_rows = <n> if this is expected"
            )
        if expected > self.max_rows and new_rows > previous_rows > 0:  # growing: stopped before the costliest
            raise OperationalError(
                f"recursive query over {self.names()} is bound to derive more than {self.max_rows} rows by "
                f"iteration {iteration + 1}: {derived} rows by iteration {iteration}, whose {new_rows} new rows are "
                f"{new_rows / previous_rows:.1f} times the iteration before's (recsql.max_rows); raise the limit "
                "with SET recsql.max_rows = <n> if this is expected"
            )
        if self.capacity is not None and expected > self.capacity:
            raise CapacityExceeded(self.stratum.relations, derived, expected)

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


def next_rows(new_rows: int, previous_rows: int) -> int:
    """The new facts the next iteration is expected to derive: this iteration's, grown (or shrunk) as
    much as they did from the previous one."""
    return new_rows * new_rows // previous_rows if previous_rows else 0


def may_stop(counts: np.ndarray, iteration: int, derived: int, new_rows: int, limits: Limits) -> np.ndarray:
    """Which of the iterations after `iteration` (`derived` facts by it, `new_rows` new in it), whose new
    facts are `counts` (none zero but the last), a limit may stop: past max_iterations, or where the facts
    with those the next iteration is expected to derive pass the rows allowed (Limits.check_rows checks)."""
    previous = np.concatenate(([new_rows], counts[:-1]))
    iterations = iteration + np.arange(1, len(counts) + 1)
    expected = derived + np.cumsum(counts) + counts * counts // previous
    return np.flatnonzero((iterations > limits.max_iterations) | (expected > limits.row_bound()))


@dataclass(frozen=True)
class Ahead:
    """Iterations an evaluation has derived already: the new facts of each, in order, and how to move past
    the first of them (as as many steps would)."""

    counts: np.ndarray
    skip: Callable[[int], None]


class Evaluation(Protocol):
    """What `iterate` runs: a Fixpoint, or several in lockstep."""

    def start(self) -> int: ...

    def step(self) -> int: ...

    def facts(self) -> dict[str, int]: ...

    def watched(self) -> tuple[int, ...]: ...

    def ahead(self) -> Ahead | None:
        """The iterations after the last one that are derived already (their steps cost no query)."""
        ...


def iterate(
    evaluation: Evaluation,
    limits: Limits,
    progress: ProgressListener | None,
    after: int = 0,
    until: Callable[[], bool] | None = None,
) -> int:
    """Run `evaluation` until an iteration derives nothing new, or the rows a LIMIT over the stratum needs
    are there (Limits.enough); returns the number of iterations.
    `after`: the iterations an evaluation handed over to this one had made (its start is the next one).
    `until`: asked after each iteration, stops before the next once true (to hand over to another).
    Iterations the evaluation has derived ahead (Evaluation.ahead) are checked one by one and reported
    together, once before the next that costs a query: progress, and a cancelled statement's stop, come
    between queries, not between rows of one answer."""
    started = time.monotonic()
    new_rows = derived = evaluation.start()
    counted = evaluation.watched()
    iteration = after
    unreported = [evaluation.facts()]  # the new facts of each iteration not reported yet, the last one's last

    def report(last: int, last_rows: int, rows: int) -> None:
        """Report the iterations up to `last` (`last_rows` new facts in it, `rows` in all so far)."""
        if progress is not None:
            elapsed = time.monotonic() - started
            *earlier, facts = unreported
            relations = limits.stratum.relations
            progress(Progress(relations, last, last_rows, rows, elapsed, facts, earlier=tuple(earlier)))
        unreported.clear()

    def checked(previous_rows: int) -> None:
        """The rows derived so far, by iteration `iteration` (`new_rows` new in it), within the limits."""
        try:
            limits.check_rows(derived, iteration, new_rows, previous_rows)
        except CapacityExceeded:  # where another evaluation goes on: the iterations before this one are done
            if unreported:
                report(iteration - 1, previous_rows, derived - new_rows)
            raise

    report(iteration, new_rows, derived)
    while new_rows and not limits.enough(counted) and not (until is not None and until()):
        iteration += 1
        limits.check_iteration(iteration)
        previous_rows, new_rows = new_rows, evaluation.step()
        derived += new_rows
        if counted:
            counted = tuple(before + now for before, now in zip(counted, evaluation.watched()))
        checked(previous_rows)
        unreported.append(evaluation.facts())
        ahead = evaluation.ahead() if new_rows and limits.stop is None and until is None else None
        if ahead is not None:  # their counts are known: checked together, one by one only where a limit may stop
            (name,) = unreported[-1]
            counts = ahead.counts
            ends = np.flatnonzero(counts == 0)  # the first iteration deriving nothing is the last
            counts = counts[: ends[0] + 1] if len(ends) else counts
            while len(counts):
                stops = may_stop(counts, iteration, derived, new_rows, limits)
                taken = int(stops[0]) + 1 if len(stops) else len(counts)
                if progress is not None:
                    unreported.extend([{name: count} for count in counts[: taken - 1].tolist()])
                iteration += taken
                previous_rows = int(counts[taken - 2]) if taken > 1 else new_rows
                new_rows = int(counts[taken - 1])
                derived += int(counts[:taken].sum())
                ahead.skip(taken)  # the evaluation is there, as after as many steps
                if len(stops):
                    limits.check_iteration(iteration)
                    checked(previous_rows)
                if progress is not None:
                    unreported.append({name: new_rows})
                counts = counts[taken:]
        report(iteration, new_rows, derived)
    return iteration


def contributor_terms(program: Program, stratum: Stratum, rule: Rule) -> tuple[Rule, tuple[exp.Expr, ...]]:
    """A sum()/count() rule as it derives contributions (each column of its atoms named), and the terms
    that identify a contribution (translator.contributions)."""
    named, variables = contributor(rule, program.relations, stratum.relations)
    return named, tuple(var(name) for name in variables)


RuleKey = tuple[str, tuple[str, ...], tuple[str, ...]]  # rule_key's: head, terms, sorted body


def rule_ids(program: Program) -> dict[RuleKey, int]:
    """A number per rule of the program, naming the rule a contribution comes from (see `rule_key`)."""
    return {rule_key(rule): i for i, rule in enumerate(program.rules)}


@functools.lru_cache(maxsize=4096)
def rule_key(rule: Rule) -> RuleKey:
    """A rule up to the order of its body: the planner may reorder a delta variant's joins, and every
    variant of a rule contributes as that rule. Kept per rule: every evaluation of a program (and its
    typing) asks again, and printing literals costs more than the rest of a small evaluation."""
    return rule.head, tuple(term.sql() for term in rule.terms), tuple(sorted(str(literal) for literal in rule.body))


class Fixpoint(Generic[Facts, Candidates]):
    """One recursive component evaluated semi-naively by `engine`; `seeds`: the candidates of the exit
    rules, derived elsewhere (a part of them, under the decomposed strategy); `reached`: where another
    evaluation of the component stopped, to go on from (its new facts being the seeds)."""

    def __init__(
        self,
        engine: RuleEngine[Facts, Candidates],
        program: Program,
        stratum: Stratum,
        seeds: Mapping[str, Facts] | None = None,
        reached: Reached[Facts] | None = None,
    ):
        self.engine = engine
        self.program = program
        self.stratum = stratum
        self.seeds = reached.new if reached is not None else seeds
        self.known = reached.known if reached is not None else None
        self.states: dict[str, State[Facts]] = {
            name: state_for(engine, program.relations[name], stratum.iteration) for name in stratum.relations
        }
        self.rule_ids = rule_ids(program)
        self.iterations = reached.iterations if reached is not None else 0

    def run(self, limits: Limits, progress: ProgressListener | None = None) -> dict[str, Facts]:
        """The facts of each relation of the component."""
        started = time.monotonic()
        try:
            iterate(self, limits, progress, self.iterations)
        except CapacityExceeded as exceeded:
            exceeded.reached = self.reached(time.monotonic() - started, exceeded.facts, exceeded.expected)
            raise
        return {name: state.full for name, state in self.states.items()}

    def reached(self, seconds: float, facts: int = 0, expected: int = 0) -> Reached[Facts]:
        """Where the evaluation is: each relation's facts before the last iteration and that iteration's new
        ones, to go on from (after `seconds`, with `facts` derived, `expected` after the next iteration)."""
        return Reached(
            {name: state.old for name, state in self.states.items()},
            {name: state.delta for name, state in self.states.items()},
            self.iterations,
            seconds,
            facts,
            expected,
        )

    def start(self) -> int:
        """Absorb the facts of the exit rules (or those known and new where another evaluation stopped);
        the number of new facts."""
        self.engine.begin(self.iterations)
        if self.known is not None:
            self.absorb({name: self.engine.seeded(facts) for name, facts in self.known.items()})
        if self.seeds is not None:
            return self.absorb({name: self.engine.seeded(facts) for name, facts in self.seeds.items()})
        return self.absorb(self.derive([(rule, None) for rule in self.stratum.exit_rules]))

    def step(self) -> int:
        """Absorb one iteration of the delta variants; the number of new facts."""
        self.iterations += 1
        sizes = {name: float(state.new_facts) for name, state in self.states.items()}
        variants = self.engine.arrange([v for v in self.stratum.variants if not self.reads_nothing(v)], sizes)
        self.engine.begin(self.iterations)
        return self.absorb(self.derive([(variant.rule, variant.versions) for variant in variants]))

    def reads_nothing(self, variant: Variant) -> bool:
        """Whether a variant joins the delta of a relation no rule derived candidates for in the last
        iteration: it derives nothing, and an engine keeping only schemas would read that delta's
        columns untyped (NULL + NULL is a DOUBLE to Spark)."""
        return any(
            version is Version.DELTA
            and isinstance(atom, Atom)
            and not (atom.filters or atom.optional)
            and self.states[atom.relation].nothing
            for atom, version in zip(variant.rule.body, variant.versions)
        )

    def absorb(self, candidates: Mapping[str, Candidates]) -> int:
        for name, state in self.states.items():
            state.merge(candidates.get(name))
        return sum(state.new_facts for state in self.states.values())

    def facts(self) -> dict[str, int]:
        """The new facts of each relation in the last start or step."""
        return {name: state.new_facts for name, state in self.states.items()}

    def watched(self) -> tuple[int, ...]:
        """Per watch of the stratum's stop, the rows its paths give from the facts new in the last start or
        step (none without a stop)."""
        stop = self.stratum.stop
        return tuple(sum(self.path_rows(path) for path in watch.paths) for watch in stop.watches) if stop else ()

    def ahead(self) -> Ahead | None:
        return None

    def path_rows(self, path: Path) -> int:
        state = self.states[path.relation]
        if path.rule is None:
            return state.new_facts
        self.engine.publish(path.relation, Version.DELTA, state.delta)
        versions = tuple(Version.DELTA if isinstance(literal, Atom) else None for literal in path.rule.body)
        return self.engine.count(self.engine.derive(path.rule, versions, ()))

    def derive(self, rules: Iterable[tuple[Rule, Versions]]) -> dict[str, Candidates]:
        """The candidates of each relation from the given rules."""
        rules = list(rules)
        for rule, versions in rules:
            for atom, version in zip(rule.body, versions or ()):
                if version is not None and isinstance(atom, Atom):  # versions are None but for atoms
                    state = self.states[atom.relation]
                    self.engine.publish(atom.relation, version, getattr(state, version.value))
        parts: dict[str, list[Candidates]] = {}
        for rule, versions in rules:
            if isinstance(self.states[rule.head], SumState):
                named, contributors = contributor_terms(self.program, self.stratum, rule)
                derived = self.engine.derive(named, versions, contributors)
                contributions = q.contributions_of(
                    self.program.relations[rule.head], self.rule_ids[rule_key(rule)], len(contributors)
                )
                derived = self.engine.contribute(contributions, derived)
            else:
                derived = self.engine.derive(rule, versions, ())
            parts.setdefault(rule.head, []).append(derived)
        return {head: self.engine.union(head, derived) for head, derived in parts.items()}
