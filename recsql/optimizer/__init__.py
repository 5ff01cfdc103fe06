"""The optimizer: passes from IR to IR (outer joins made inner where a condition allows, join order,
magic sets, join order of the rewritten rules), listed and run by pipeline.py, each recorded so EXPLAIN
can show the program after every pass with its estimates (explain.py).

May import: `translator`, `recsql.analysis`, `recsql.statistics`, `recsql.errors`: the optimizer knows
programs and estimates, not settings, plans or engines."""

from recsql.optimizer.pipeline import PASS_NAMES, PASSES, Optimized, optimize

__all__ = ["PASSES", "PASS_NAMES", "Optimized", "optimize"]
