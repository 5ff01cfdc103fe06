"""The local strategy inside a plan that runs on Spark: a recursive stratum's inputs are collected to
Arrow once, the fixpoint runs in this process (local/engine.py) without a Spark job, and its results come
back as DataFrames with the column types the distributed evaluation would give. Past its capacity it
gives way to the next strategy, which starts again from scratch."""

from __future__ import annotations

from pyspark.sql import DataFrame

from recsql.engine.fixpoint import CapacityExceeded
from recsql.engine.local.engine import LocalFixpoint
from recsql.engine.spark.context import StratumRun
from recsql.engine.spark.types import stratum_types
from recsql.engine.sql.printing import LocalLimit
from recsql.engine.types.result_types import struct
from recsql.planner.plan import Stratum
from recsql.settings import Strategy
from recsql.spark.session_kinds import arrow_frame


def run_in_process(run: StratumRun, stratum: Stratum) -> dict[str, DataFrame] | None:
    if stratum.relations in run.outgrown:
        return None
    types = stratum_types(run, stratum)
    fixpoint = LocalFixpoint(
        run.program,
        stratum,
        run.local_inputs(stratum),
        run.settings,
        run.report,
        types.arrow,
        run.spark_settings,
    )
    try:
        tables = fixpoint.run()
    except CapacityExceeded as exceeded:
        run.outgrow(exceeded)
        return None
    except LocalLimit as limit:  # planned here by the planner's choice: the next strategy runs it
        if run.settings.strategy == Strategy.LOCAL:
            raise
        run.note(f"{', '.join(stratum.relations)}: run on Spark: {limit.message}")
        return None
    rows = types.spark(fixpoint.iterations)
    return {name: arrow_frame(run.spark, table, struct(rows[name])) for name, table in tables.items()}
