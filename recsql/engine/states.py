"""How each kind of recursive relation absorbs newly derived candidate facts in one iteration, written once
for every engine that evaluates a fixpoint: Spark, the in-process DuckDB, and the type inference (which
runs the same merges over column types).

Every state keeps `full` (all facts so far), `delta` (what changed in the last iteration, the input of the
next one) and `old` (`full` before the last iteration), each a handle of its engine.

* SetState: UNION, set semantics. delta = candidates not yet known.
* BagState: UNION ALL, the SQL standard's iteration: delta is the last round's rows, full all rounds.
* ExtremumState: min()/max() in the CTE header. A group's value improves or stays; delta holds only the
  groups whose value improved, with the new value.
* SumState: sum()/count() in the CTE header (monotonic sum/count). Candidates are contributions (group,
  rule, contributor key, value); for each contributor only its largest (latest) value counts, a group's
  value is the sum over its contributors, and delta holds the groups whose sum changed.
"""

from __future__ import annotations

from enum import Enum
from typing import Generic, Protocol, TypeVar

from recsql.engine.sql import queries as q
from recsql.engine.sql.queries import Query
from translator.ir import Iteration, Relation

Facts = TypeVar("Facts")  # an engine's handle of a relation's facts (a DataFrame, an Arrow table, types)


class MergeOutput(Enum):
    """What a merge query computes, which decides how an engine keeps it."""

    DELTA = "delta"  # the next delta: counted, and given the delta's types
    FULL = "full"  # the new full relation: given the full relation's types
    CONTRIBUTIONS = "contributions"  # a sum's contributions, kept as they are


class Engine(Protocol[Facts]):
    """What a state needs from the engine that holds its facts."""

    outer_join_merges: bool  # a min()/max() merge joins the known facts (queries.improved's outer_join)

    def empty(self, width: int) -> Facts:
        """No facts, untyped columns (a union takes the other side's types)."""

    def run(self, query: Query, relation: str, result: MergeOutput, **inputs: object) -> Facts:
        """The result of `query` over `inputs` (facts of this engine, or derived candidates)."""

    def append(self, relation: str, full: Facts, delta: Facts) -> Facts:
        """full + delta, without copying full where the engine can."""

    def recast(self, facts: Facts, relation: str, result: MergeOutput) -> Facts:
        """The same facts kept as `result` (with its types)."""

    def rows(self, facts: Facts) -> int:
        """How many facts (the delta's count, known once it is computed)."""


class State(Generic[Facts]):
    def __init__(self, engine: Engine[Facts], relation: Relation):
        self.engine = engine
        self.relation = relation
        self.name = relation.name
        self.width = len(relation.columns)
        self.full = self.delta = self.old = engine.empty(self.width)
        self.nothing = True  # no rule derived candidates in the last iteration: the delta is no relation at all

    def merge(self, candidates: object | None) -> None:
        """Absorb the candidates of one iteration (None: no rule derived any)."""
        self.old = self.full
        self.nothing = candidates is None
        if candidates is None:
            self.delta = self.engine.empty(self.width)
            return
        self.absorb(candidates)

    def absorb(self, candidates: object) -> None:
        raise NotImplementedError

    def run(self, query: Query, result: MergeOutput, **inputs: object) -> Facts:
        return self.engine.run(query, self.name, result, **inputs)

    @property
    def new_facts(self) -> int:
        return self.engine.rows(self.delta)


class SetState(State[Facts]):
    def __init__(self, engine: Engine[Facts], relation: Relation):
        super().__init__(engine, relation)
        self.query = q.new_facts(self.width)

    def absorb(self, candidates: object) -> None:
        self.delta = self.run(self.query, MergeOutput.DELTA, **{q.CANDIDATES: candidates, q.FULL: self.full})
        self.full = self.engine.append(self.name, self.full, self.delta)


class BagState(State[Facts]):
    query = q.all_rows()

    def absorb(self, candidates: object) -> None:
        self.delta = self.run(self.query, MergeOutput.DELTA, **{q.CANDIDATES: candidates})
        self.full = self.engine.append(self.name, self.full, self.delta)


class ExtremumState(State[Facts]):
    def __init__(self, engine: Engine[Facts], relation: Relation):
        super().__init__(engine, relation)
        if relation.group_key:
            self.improved = q.improved(relation, engine.outer_join_merges)
            self.replace = q.replace_groups(relation)
        else:
            self.overall, self.new = q.overall_best(relation), q.new_facts(self.width)

    def absorb(self, candidates: object) -> None:
        if not self.relation.group_key:
            merged = self.run(self.overall, MergeOutput.FULL, **{q.FULL: self.full, q.CANDIDATES: candidates})
            self.delta = self.run(self.new, MergeOutput.DELTA, **{q.CANDIDATES: merged, q.FULL: self.full})
            self.full = merged
            return
        self.delta = self.run(self.improved, MergeOutput.DELTA, **{q.CANDIDATES: candidates, q.FULL: self.full})
        self.full = self.run(self.replace, MergeOutput.FULL, **{q.FULL: self.full, q.DELTA: self.delta})


class KeyedState(State[Facts]):
    """DuckDB's USING KEY: a round's rows, one per key, are the next round's input and replace the row known
    for their key (under UNION, a row the relation already holds as it is does not go round again)."""

    def __init__(self, engine: Engine[Facts], relation: Relation):
        super().__init__(engine, relation)
        self.pick = q.one_per_key(relation)
        self.replace = q.replace_groups(relation)

    def absorb(self, candidates: object) -> None:
        self.delta = self.run(self.pick, MergeOutput.DELTA, **{q.CANDIDATES: candidates, q.FULL: self.full})
        self.full = self.run(self.replace, MergeOutput.FULL, **{q.FULL: self.full, q.DELTA: self.delta})


class SumState(State[Facts]):
    """Candidates arrive as contributions (queries.contributions_of)."""

    def __init__(self, engine: Engine[Facts], relation: Relation):
        super().__init__(engine, relation)
        self.contributions: object | None = None
        self.first_merge = q.largest_contributions(relation, first=True)
        self.next_merge = q.largest_contributions(relation, first=False)
        self.all_totals = q.totals(relation, q.read(q.MERGED))
        self.changed_totals = q.totals(relation, q.changed_groups(relation))
        self.replace = q.replace_groups(relation)

    def absorb(self, candidates: object) -> None:
        first = self.contributions is None
        known = {} if first else {q.CONTRIBUTIONS: self.contributions}
        merged = self.run(
            self.first_merge if first else self.next_merge,
            MergeOutput.CONTRIBUTIONS,
            **{q.CANDIDATES: candidates},
            **known,
        )
        if not first and self.relation.group_key:
            self.delta = self.run(self.changed_totals, MergeOutput.DELTA, **{q.MERGED: merged}, **known)
            self.full = self.run(self.replace, MergeOutput.FULL, **{q.FULL: self.full, q.DELTA: self.delta})
        else:
            self.delta = self.run(self.all_totals, MergeOutput.DELTA, **{q.MERGED: merged})
            self.full = self.engine.recast(self.delta, self.name, MergeOutput.FULL)
        self.contributions = merged


def state_for(engine: Engine[Facts], relation: Relation, iteration: Iteration) -> State[Facts]:
    kind: type[State[Facts]]
    if relation.aggregate is not None:
        kind = ExtremumState if relation.aggregate.function.is_extremum else SumState
    elif relation.key is not None:
        kind = KeyedState
    else:
        kind = BagState if iteration.by_rounds else SetState
    return kind(engine, relation)
