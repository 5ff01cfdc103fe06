"""EXPLAIN's view of the optimizer: each pass that ran, what it decided, and the program after it, every
relation with its estimated size and every rule the join-ordering pass ordered with its join order, join
methods and estimated rows; then the passes recsql.disable_passes switched off."""

from __future__ import annotations

from recsql.optimizer.cardinality import Estimator
from recsql.optimizer.join_order import OrderedBody, order_body
from recsql.optimizer.join_search import CostModel
from recsql.optimizer.pipeline import Optimized
from translator.ir import Atom, JoinMethod, Program


def explain_passes(optimized: Optimized) -> list[str]:
    lines: list[str] = []
    for number, record in enumerate(optimized.passes, start=1):
        if lines:
            lines.append("")
        lines.append(f"== Pass {number}: {record.name} ==")
        if record.note:
            lines.append(record.note)
        if record.changed:
            lines += listing(record.program, record.estimator, optimized.model)
        else:
            lines.append("(program unchanged)")
    if not any(record.changed for record in optimized.passes):  # the program is shown once at least
        lines += ["", "== Program =="] + listing(optimized.program, optimized.estimator, optimized.model)
    if optimized.disabled:
        lines += ["", f"Disabled passes (recsql.disable_passes): {', '.join(optimized.disabled)}"]
    return lines


def listing(program: Program, estimator: Estimator, model: CostModel) -> list[str]:
    """The relations with their estimated sizes, the rules, and the join plan of each ordered rule."""
    lines = []
    for relation in program.relations.values():
        size = rows_text(estimator.relation(relation.name).rows)
        lines.append(f"% {relation.header()}  ~{size} rows")
        if relation.opaque is not None:
            lines.append(relation.opaque.rule_text(relation.header()))
        for rule in program.rules_for(relation.name):
            lines.append(str(rule))
            plan = describe_plan(order_body(rule, estimator, model)) if rule.joins else ""
            if plan:
                lines.append(f"    -- {plan}")
    lines.append(program.to_datalog().splitlines()[-1])
    return lines


def describe_plan(body: OrderedBody) -> str:
    """`cost N: a [~rows] ⋈ b [shuffle on X, ~rows] ⋈ c [broadcast on Y, ~rows]`."""
    if body.plan is None:
        return ""
    inner = [literal for literal in body.literals if isinstance(literal, Atom)][: len(body.plan.steps)]
    parts = []
    for atom, step in zip(inner, body.plan.steps):
        text = f"{atom.relation}({', '.join(atom.args)})"
        if step.method != JoinMethod.SCAN:
            on = f" on {', '.join(step.keys)}" if step.keys else ""
            text = f"⋈ {text} [{step.method.value}{on}, ~{rows_text(step.rows)}]"
        else:
            text = f"{text} [~{rows_text(step.rows)}]"
        parts.append(text)
    return f"cost {rows_text(body.plan.cost)}: " + " ".join(parts)


def rows_text(rows: float) -> str:
    if rows >= 1e9:
        return f"{rows / 1e9:.1f}G"
    if rows >= 1e6:
        return f"{rows / 1e6:.1f}M"
    if rows >= 1e4:
        return f"{rows / 1e3:.0f}k"
    return f"{rows:.0f}"
