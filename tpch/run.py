"""TPC-H through recsql, timed per query, beside Spark SQL on the same text and checked against DuckDB.

    python -m tpch.run --sf 1 [--compare-spark] [--check] [--repeat 3] [--only 1 6 ...] [--data tpch-data]

The runner of every TPC suite (tpch/suite.py; TPC-DS: `python -m tpcds.run`, checked against Spark SQL).
The tables are generated once per scale factor (Parquet, under --data), declared in recsql
over their files (CREATE TABLE ... USING parquet) and analyzed once (ANALYZE TABLE, timed on its own).
Each query's time is the median of --repeat runs, fetching every row, after one untimed run. With
--compare-spark the same text runs through `spark.sql` in the same Spark session (its tables: temporary
views over the same files), runs of the two alternating, and the ratio is Spark SQL's time over
recsql's (above 1: recsql faster).
With --check every recsql answer is compared with the suite's reference on the same files, DuckDB's or
Spark SQL's (numbers to the cent, ordered answers in order).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import recsql
from tpch.check import difference, ordered
from tpch.data import analyze_tables, create_tables, duckdb_views, generate, spark_views
from tpch.suite import TPCH, Suite


@dataclass
class Timing:
    name: str  # the query's ("1", "14a")
    recsql: float
    spark: float | None = None
    check: str | None = None  # "ok" or the first difference

    @property
    def ratio(self) -> float | None:
        return self.spark / self.recsql if self.spark is not None else None


def median_seconds(
    runs: dict[str, Callable[[], Any]], repeat: int, settle: Callable[[], None]
) -> dict[str, tuple[float, Any]]:
    """Per alternative, the median time of `repeat` runs and its last result. Each alternative first runs
    once untimed (code generation, caches); then the alternatives take turns, so that neither always runs
    right after the other. `settle` runs before each run, untimed."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    results: dict[str, Any] = {}
    for run in runs.values():
        settle()
        run()
    for _ in range(repeat):
        for name, run in runs.items():
            settle()
            started = time.perf_counter()
            results[name] = run()
            times[name].append(time.perf_counter() - started)
    return {name: (statistics.median(times[name]), results[name]) for name in runs}


def main(argv: list[str] | None = None, suite: Suite = TPCH) -> int:
    module = suite.package
    parser = argparse.ArgumentParser(prog=f"python -m {module}.run", description=f"{suite.name} through recsql")
    parser.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1)")
    parser.add_argument("--compare-spark", action="store_true", help="time spark.sql on the same text too")
    parser.add_argument("--check", action="store_true", help=f"compare each answer with {suite.reference}'s")
    parser.add_argument("--repeat", type=int, default=3, help="runs per query; the median is reported")
    parser.add_argument("--only", nargs="+", metavar="N", help="run only these queries (1 6 14a ...)")
    parser.add_argument("--data", type=Path, default=Path(f"{module}-data"), help="where the generated tables are kept")
    parser.add_argument("--driver-memory", default="8g", help="Spark driver memory (local mode: all of Spark)")
    args = parser.parse_args(argv)

    selected = {name: sql for name, sql in suite.queries().items() if not args.only or name in args.only}
    directory = generate(args.sf, args.data, suite)
    connection = recsql.connect(
        conf={"spark.driver.memory": args.driver_memory, "spark.ui.enabled": "false"},
        warehouse=tempfile.mkdtemp(prefix=f"recsql-{module}-"),
    )
    spark = connection.spark_session
    create_tables(connection, directory, suite)
    started = time.perf_counter()
    analyze_tables(connection, suite)
    seconds = time.perf_counter() - started
    print(f"{suite.name} SF {args.sf:g}: statistics gathered in {seconds:.2f} s (ANALYZE TABLE, once)")
    checked_by_spark = args.check and suite.reference == "spark"
    if args.compare_spark or checked_by_spark:
        spark_views(spark, directory, suite)
    reference = duckdb_views(directory, suite) if args.check and not checked_by_spark else None
    cursor = connection.cursor()

    def settle() -> None:
        gc.collect()
        spark.sparkContext._jvm.System.gc()

    def through_recsql(sql: str) -> list[tuple]:
        cursor.execute(sql)
        return cursor.fetchall()

    def through_spark(sql: str) -> list[tuple]:
        return [tuple(row) for row in spark.sql(sql).collect()]

    timings = []
    for name, sql in selected.items():
        runs = {"recsql": lambda sql=sql: through_recsql(sql)}
        if args.compare_spark:
            runs["spark"] = lambda sql=sql: through_spark(sql)
        measured = median_seconds(runs, args.repeat, settle)
        seconds, rows = measured["recsql"]
        timing = Timing(name, seconds, measured["spark"][0] if args.compare_spark else None)
        if args.check:
            if checked_by_spark:
                expected = measured["spark"][1] if args.compare_spark else through_spark(sql)
            else:
                expected = reference.execute(sql).fetchall()
            timing.check = difference(rows, expected, ordered(sql)) or "ok"
        timings.append(timing)
        print(line(timing, suite), flush=True)
    print(summary(timings, suite))
    failed = [t for t in timings if t.check not in (None, "ok")]
    return 1 if failed else 0


def reference_name(suite: Suite) -> str:
    return "Spark SQL" if suite.reference == "spark" else "DuckDB"


def line(timing: Timing, suite: Suite) -> str:
    text = f"Q{timing.name.zfill(2 + (not timing.name.isdigit())):<4} recsql {timing.recsql:8.3f} s"
    if timing.spark is not None:
        text += f"   spark.sql {timing.spark:8.3f} s   ratio {timing.ratio:5.2f}"
    if timing.check is not None:
        text += f"   {'matches ' + reference_name(suite) if timing.check == 'ok' else 'DIFFERS: ' + timing.check}"
    return text


def summary(timings: list[Timing], suite: Suite) -> str:
    total = sum(t.recsql for t in timings)
    text = f"total  recsql {total:8.3f} s"
    if all(t.spark is not None for t in timings):
        spark_total = sum(t.spark for t in timings)
        text += f"   spark.sql {spark_total:8.3f} s   ratio {spark_total / total:5.2f} (spark.sql / recsql)"
    checked = [t for t in timings if t.check is not None]
    if checked:
        text += f"\n{sum(t.check == 'ok' for t in checked)}/{len(checked)} answers match {reference_name(suite)}'s"
    return text


if __name__ == "__main__":
    sys.exit(main())
