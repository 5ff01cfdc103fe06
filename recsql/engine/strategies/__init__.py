"""The strategies that run a recursive stratum, in the order in which each gives way to the next: a
stratum planned with one strategy runs with it, or, when it cannot (a local run past its capacity, a
decomposition whose types change while iterating), with the next one. A new strategy is a module with
its run function and one line here (and its name in settings.Strategy)."""

from __future__ import annotations

from pyspark.sql import DataFrame

from recsql.engine.spark.context import StrategyRun, StratumRun
from recsql.engine.strategies.decomposed import run_decomposed
from recsql.engine.strategies.distributed import run_distributed
from recsql.engine.strategies.in_process import run_in_process
from recsql.planner.plan import Stratum
from recsql.settings import Strategy

STRATEGIES: dict[Strategy, StrategyRun] = {
    Strategy.LOCAL: run_in_process,
    Strategy.DECOMPOSED: run_decomposed,
    Strategy.DISTRIBUTED: run_distributed,
}


def run_stratum(run: StratumRun, stratum: Stratum) -> dict[str, DataFrame]:
    """The DataFrames of the stratum's relations, from its strategy or the first after it that runs it."""
    order = list(STRATEGIES)
    for strategy in order[order.index(stratum.strategy) :]:
        frames = STRATEGIES[strategy](run, stratum)
        if frames is not None:
            return frames
    raise AssertionError(f"no strategy ran {stratum.relations}")  # the last one always does
