"""An answer handed on as a Spark DataFrame against the same answer pulled through this process: the
transitive closure of tc-cyclic-22m (22M facts), forced decomposed, written by Spark to Parquet.

    python -m benchmarks.frames [--repeat 3] [--master local[2]] [--driver-memory 8g] [--strategy decomposed]

- dataframe: `conn.cursor(on_spark=True)`, `execute(closure)`, `fetch_spark()` (the answer stays on the
  executors, as `recsql.sql` gives it) then `.write.parquet(...)`;
- arrow: `cursor.execute(closure)`, `fetch_arrow()`, `spark.createDataFrame(table)`, `.write.parquet(...)`,
  the way an answer reached a Spark pipeline before.

Both run in the same process on the same session, alternating; the report gives the median time of each
and the peak growth of this Python process's resident memory (Spark's JVM apart), and checks that both
wrote the same number of rows.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pyarrow.parquet as pq

import recsql
from benchmarks.memory import peak_growth
from benchmarks.timing import report
from benchmarks.workloads import scale_workloads

WORKLOAD = "tc-cyclic-22m"
CLOSURE = """WITH RECURSIVE tc(x, y) AS (SELECT src, dst FROM edge UNION
SELECT tc.x, e.dst FROM tc JOIN edge e ON tc.y = e.src) SELECT x, y FROM tc"""


def process_rss() -> int:
    return int(psutil.Process().memory_info().rss)


def run(args: argparse.Namespace) -> int:
    workload = next(workload for workload in scale_workloads() if workload.name == WORKLOAD)
    directory = Path(tempfile.mkdtemp(prefix="recsql-frames-"))
    conf = {"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false", "spark.driver.memory": args.driver_memory}
    conn = recsql.connect(master=args.master, conf=conf, warehouse=str(directory / "warehouse"))
    spark = conn.spark_session
    conn.register("edge", workload.edges())
    conn.cursor().execute(f"SET recsql.strategy = {args.strategy}")
    kept, collected = conn.cursor(on_spark=True), conn.cursor()

    def as_dataframe(out: Path) -> None:
        kept.execute(CLOSURE)
        kept.fetch_spark().write.parquet(str(out))

    def through_arrow(out: Path) -> None:
        collected.execute(CLOSURE)
        spark.createDataFrame(collected.fetch_arrow()).write.parquet(str(out))

    ways: dict[str, Callable[[Path], None]] = {"dataframe": as_dataframe, "arrow": through_arrow}
    times: dict[str, list[float]] = {name: [] for name in ways}
    memory: dict[str, int] = {name: 0 for name in ways}
    written: dict[str, int] = {}
    for attempt in range(args.repeat + 1):  # the first round warms up
        for name, way in ways.items():
            out = directory / f"{name}-{attempt}"
            started = time.perf_counter()
            _, grown = peak_growth(functools.partial(way, out), measure=process_rss)
            elapsed = time.perf_counter() - started
            written[name] = pq.ParquetDataset(str(out)).read().num_rows
            shutil.rmtree(out)
            memory[name] = max(memory[name], grown)  # the first run's counts most: later ones reuse freed memory
            if attempt:
                times[name].append(elapsed)
    conn.close()
    shutil.rmtree(directory, ignore_errors=True)
    medians = {name: statistics.median(values) for name, values in times.items()}
    rows = [
        (
            name,
            f"{medians[name]:.2f} s (runs {', '.join(f'{t:.2f}' for t in times[name])}), "
            f"peak growth of this process {memory[name] / 2**20:,.0f} MB, {written[name]:,} rows written",
        )
        for name in ways
    ]
    rows.append(("arrow / dataframe", f"{medians['arrow'] / medians['dataframe']:.2f}x"))
    print(report(f"{WORKLOAD}: the answer to Parquet, recsql.strategy = {args.strategy}, {args.master}", rows))
    return 0 if len(set(written.values())) == 1 else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each (default 3); the median is kept")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="8g")
    parser.add_argument("--strategy", default="decomposed", choices=("decomposed", "distributed"))
    return run(parser.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
