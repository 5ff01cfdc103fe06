"""The join-ordering pass: each rule's inner-join atoms in the order System R (join_search.py) finds
cheapest, and the join method it expects for each (`Rule.joins`, which the engines follow).

Only positive, non-outer atoms move. Conditions and assignments are applied by the engine as soon as
their variables are bound wherever they stand; outer joins keep their written order after the inner
joins (their ON conditions read what is bound before them); anti-joins come last. The planner orders
each semi-naive delta rule with `order_body` too, the delta driving.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from recsql.optimizer.cardinality import AtomEstimate, Estimator
from recsql.optimizer.context import Context, Outcome
from recsql.optimizer.join_search import CostModel, JoinPlan, JoinSpace, best_plan
from translator.ir import Atom, Condition, Literal, Program, Rule


@dataclass(frozen=True)
class OrderedBody:
    literals: tuple[Literal, ...]
    positions: tuple[int, ...]  # for each literal, its position in the rule as written
    plan: JoinPlan | None
    space: JoinSpace | None


def inner_atom_positions(rule: Rule) -> list[int]:
    return [
        i
        for i, literal in enumerate(rule.body)
        if isinstance(literal, Atom) and not literal.filters and not literal.optional
    ]


def atom_at(rule: Rule, position: int) -> Atom:
    """The atom at a body position known to hold one (one of inner_atom_positions, say)."""
    literal = rule.body[position]
    assert isinstance(literal, Atom), f"literal {position} of {rule} is not an atom"
    return literal


def order_body(
    rule: Rule,
    estimator: Estimator,
    model: CostModel,
    first: int | None = None,
    overrides: dict[int, AtomEstimate] | None = None,
) -> OrderedBody:
    """The body of `rule` in join order. `first` (a body position) fixes the driving atom; `overrides`
    replace the estimate of atoms at given positions (a delta's size from the last iteration)."""
    inner = inner_atom_positions(rule)
    if not inner:
        return OrderedBody(rule.body, tuple(range(len(rule.body))), None, None)
    overrides = overrides or {}
    estimates = [overrides.get(i) or estimator.atom(atom_at(rule, i)) for i in inner]
    conditions = [literal for literal in rule.body if isinstance(literal, Condition)]
    space = JoinSpace(estimates, conditions, model)
    plan = best_plan(space, inner.index(first) if first is not None else None)
    ordered = [inner[k] for k in plan.order]
    rest = [i for i in range(len(rule.body)) if i not in inner]
    rest.sort(key=lambda i: (isinstance(rule.body[i], Atom), i))  # conditions, then outer joins and anti-joins
    positions = tuple(ordered + rest)
    return OrderedBody(tuple(rule.body[i] for i in positions), positions, plan, space)


def order_joins(context: Context) -> Outcome:
    """The pass: every rule with its inner joins in System R order. The estimates stay: the order of a
    body changes what a rule costs, not what it derives."""
    return Outcome(ordered_program(context.program, context.estimator, context.model), context.estimator)


def ordered_program(program: Program, estimator: Estimator, model: CostModel) -> Program:
    """Every rule of `program` with its inner joins in System R order and their join methods."""
    rules = []
    for rule in program.rules:
        body = order_body(rule, estimator, model)
        joins = tuple(step.method for step in body.plan.steps) if body.plan is not None else ()
        rules.append(Rule(rule.head, rule.terms, body.literals, joins))
    return replace(program, rules=rules)
