"""TPC-H through recsql, timed per query, beside Spark SQL on the same text and checked against DuckDB.

    python -m tpch.run --sf 1 [--compare-spark] [--check] [--repeat 3] [--only 1 6 ...] [--data tpch-data]

The tables are generated once per scale factor (tpchgen-cli, Parquet, under --data), declared in recsql
over their files (CREATE TABLE ... USING parquet) and analyzed once (ANALYZE TABLE, timed on its own).
Each query's time is the median of --repeat runs, fetching every row, after one untimed run. With
--compare-spark the same text runs through `spark.sql` in the same Spark session (its tables: temporary
views over the same files), runs of the two alternating, and the ratio is Spark SQL's time over
recsql's (above 1: recsql faster).
With --check every recsql answer is compared with DuckDB's on the same files (numbers to the cent,
ordered answers in order).
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
from tpch.queries import queries


@dataclass
class Timing:
    number: int
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tpch.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1)")
    parser.add_argument("--compare-spark", action="store_true", help="time spark.sql on the same text too")
    parser.add_argument("--check", action="store_true", help="compare each answer with DuckDB's")
    parser.add_argument("--repeat", type=int, default=3, help="runs per query; the median is reported")
    parser.add_argument("--only", type=int, nargs="+", metavar="N", help="run only these queries")
    parser.add_argument("--data", type=Path, default=Path("tpch-data"), help="where the generated tables are kept")
    parser.add_argument("--driver-memory", default="8g", help="Spark driver memory (local mode: all of Spark)")
    args = parser.parse_args(argv)

    selected = {n: sql for n, sql in queries().items() if not args.only or n in args.only}
    directory = generate(args.sf, args.data)
    connection = recsql.connect(
        conf={"spark.driver.memory": args.driver_memory, "spark.ui.enabled": "false"},
        warehouse=tempfile.mkdtemp(prefix="recsql-tpch-"),
    )
    spark = connection.spark_session
    create_tables(connection, directory)
    started = time.perf_counter()
    analyze_tables(connection)
    print(f"TPC-H SF {args.sf:g}: statistics gathered in {time.perf_counter() - started:.2f} s (ANALYZE TABLE, once)")
    if args.compare_spark:
        spark_views(spark, directory)
    reference = duckdb_views(directory) if args.check else None
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
    for number, sql in selected.items():
        runs = {"recsql": lambda sql=sql: through_recsql(sql)}
        if args.compare_spark:
            runs["spark"] = lambda sql=sql: through_spark(sql)
        measured = median_seconds(runs, args.repeat, settle)
        seconds, rows = measured["recsql"]
        timing = Timing(number, seconds, measured["spark"][0] if args.compare_spark else None)
        if reference is not None:
            timing.check = difference(rows, reference.execute(sql).fetchall(), ordered(sql)) or "ok"
        timings.append(timing)
        print(line(timing), flush=True)
    print(summary(timings))
    failed = [t for t in timings if t.check not in (None, "ok")]
    return 1 if failed else 0


def line(timing: Timing) -> str:
    text = f"Q{timing.number:02d}  recsql {timing.recsql:8.3f} s"
    if timing.spark is not None:
        text += f"   spark.sql {timing.spark:8.3f} s   ratio {timing.ratio:5.2f}"
    if timing.check is not None:
        text += f"   {'matches DuckDB' if timing.check == 'ok' else 'DIFFERS: ' + timing.check}"
    return text


def summary(timings: list[Timing]) -> str:
    total = sum(t.recsql for t in timings)
    text = f"total  recsql {total:8.3f} s"
    if all(t.spark is not None for t in timings):
        spark_total = sum(t.spark for t in timings)
        text += f"   spark.sql {spark_total:8.3f} s   ratio {spark_total / total:5.2f} (spark.sql / recsql)"
    checked = [t for t in timings if t.check is not None]
    if checked:
        text += f"\n{sum(t.check == 'ok' for t in checked)}/{len(checked)} answers match DuckDB's"
    return text


if __name__ == "__main__":
    sys.exit(main())
