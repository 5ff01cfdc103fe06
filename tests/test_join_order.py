"""System R join ordering against exhaustive enumeration under the same cost model (no Spark)."""

from __future__ import annotations

from itertools import permutations

from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from recsql.optimizer.cardinality import AtomEstimate, Estimator
from recsql.optimizer.join_order import order_body
from recsql.optimizer.join_search import (
    EXHAUSTIVE_ATOMS,
    CostModel,
    JoinSpace,
    admissible,
    best_plan,
    greedy_plan,
    plan_of_order,
)
from recsql.statistics import ColumnStatistics, TableStatistics
from translator.ir import Atom, Condition, JoinMethod, Program, Rule, var

VARIABLES = "ABCDEFGH"


@st.composite
def join_graphs(draw, max_atoms: int = 7):
    """Random atoms over a small pool of variables, with random sizes and distinct counts."""
    count = draw(st.integers(2, max_atoms))
    atoms = []
    for _ in range(count):
        names = draw(st.lists(st.sampled_from(VARIABLES[: count + 1]), min_size=1, max_size=3, unique=True))
        rows = float(draw(st.sampled_from([1, 10, 500, 10_000, 300_000, 2_000_000, 50_000_000])))
        distinct = {v: min(rows, float(draw(st.sampled_from([1, 5, 100, 5_000, 1_000_000])))) for v in names}
        atoms.append(AtomEstimate(rows, distinct))
    model = CostModel(
        parallelism=draw(st.sampled_from([1, 4, 16])), broadcast_rows=draw(st.sampled_from([0.0, 1e4, 2e5]))
    )
    return atoms, model


def exhaustive(space: JoinSpace, first: int | None = None) -> float:
    costs = [
        plan_of_order(space, order).cost
        for order in permutations(range(len(space.atoms)))
        if (first is None or order[0] == first) and admissible(space, order)
    ]
    return min(costs)


@settings(max_examples=150, deadline=None)
@given(join_graphs())
def test_dynamic_programming_finds_the_cheapest_order(graph):
    atoms, model = graph
    space = JoinSpace(atoms, [], model)
    best = best_plan(space)
    assert admissible(space, best.order)
    assert abs(plan_of_order(space, best.order).cost - best.cost) <= 1e-6 * max(best.cost, 1.0)
    assert best.cost <= exhaustive(space) * (1 + 1e-9) + 1e-9


@settings(max_examples=60, deadline=None)
@given(join_graphs(), st.data())
def test_a_fixed_driver_is_joined_first_and_the_rest_ordered_optimally(graph, data):
    atoms, model = graph
    first = data.draw(st.integers(0, len(atoms) - 1))
    space = JoinSpace(atoms, [], model)
    best = best_plan(space, first)
    assert best.order[0] == first
    assert best.cost <= exhaustive(space, first) * (1 + 1e-9) + 1e-9


def test_cross_products_come_last():
    """The unconnected atom joins last even though it is the smallest: a cross product multiplies."""
    lonely = AtomEstimate(5.0, {"Z": 5.0})
    small = AtomEstimate(10.0, {"A": 10.0})
    linked = AtomEstimate(1e6, {"A": 10.0, "B": 1e5})
    plan = best_plan(JoinSpace([lonely, small, linked], [], CostModel()), first=1)
    assert plan.order == (1, 2, 0)
    assert [step.method for step in plan.steps][-1] == JoinMethod.CROSS


class Statistics:
    def __init__(self, sizes):
        self.sizes = sizes

    def table_statistics(self, name):
        rows, distinct = self.sizes[name]
        return TableStatistics(rows, tuple(ColumnStatistics(d) for d in distinct))


def test_written_order_with_two_large_tables_first_is_reordered():
    """orders ⋈ lineitem written first, then a selective customer filter: the filter's table leads."""
    statistics = Statistics(
        {
            "lineitem": (6_000_000, (1_500_000, 200_000)),
            "orders": (1_500_000, (1_500_000, 150_000)),
            "customer": (150_000, (150_000, 25)),
        }
    )
    rule = Rule(
        "q",
        (var("O"),),
        (
            Atom("lineitem", ("O", "P")),
            Atom("orders", ("O", "C")),
            Atom("customer", ("C", "N")),
            Condition(exp.EQ(this=var("N"), expression=exp.Literal.number(3))),
        ),
    )
    program = Program({}, [rule], "q")
    body = order_body(rule, Estimator(program, statistics), CostModel())
    relations = [literal.relation for literal in body.literals if isinstance(literal, Atom)]
    assert relations == ["customer", "orders", "lineitem"]


def test_a_column_compared_with_itself_keeps_its_rows():
    """`C = C` holds on every row whose C is not NULL (the estimates know no NULL fraction), not on one value of C in
    each of its distinct counts as `C = N` does; `C <> C` holds on none."""
    statistics = Statistics({"customer": (150_000, (150_000, 25))})
    customer = Atom("customer", ("C", "N"))

    def rows(*conditions: exp.Expression) -> float:
        rule = Rule("q", (var("C"),), (customer, *(Condition(c) for c in conditions)))
        return Estimator(Program({}, [rule], "q"), statistics).rule(rule).rows

    assert rows(exp.EQ(this=var("C"), expression=var("C"))) == rows() == 150_000
    assert rows(exp.EQ(this=var("C"), expression=var("N"))) == 1.0
    assert rows(exp.NEQ(this=var("C"), expression=var("C"))) < 1.0


@settings(max_examples=60, deadline=None)
@given(join_graphs(max_atoms=8), st.data())
def test_the_greedy_search_plans_every_atom_connected_first(graph, data):
    """Past EXHAUSTIVE_ATOMS atoms the search is greedy: a plan of every atom, the fixed driver first, no
    cross product while an atom connects, priced as the cost model prices its order, never cheaper than
    the dynamic programming's."""
    atoms, model = graph
    first = data.draw(st.one_of(st.none(), st.integers(0, len(atoms) - 1)))
    space = JoinSpace(atoms, [], model)
    plan = greedy_plan(space, first)
    assert sorted(plan.order) == list(range(len(atoms))) and (first is None or plan.order[0] == first)
    assert admissible(space, plan.order)
    assert abs(plan_of_order(space, plan.order).cost - plan.cost) <= 1e-6 * max(plan.cost, 1.0)
    assert plan.cost >= best_plan(space, first).cost * (1 - 1e-9)


def test_a_many_way_join_is_ordered_greedily_along_its_joins():
    """A chain of 30 joins, listed in random order: past EXHAUSTIVE_ATOMS, the greedy search orders it as
    a chain (each atom joined to the ones before it), where the dynamic programming would visit 2^30 sets."""
    count = 30
    assert count > EXHAUSTIVE_ATOMS
    atoms = [AtomEstimate(1000.0 * (i + 1), {f"V{i}": 100.0, f"V{i + 1}": 100.0}) for i in range(count)]
    shuffled = [atoms[i] for i in (list(range(0, count, 2)) + list(range(1, count, 2)))]
    space = JoinSpace(shuffled, [], CostModel())
    plan = best_plan(space)
    assert admissible(space, plan.order) and sorted(plan.order) == list(range(count))
    assert all(step.method != JoinMethod.CROSS for step in plan.steps)
