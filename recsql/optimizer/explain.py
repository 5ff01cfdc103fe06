"""EXPLAIN's view of the optimizer: the program after each pass, every relation with its estimated size
and every rule with its join order, join methods and estimated rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recsql.optimizer.ordering import describe_plan, order_body, rows_text

if TYPE_CHECKING:
    from recsql.optimizer import Optimized


def explain_passes(optimized: "Optimized") -> list[str]:
    lines: list[str] = []
    for number, (name, program, estimator) in enumerate(optimized.passes, start=1):
        if lines:
            lines.append("")
        lines.append(f"== Pass {number}: {name} ==")
        for relation in program.relations.values():
            size = rows_text(estimator.relation(relation.name).rows)
            lines.append(f"% {relation.header()}  ~{size} rows")
            for rule in program.rules_for(relation.name):
                lines.append(str(rule))
                plan = describe_plan(order_body(rule, estimator, optimized.model))
                if plan:
                    lines.append(f"    -- {plan}")
        lines.append(program.to_datalog().splitlines()[-1])
    lines += ["", f"Magic sets: {optimized.magic}"]
    return lines
