"""The optimizer: a list of passes from IR to IR (outer joins made inner where a condition allows, join
order, magic sets, join order of the rewritten rules), each recorded so EXPLAIN can show the program
after every pass with its estimates."""

from __future__ import annotations

from dataclasses import dataclass, field

from recsql.analysis import stratify
from recsql.optimizer.cardinality import Estimator, StatisticsProvider
from recsql.optimizer.join_order import CostModel
from recsql.optimizer.magic import magic_sets
from recsql.optimizer.ordering import order_joins
from recsql.optimizer.outer_joins import simplify_outer_joins
from recsql.settings import Settings
from translator.ir import Program

# Without recursion, magic sets must at least halve the derived facts: on Spark their extra relations are
# extra joins and shuffles, each magic relation computed again for every rule reading it.
NON_RECURSIVE_GAIN = 2.0


@dataclass
class Optimized:
    program: Program
    estimator: Estimator
    model: CostModel
    passes: list[tuple[str, Program, Estimator]] = field(default_factory=list)  # name, result, its estimates
    magic: str = "not applicable"  # what the magic-sets pass decided, for EXPLAIN


def optimize(program: Program, statistics: StatisticsProvider, settings: Settings, model: CostModel) -> Optimized:
    program = simplify_outer_joins(program)
    estimator = Estimator(program, statistics)
    program = order_joins(program, estimator, model)
    result = Optimized(program, estimator, model, [("join order (System R)", program, estimator)])
    if settings.magic == "off":
        result.magic = "off (recsql.magic)"
        return result
    rewritten = magic_sets(program, estimator)
    if rewritten is program:
        return result
    rewritten_estimator = Estimator(rewritten, statistics)
    before, after = derived_rows(program, estimator), derived_rows(rewritten, rewritten_estimator)
    gain = 1.0 if any(component.recursive for component in stratify(program)) else NON_RECURSIVE_GAIN
    if settings.magic == "auto" and after * gain >= before:
        needed = "" if gain == 1.0 else f" (no recursion: they must cut the facts by {gain:g}x)"
        result.magic = f"not used: estimated {after:.0f} derived facts with, {before:.0f} without{needed}"
        return result
    rewritten = order_joins(rewritten, rewritten_estimator, model)
    result.program, result.estimator = rewritten, rewritten_estimator
    result.passes.append(("magic sets, then join order", rewritten, rewritten_estimator))
    result.magic = f"used: estimated {after:.0f} derived facts instead of {before:.0f}"
    return result


def derived_rows(program: Program, estimator: Estimator) -> float:
    """The facts a program is expected to derive: the sum of its relations' estimated sizes."""
    return sum(estimator.relation(name).rows for name in program.relations)
