"""Cardinality estimation: how many rows a relation, an atom, or a join of atoms produces.

The textbook model (Selinger et al.): a join on a variable divides the product of the inputs' sizes by
the larger distinct count of that variable; a filter `X = c` keeps 1/distinct(X) of the rows, a range
filter the fraction of [min, max] it covers, any other condition a third. Table statistics come from the
catalog; derived relations are estimated from their rules; a recursive relation is assumed to fill the
domain its columns range over (the product of their distinct counts), never less than its exit rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

from sqlglot import exp

from recsql.statistics import ColumnStatistics, TableStatistics
from translator.ir import Assignment, Atom, Condition, Program, Rule, variables_of

UNKNOWN_ROWS = 1_000.0  # a table without statistics (should not happen: the catalog gathers them)
DEFAULT_SELECTIVITY = 1 / 3
LIKE_SELECTIVITY = 0.05  # a pattern match keeps few rows: a fixed part of a string is rarely common
RECURSION_ROUNDS = 30


class StatisticsProvider(Protocol):
    def table_statistics(self, name: str) -> TableStatistics | None: ...


@dataclass(frozen=True)
class RelationEstimate:
    """Estimated rows of a relation and distinct values per column."""

    rows: float
    distinct: tuple[float, ...]
    ranges: tuple[tuple[float, float] | None, ...] = ()


@dataclass(frozen=True)
class AtomEstimate:
    """An atom's rows and the distinct values of each of its variables (after its own filters)."""

    rows: float
    distinct: dict[str, float] = field(default_factory=dict)
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def variables(self) -> frozenset[str]:
        return frozenset(self.distinct)


class Estimator:
    """Estimates for the relations of one program. `observed` overrides an estimate with a measured size."""

    def __init__(self, program: Program, statistics: StatisticsProvider, observed: dict[str, float] | None = None):
        self.program = program
        self.statistics = statistics
        self.observed = dict(observed or {})
        self.cache: dict[str, RelationEstimate] = {}
        self.seeds: dict[str, RelationEstimate] = {}  # recursive relations: what their exit rules derive
        self.in_progress: dict[str, RelationEstimate] = {}

    # -------------------------------------------------------------- relations

    def relation(self, name: str) -> RelationEstimate:
        if name in self.cache:
            return self.scaled(name, self.cache[name])
        if name in self.in_progress:  # a recursive reference while estimating its own component
            return self.in_progress[name]
        estimate = self.derived(name) if name in self.program.relations else self.table(name)
        self.cache[name] = estimate
        return self.scaled(name, estimate)

    def seed(self, name: str) -> RelationEstimate:
        """A relation's first iteration: the facts its exit rules derive."""
        self.relation(name)
        return self.seeds.get(name) or self.relation(name)

    def scaled(self, name: str, estimate: RelationEstimate) -> RelationEstimate:
        if name not in self.observed:
            return estimate
        rows = max(self.observed[name], 1.0)
        return RelationEstimate(rows, tuple(min(d, rows) for d in estimate.distinct), estimate.ranges)

    def table(self, name: str) -> RelationEstimate:
        gathered = self.statistics.table_statistics(name)
        if gathered is None:
            return RelationEstimate(UNKNOWN_ROWS, ())
        return RelationEstimate(
            float(max(gathered.rows, 1)),
            tuple(float(max(c.distinct, 1)) for c in gathered.columns),
            tuple(column_range(c) for c in gathered.columns),
        )

    def derived(self, name: str) -> RelationEstimate:
        relation = self.program.relations[name]
        if relation.opaque is not None:
            return self.opaque(relation.opaque.relations, len(relation.columns))
        rules = self.program.rules_for(name)
        recursive = [rule for rule in rules if self.reads_itself(rule, name)]
        exit_rules = [rule for rule in rules if rule not in recursive]
        width = len(relation.columns)
        seed = self.union([self.rule(rule) for rule in exit_rules], width)
        self.seeds[name] = seed
        if not recursive:
            return self.grouped(relation.group_key if relation.aggregate else None, seed)
        keys = relation.group_key if relation.aggregate else tuple(range(width))
        estimate = seed
        for _ in range(RECURSION_ROUNDS):  # iterate the estimate as the fixpoint iterates the facts
            self.in_progress[name] = estimate
            try:
                rounds = [seed] + [self.rule(rule) for rule in recursive]
            finally:
                del self.in_progress[name]
            distinct = tuple(max(e.distinct[i] for e in rounds) for i in range(width))
            domain = math.prod(distinct[i] for i in keys) if keys else 1.0
            rows = max(seed.rows, min(domain, sum(e.rows for e in rounds)))
            converged = rows <= estimate.rows * 1.001
            estimate = RelationEstimate(rows, tuple(min(d, rows) for d in distinct), seed.ranges)
            if converged:
                break
        return estimate

    def opaque(self, inputs: tuple[str, ...], width: int) -> RelationEstimate:
        """A query left to Spark SQL (a window, a FULL JOIN, ROLLUP ...): about as many rows as it reads."""
        rows = max(sum(self.relation(name).rows for name in inputs), 1.0)
        return RelationEstimate(rows, (rows,) * width)

    def reads_itself(self, rule: Rule, name: str) -> bool:
        """Whether `rule` reads `name` directly or through relations that read it (its recursion)."""
        seen, stack = set(), [atom.relation for atom in rule.atoms]
        while stack:
            relation = stack.pop()
            if relation == name:
                return True
            if relation in seen or relation not in self.program.relations:
                continue
            seen.add(relation)
            stack.extend(self.program.reads(relation))
        return False

    @staticmethod
    def union(estimates: list[RelationEstimate], width: int) -> RelationEstimate:
        if not estimates:
            return RelationEstimate(1.0, (1.0,) * width)
        rows = sum(e.rows for e in estimates)
        distinct = tuple(min(rows, sum(e.distinct[i] for e in estimates)) for i in range(width))
        return RelationEstimate(rows, distinct, ())

    @staticmethod
    def grouped(keys: tuple[int, ...] | None, estimate: RelationEstimate) -> RelationEstimate:
        if keys is None:
            return estimate
        groups = min(estimate.rows, math.prod(estimate.distinct[i] for i in keys)) if keys else 1.0
        return RelationEstimate(groups, tuple(min(d, groups) for d in estimate.distinct), estimate.ranges)

    # -------------------------------------------------------------- rules

    def rule(self, rule: Rule) -> RelationEstimate:
        """The rows a rule derives, from the join of its body."""
        atoms = [atom for atom in rule.atoms if not atom.filters and not atom.optional]
        estimates = [self.atom(atom) for atom in atoms]
        conditions = [lit for lit in rule.body if isinstance(lit, Condition)]
        body = join_estimate(estimates, conditions)
        distinct = dict(body.distinct)
        for literal in rule.body:
            if isinstance(literal, Assignment):
                distinct[literal.variable] = max((distinct.get(v, body.rows) for v in literal.variables()), default=1.0)
        head = []
        for term in rule.terms:
            if isinstance(term, exp.Column):
                head.append(min(distinct.get(term.name, body.rows), body.rows))
            elif not variables_of(term):
                head.append(1.0)
            else:
                head.append(min(body.rows, math.prod(distinct.get(v, body.rows) for v in variables_of(term))))
        if rule.is_aggregate:
            keys = [i for i, term in enumerate(rule.terms) if not term.find(exp.AggFunc)]
            groups = min(body.rows, math.prod(head[i] for i in keys)) if keys else 1.0
            return RelationEstimate(groups, tuple(min(d, groups) for d in head))
        return RelationEstimate(max(body.rows, 1e-3), tuple(head))

    def atom(self, atom: Atom) -> AtomEstimate:
        if atom.call_args:
            count = atom.call_args[-1].to_py() if len(atom.call_args) < 3 else 1_000
            rows = float(max(int(count) - (int(atom.call_args[0].to_py()) if len(atom.call_args) > 1 else 0), 1))
            return AtomEstimate(rows, {arg: rows for arg in atom.variables()})
        estimate = self.relation(atom.relation)
        return atom_estimate(atom, estimate)


def column_range(column: ColumnStatistics) -> tuple[float, float] | None:
    if column.minimum is None or column.maximum is None:
        return None
    return (column.minimum, column.maximum)


def atom_estimate(atom: Atom, relation: RelationEstimate) -> AtomEstimate:
    """A relation seen through an atom: a variable repeated in the atom is an equality filter."""
    rows = relation.rows
    distinct: dict[str, float] = {}
    ranges: dict[str, tuple[float, float]] = {}
    for i, arg in enumerate(atom.args):
        if arg == "_":
            continue
        d = relation.distinct[i] if i < len(relation.distinct) else rows
        if arg in distinct:
            rows /= max(d, distinct[arg])
            distinct[arg] = min(d, distinct[arg])
        else:
            distinct[arg] = d
        span = relation.ranges[i] if i < len(relation.ranges) else None
        if span is not None:
            ranges[arg] = span
    rows = max(rows, 1e-3)
    return AtomEstimate(rows, {v: min(d, rows) for v, d in distinct.items()}, ranges)


def join_estimate(atoms: list[AtomEstimate], conditions: list[Condition]) -> AtomEstimate:
    """The join of `atoms` with the `conditions` whose variables they bind. A function of the set of
    atoms only, not of their order, so every join order of the same atoms has the same estimate."""
    if not atoms:
        return AtomEstimate(1.0, {})
    rows = math.prod(a.rows for a in atoms)
    occurrences: dict[str, list[float]] = {}
    ranges: dict[str, tuple[float, float]] = {}
    for a in atoms:
        for variable, d in a.distinct.items():
            occurrences.setdefault(variable, []).append(d)
        ranges.update(a.ranges)
    for counts in occurrences.values():
        counts.sort()
        rows /= math.prod(counts[1:])  # all but the smallest distinct count
    distinct = {v: min(counts) for v, counts in occurrences.items()}
    bound = set(distinct)
    for condition in conditions:
        if condition.variables() <= bound:
            rows *= selectivity(condition.expression, distinct, ranges)
    rows = max(rows, 1e-3)
    return AtomEstimate(rows, {v: min(d, max(rows, 1.0)) for v, d in distinct.items()}, ranges)


def selectivity(expression: exp.Expr, distinct: dict[str, float], ranges: dict[str, tuple[float, float]]) -> float:
    """The fraction of rows a condition keeps."""
    if isinstance(expression, exp.Paren):
        return selectivity(expression.this, distinct, ranges)
    if isinstance(expression, exp.And):
        return selectivity(expression.left, distinct, ranges) * selectivity(expression.right, distinct, ranges)
    if isinstance(expression, exp.Or):
        left, right = selectivity(expression.left, distinct, ranges), selectivity(expression.right, distinct, ranges)
        return left + right - left * right
    if isinstance(expression, exp.Not):
        return 1 - selectivity(expression.this, distinct, ranges)
    if isinstance(expression, exp.In) and isinstance(expression.this, exp.Column):
        values = len(expression.expressions) or 1
        return min(1.0, values / max(distinct.get(expression.this.name, 1.0), 1.0))
    if isinstance(expression, (exp.EQ, exp.NEQ)):
        columns = [side for side in (expression.left, expression.right) if isinstance(side, exp.Column)]
        if not columns:
            return DEFAULT_SELECTIVITY
        # a value compared with itself is equal to it wherever it is not NULL
        equal = (
            1.0
            if expression.left == expression.right
            else 1 / max(max(distinct.get(c.name, 1.0) for c in columns), 1.0)
        )
        return equal if isinstance(expression, exp.EQ) else 1 - equal
    if isinstance(expression, (exp.LT, exp.LTE, exp.GT, exp.GTE)):
        return range_selectivity(expression, ranges)
    if isinstance(expression, (exp.Like, exp.ILike)):
        return LIKE_SELECTIVITY
    return DEFAULT_SELECTIVITY


def range_selectivity(expression: exp.Binary, ranges: dict[str, tuple[float, float]]) -> float:
    """`X < c` and the like: the part of X's [min, max] on the kept side, when both are known."""
    column, constant, flipped = expression.left, expression.right, False
    if not isinstance(column, exp.Column):
        column, constant, flipped = expression.right, expression.left, True
    if not isinstance(column, exp.Column) or not isinstance(constant, exp.Literal) or constant.is_string:
        return DEFAULT_SELECTIVITY
    span = ranges.get(column.name)
    if span is None or span[1] <= span[0]:
        return DEFAULT_SELECTIVITY
    low, high = span
    value = float(constant.this)
    below = min(max((value - low) / (high - low), 0.0), 1.0)
    keeps_below = isinstance(expression, (exp.LT, exp.LTE)) != flipped
    return max(below if keeps_below else 1 - below, 1e-4)
