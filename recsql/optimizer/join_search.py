"""System R join search and its cost model: dynamic programming over subsets of a rule's body atoms,
the cheapest plan for the join-ordering pass (join_order.py) and for each semi-naive delta rule.

Plans are left-deep; an atom sharing no variable with the atoms before it (a cross product) is joined
only when no other atom connects. The cost of a plan is what Spark pays: rows shuffled, rows broadcast
(times the number of tasks that receive them) and rows produced at each join. The join method follows
Spark's own rule (broadcast a side under the broadcast threshold, otherwise shuffle both sides), so a
plan's cost depends on the sizes and on how the intermediate result is partitioned: a hash-partitioned
result joined on its partitioning key is not shuffled again. Partitioning is therefore an interesting
property, as sort order is in System R: the table keeps the cheapest plan per (atom set, partitioning).
A body of more than EXHAUSTIVE_ATOMS atoms is ordered by a greedy search instead (planning a many-way
join by dynamic programming took seconds).
"""

from __future__ import annotations

from dataclasses import dataclass

from recsql.optimizer.cardinality import AtomEstimate, join_estimate
from translator.ir import Condition, JoinMethod

EXHAUSTIVE_ATOMS = 8  # past this many atoms in one body, the join search is greedy (best_plan)


@dataclass(frozen=True)
class CostModel:
    """What the optimizer and the planner know of where the plan runs."""

    parallelism: int = 4  # tasks that receive a broadcast relation
    broadcast_rows: float = 200_000.0  # a side this small is broadcast, as Spark's threshold does
    task_slots: int | None = None  # tasks Spark runs at once, where known (a local master, a running Spark)


@dataclass(frozen=True)
class JoinStep:
    atom: int  # index into the atoms being ordered
    method: JoinMethod
    keys: tuple[str, ...]
    rows: float  # rows after this step


@dataclass(frozen=True)
class JoinPlan:
    steps: tuple[JoinStep, ...]
    cost: float
    partitioning: frozenset[str] | None  # the variables the intermediate result is hash-partitioned on

    @property
    def order(self) -> tuple[int, ...]:
        return tuple(step.atom for step in self.steps)

    @property
    def rows(self) -> float:
        return self.steps[-1].rows if self.steps else 1.0


class JoinSpace:
    """The atoms of one body and the estimates shared by every plan over them."""

    def __init__(self, atoms: list[AtomEstimate], conditions: list[Condition], model: CostModel):
        self.atoms = atoms
        self.conditions = conditions
        self.model = model
        self.row_cache: dict[frozenset[int], float] = {}

    def rows(self, subset: frozenset[int]) -> float:
        if subset not in self.row_cache:
            self.row_cache[subset] = join_estimate([self.atoms[i] for i in subset], self.conditions).rows
        return self.row_cache[subset]

    def variables(self, subset: frozenset[int]) -> frozenset[str]:
        return frozenset().union(*(self.atoms[i].variables for i in subset))

    def candidates(self, subset: frozenset[int]) -> list[int]:
        """Atoms that may come next: those sharing a variable with `subset`, or any if none does."""
        remaining = [i for i in range(len(self.atoms)) if i not in subset]
        bound = self.variables(subset)
        connected = [i for i in remaining if self.atoms[i].variables & bound]
        return connected or remaining

    def start(self, atom: int) -> JoinPlan:
        step = JoinStep(atom, JoinMethod.SCAN, (), self.rows(frozenset([atom])))
        return JoinPlan((step,), 0.0, None)

    def extend(self, plan: JoinPlan, atom: int) -> JoinPlan:
        """`plan` joined with one more atom, by the method Spark would pick, and what that costs."""
        subset = frozenset(plan.order)
        left_rows, right_rows = self.rows(subset), self.atoms[atom].rows
        keys = tuple(sorted(self.atoms[atom].variables & self.variables(subset)))
        out = self.rows(subset | {atom})
        model = self.model
        partitioning = plan.partitioning
        if not keys:
            method, cost = JoinMethod.CROSS, right_rows * model.parallelism + out
        elif right_rows <= model.broadcast_rows:
            method, cost = JoinMethod.BROADCAST, right_rows * model.parallelism + out
        elif left_rows <= model.broadcast_rows:
            method, cost, partitioning = JoinMethod.BROADCAST_LEFT, left_rows * model.parallelism + out, None
        else:
            co_partitioned = partitioning is not None and partitioning <= frozenset(keys)
            method = JoinMethod.SHUFFLE
            cost = (0.0 if co_partitioned else left_rows) + right_rows + out
            partitioning = partitioning if co_partitioned else frozenset(keys)
        step = JoinStep(atom, method, keys, out)
        return JoinPlan(plan.steps + (step,), plan.cost + cost, partitioning)


def best_plan(space: JoinSpace, first: int | None = None) -> JoinPlan:
    """The cheapest left-deep plan (cross products last); `first` fixes the driving atom (a delta). Past
    EXHAUSTIVE_ATOMS atoms, the cheapest a greedy search finds (`greedy_plan`)."""
    if len(space.atoms) > EXHAUSTIVE_ATOMS:
        return greedy_plan(space, first)
    n = len(space.atoms)
    starts = [first] if first is not None else range(n)
    table: dict[frozenset[int], dict[frozenset[str] | None, JoinPlan]] = {}
    for i in starts:
        plan = space.start(i)
        table.setdefault(frozenset([i]), {})[plan.partitioning] = plan
    for size in range(1, n):
        for subset in [s for s in table if len(s) == size]:
            for plan in list(table[subset].values()):
                for atom in space.candidates(subset):
                    extended = space.extend(plan, atom)
                    slot = table.setdefault(subset | {atom}, {})
                    known = slot.get(extended.partitioning)
                    if known is None or extended.cost < known.cost:
                        slot[extended.partitioning] = extended
    return min(table[frozenset(range(n))].values(), key=lambda p: p.cost)


def greedy_plan(space: JoinSpace, first: int | None = None) -> JoinPlan:
    """From each possible first atom, the plan that joins at each step the atom whose join costs least; the
    cheapest of them. Cubic in the atoms where the dynamic programming is exponential (PostgreSQL turns
    to a genetic search past 12 relations for the same reason): it may miss the cheapest order, never
    plans a cross product while an atom connects, and takes milliseconds for dozens of atoms."""
    n = len(space.atoms)
    plans = []
    for start in [first] if first is not None else range(n):
        plan = space.start(start)
        while len(plan.steps) < n:
            subset = frozenset(plan.order)
            plan = min((space.extend(plan, atom) for atom in space.candidates(subset)), key=lambda p: p.cost)
        plans.append(plan)
    return min(plans, key=lambda p: p.cost)


def plan_of_order(space: JoinSpace, order: tuple[int, ...]) -> JoinPlan:
    """The plan (and its cost) of one given order, as the cost model prices it."""
    plan = space.start(order[0])
    for atom in order[1:]:
        plan = space.extend(plan, atom)
    return plan


def admissible(space: JoinSpace, order: tuple[int, ...]) -> bool:
    """Whether `order` joins cross products only when nothing connects (the space `best_plan` searches)."""
    return all(order[k] in space.candidates(frozenset(order[:k])) for k in range(1, len(order)))
