"""The optimizer's passes in order, and the driver that runs them.

As sqlglot's optimizer runs its RULES, `optimize` runs `PASSES`, plain functions from a `Context` to an
`Outcome` (context.py): adding a pass is writing one function and listing it here. Each pass that runs is
recorded with the program after it, its estimates and what it decided, which is what EXPLAIN shows. As
Souffle's transformers can be, any pass is switched off by name (`SET recsql.disable_passes = ...`).

A pass may be listed twice: join ordering runs again after magic sets, whose new rules have no order. A
pass is not run on a program it produced itself, its work being done there: so join ordering runs again
only when magic sets rewrote the program.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from recsql.optimizer.cardinality import Estimator, StatisticsProvider
from recsql.optimizer.context import Context, OptimizerSettings, Pass
from recsql.optimizer.join_order import order_joins
from recsql.optimizer.join_search import CostModel
from recsql.optimizer.magic import magic_sets
from recsql.optimizer.outer_joins import simplify_outer_joins
from translator.ir import Program

PASSES: tuple[Pass, ...] = (simplify_outer_joins, order_joins, magic_sets, order_joins)
PASS_NAMES: tuple[str, ...] = tuple(dict.fromkeys(run.__name__ for run in PASSES))


@dataclass(frozen=True)
class PassRecord:
    """A pass that ran: what it decided, the program after it and that program's estimates."""

    name: str
    note: str
    program: Program
    estimator: Estimator
    changed: bool  # False: the pass kept the program it was given


@dataclass(frozen=True)
class Optimized:
    program: Program
    estimator: Estimator
    model: CostModel
    passes: tuple[PassRecord, ...]  # in the order they ran
    disabled: tuple[str, ...]  # the passes recsql.disable_passes switched off


def optimize(
    program: Program,
    statistics: StatisticsProvider,
    settings: OptimizerSettings,
    model: CostModel,
    passes: tuple[Pass, ...] = PASSES,
) -> Optimized:
    """`program` through `passes`, less those `settings.disable_passes` names."""
    context = Context(program, Estimator(program, statistics), statistics, settings, model)
    records: list[PassRecord] = []
    produced: dict[str, Program] = {}  # per pass, the program it made last
    for run in passes:
        name = run.__name__
        if name in settings.disable_passes or produced.get(name) is context.program:
            continue
        outcome = run(context)
        changed = outcome.program is not context.program
        records.append(PassRecord(name, outcome.note, outcome.program, outcome.estimator, changed))
        produced[name] = outcome.program
        context = replace(context, program=outcome.program, estimator=outcome.estimator)
    disabled = tuple(dict.fromkeys(run.__name__ for run in passes if run.__name__ in settings.disable_passes))
    return Optimized(context.program, context.estimator, model, tuple(records), disabled)
