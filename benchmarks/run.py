"""recsql beside the alternatives on the benchmark workloads, in one process, on the same data.

    python -m benchmarks.run [--quick | --scale | --deep] [--repeat 3] [--only NAME ...] [--chart benchmarks.png]
                             [--strategy auto|local|decomposed|distributed] [--systems recsql ...]
                             [--json FILE]
    python -m benchmarks.run --compare OLD.json NEW.json

For each workload (benchmarks/workloads.py) it runs recsql, Spark's native recursive CTE (where it
terminates: UNION ALL on DAGs and trees), a hand-written PySpark semi-naive loop (benchmarks/loops.py)
and DuckDB's recursive CTE, checks that they give the same answer, and prints the median time of
`--repeat` runs (after one run that warms up and samples memory), each alternative's time as a multiple
of recsql's, the answer, where recsql ran the recursion, and the peak memory growth of the process tree
(this process and Spark's JVM). `--chart` writes the times as a PNG bar chart (needs matplotlib:
pip install -e '.[bench]').

`--strategy` forces where recsql runs its recursion (SET recsql.strategy; `auto` by default), so the Spark
strategies are measured and not only the one `auto` picks. `--scale` runs the workloads at the sizes where
Spark is the point (benchmarks/workloads.py, scale_workloads) with recsql under every strategy, each
forced, beside the alternatives; a run that takes over a minute is timed once. `--deep` runs deep, thin
recursions of thousands of iterations (deep_workloads) beside DuckDB. `--systems` runs only
some of the systems (`--systems recsql` to time recsql alone). `--json` writes recsql's medians and the
run conditions; `--compare` prints two such files side by side (two versions of recsql, run in the same
conditions).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

import recsql
from benchmarks.memory import peak_growth
from benchmarks.timing import compare_medians, save_medians
from benchmarks.workloads import Workload, deep_workloads, scale_workloads, workloads
from recsql.settings import Strategy
from recsql.spark.session_kinds import is_connect

SYSTEMS = ("recsql", "spark native", "pyspark loop", "duckdb")
ALTERNATIVES = SYSTEMS[1:]
COMPARED = ("quick", "repeat", "strategy", "driver memory")
ONCE_PAST_SECONDS = 60.0  # a first run longer than this is the measurement: no repeats
PARTS_BALANCE = "parts, facts per part"  # the EXPLAIN ANALYZE line on how evenly the parts shared the work


@dataclass
class Measurement:
    seconds: float
    memory: int  # bytes, peak growth
    answer: tuple


@dataclass
class Outcome:
    workload: Workload
    where: dict[str, str]  # recsql's runs: where each ran its recursion
    results: dict[str, Measurement] = field(default_factory=dict)
    balance: list[str] = field(default_factory=list)  # how the parts of a forced decomposed run shared the work


def measure(run: Callable[[], Any], repeat: int, settle: Callable[[], None]) -> Measurement:
    """A first run samples memory (and warms up: Python workers, JIT, caches); `repeat` more runs, with
    nothing sampling beside them, give the median time. `settle` runs before each, untimed, so that no
    run pays for garbage an earlier one (of any system) left behind."""
    settle()
    started = time.perf_counter()
    answer, memory = peak_growth(run)
    first = time.perf_counter() - started
    if first > ONCE_PAST_SECONDS:
        return Measurement(first, memory, tuple(int(value) for value in answer))
    times = []
    for _ in range(repeat):
        settle()
        started = time.perf_counter()
        answer = run()
        times.append(time.perf_counter() - started)
    return Measurement(statistics.median(times), memory, tuple(int(value) for value in answer))


def where_recsql_runs(cursor, sql: str) -> str:
    cursor.execute("EXPLAIN " + sql)
    text = "\n".join(row[0] for row in cursor.fetchall())
    if "runs without Spark" in text:
        return Strategy.LOCAL
    for strategy in (Strategy.LOCAL, Strategy.DECOMPOSED, Strategy.DISTRIBUTED):
        if f"semi-naive fixpoint, {strategy}" in text:
            return strategy
    return Strategy.DISTRIBUTED


def as_bigint(edges: Callable[[], pa.Table]) -> Callable[[], pa.Table]:
    """The graph of `edges` with its integer columns as BIGINT."""

    def widened() -> pa.Table:
        table = edges()
        return table.cast(
            pa.schema([pa.field(f.name, pa.int64() if pa.types.is_integer(f.type) else f.type) for f in table.schema])
        )

    return widened


def run_workload(
    workload: Workload, conn, duck, repeat: int, systems: tuple[str, ...], recsql_runs: dict[str, str]
) -> Outcome:
    """Each system's measurement; `recsql_runs` names recsql's runs and the strategy each forces."""
    spark = conn.spark_session
    edges = workload.edges()
    conn.register("edge", edges)
    spark.createDataFrame(edges).cache().createOrReplaceTempView("edge")
    spark.table("edge").count()
    duck.register("edge", edges)
    cursor = conn.cursor()
    where = {}
    for name, strategy in recsql_runs.items():
        cursor.execute(f"SET recsql.strategy = {strategy}")
        where[name] = where_recsql_runs(cursor, workload.recsql)
    outcome = Outcome(workload, where)

    def first_row(rows) -> tuple:
        return tuple(rows[0])

    def settle() -> None:
        """Collect the garbage of this process and of Spark's JVM (when it is this process's)."""
        gc.collect()
        if not is_connect(spark):
            spark.sparkContext._jvm.System.gc()

    def recsql_run() -> tuple:
        return first_row((cursor.execute(workload.recsql), cursor.fetchall())[1])

    def forcing(strategy: str) -> Callable[[], None]:
        return lambda: (settle(), cursor.execute(f"SET recsql.strategy = {strategy}"))

    if "recsql" in systems:
        for name, strategy in recsql_runs.items():
            outcome.results[name] = measure(recsql_run, repeat, forcing(strategy))
        if Strategy.DECOMPOSED in recsql_runs.values():
            forcing(Strategy.DECOMPOSED)()
            cursor.execute("EXPLAIN ANALYZE " + workload.recsql)
            outcome.balance = [row[0] for row in cursor.fetchall() if PARTS_BALANCE in row[0]]
    runs = {
        "spark native": (lambda: first_row(spark.sql(workload.spark).collect())) if workload.spark else None,
        "pyspark loop": (lambda: workload.loop(spark)) if workload.loop else None,
        "duckdb": lambda: duck.execute(workload.duckdb).fetchall()[0],
    }
    for system, run in runs.items():
        if system in systems and run is not None:
            outcome.results[system] = measure(run, repeat, settle)
    answers = {system: result.answer for system, result in outcome.results.items()}
    if len(set(answers.values())) != 1:
        raise AssertionError(f"{workload.name}: the answers differ: {answers}")
    spark.catalog.uncacheTable("edge")
    return outcome


def table(outcomes: list[Outcome], repeat: int, columns: list[str]) -> str:
    """Times of every system in `columns`; each alternative's time as a multiple of recsql's forced
    distributed (or of the only recsql run), and each recsql run's as a multiple of the first."""
    recsql_columns = [c for c in columns if c.startswith("recsql")]
    base = next((c for c in recsql_columns if c.endswith("distributed")), recsql_columns[0])
    header = ["workload", "graph", "answer"] + [f"{c} (s)" for c in columns]
    header += [f"x {base}: " + " / ".join(ALTERNATIVES)]
    if len(recsql_columns) > 1:
        header += [f"x {recsql_columns[0]}: " + " / ".join(c.removeprefix("recsql ") for c in recsql_columns[1:])]
    rows = [header]
    for outcome in outcomes:
        results = outcome.results

        def ratios(names: list[str], over: str, results: dict = results) -> str:
            return " / ".join(
                f"{results[n].seconds / results[over].seconds:.2f}" if n in results and over in results else "-"
                for n in names
            )

        cells = []
        for column in columns:
            cell = f"{results[column].seconds:.3f}" if column in results else "n/a"
            ran = outcome.where.get(column)
            if ran and ran not in column:
                cell += f" ({ran})"
            cells.append(cell)
        answer = ", ".join(f"{value:,}" for value in next(iter(results.values())).answer)
        row = [outcome.workload.name, outcome.workload.graph, answer] + cells + [ratios(list(ALTERNATIVES), base)]
        if len(recsql_columns) > 1:
            row.append(ratios(recsql_columns[1:], recsql_columns[0]))
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    notes = [
        f"medians of {repeat} runs (one run where the first took over {ONCE_PAST_SECONDS:.0f} s); (x) after a "
        "recsql time: where it ran the recursion, when not what the column says; ratios above 1: recsql is faster",
        f"peak MB, growth of this process and Spark's JVM ({' / '.join(columns)}): "
        + "; ".join(
            o.workload.name
            + " "
            + " / ".join(f"{o.results[c].memory / 2**20:.0f}" if c in o.results else "-" for c in columns)
            for o in outcomes
        ),
    ]
    return "\n".join(lines + [""] + notes)


def chart(outcomes: list[Outcome], path: str, columns: list[str]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no chart: matplotlib is missing (pip install -e '.[bench]')")
        return
    figure, axes = plt.subplots(figsize=(12, 5))
    width = 0.8 / len(columns)
    for i, system in enumerate(columns):
        positions = [n + (i - (len(columns) - 1) / 2) * width for n in range(len(outcomes))]
        values = [o.results[system].seconds if system in o.results else 0 for o in outcomes]
        axes.bar(positions, values, width, label=system)
    axes.set_yscale("log")
    axes.set_ylabel("seconds (log scale, median)")
    axes.set_xticks(range(len(outcomes)), [o.workload.name for o in outcomes], rotation=20)
    axes.legend()
    axes.set_title("recsql and the alternatives (missing bar: not applicable)")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"chart written to {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument("--quick", action="store_true", help="small graphs: a smoke run of a minute or two")
    sizes.add_argument("--deep", action="store_true", help="deep, thin recursions (thousands of iterations)")
    sizes.add_argument(
        "--scale",
        action="store_true",
        help="sizes past the local bound, recsql under every strategy (forced): an hour or more",
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="*", help="workload names to run (default: all)")
    parser.add_argument("--chart", help="write a PNG chart of the times to this path")
    parser.add_argument("--driver-memory", default="8g", help="Spark driver memory (local mode: all of Spark)")
    parser.add_argument("--remote", metavar="URL", help="run on this Spark Connect server (sc://host:port)")
    parser.add_argument("--master", metavar="URL", help="run on this Spark master (spark://host:port)")
    parser.add_argument(
        "--warehouse", help="recsql's warehouse (default: a temporary one; on a cluster, one every executor sees)"
    )
    parser.add_argument(
        "--conf", nargs="*", default=[], metavar="KEY=VALUE", help="Spark settings (for --master: the executors')"
    )
    parser.add_argument(
        "--strategy", choices=tuple(Strategy), default=Strategy.AUTO, help="SET recsql.strategy (default auto)"
    )
    parser.add_argument(
        "--strategies",
        nargs="+",
        choices=tuple(Strategy),
        default=[Strategy.LOCAL, Strategy.DECOMPOSED, Strategy.DISTRIBUTED, Strategy.AUTO],
        help="with --scale: the strategies recsql runs under (default: each)",
    )
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS), help="the systems to run")
    parser.add_argument(
        "--bigint",
        action="store_true",
        help="every system reads the graphs' integers as BIGINT, as a pandas frame of Python ints brings them",
    )
    parser.add_argument("--json", help="write recsql's medians (seconds) and the run conditions to this file")
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("OLD.json", "NEW.json"),
        help="print a markdown table of two --json outputs instead of running",
    )
    args = parser.parse_args()
    if args.compare:
        print(compare_medians(*args.compare, COMPARED))
        return

    every = scale_workloads() if args.scale else deep_workloads() if args.deep else workloads(args.quick)
    chosen = [w for w in every if not args.only or w.name in args.only]
    if args.scale:
        recsql_runs = {f"recsql {strategy}": strategy for strategy in args.strategies}
    else:
        recsql_runs = {"recsql": args.strategy}
    columns = [*(recsql_runs if "recsql" in args.systems else ()), *(s for s in ALTERNATIVES if s in args.systems)]
    outcomes = []
    conf = {} if args.remote else {"spark.driver.memory": args.driver_memory}  # a server's memory is its own
    conf.update(setting.split("=", 1) for setting in args.conf)
    with (
        tempfile.TemporaryDirectory(dir=args.warehouse) as warehouse,
        recsql.connect(warehouse=warehouse, conf=conf, remote=args.remote, master=args.master) as conn,
    ):
        duck = duckdb.connect()
        for workload in chosen:
            print(f"running {workload.name} ({workload.graph}) ...", flush=True)
            if args.bigint:
                workload = dataclasses.replace(workload, edges=as_bigint(workload.edges))
            outcomes.append(run_workload(workload, conn, duck, args.repeat, tuple(args.systems), recsql_runs))
            seconds = ", ".join(f"{system} {m.seconds:.3f} s" for system, m in outcomes[-1].results.items())
            print(f"  {seconds}", flush=True)
    print(table(outcomes, args.repeat, columns))
    for outcome in outcomes:
        for line in outcome.balance:
            print(f"{outcome.workload.name}, decomposed: {line}")
    if args.json:
        medians = {
            f"{o.workload.name} {name}".removesuffix(" recsql"): o.results[name].seconds
            for o in outcomes
            for name in recsql_runs
            if name in o.results
        }
        conditions = {
            "quick": args.quick,
            "repeat": args.repeat,
            "strategy": args.strategy,
            "driver memory": args.driver_memory,
            "remote": args.remote,
            "master": args.master,
            "conf": args.conf,
            "scale": args.scale,
            "deep": args.deep,
        }
        save_medians(args.json, medians, conditions)
    if args.chart:
        chart(outcomes, args.chart, columns)


if __name__ == "__main__":
    main()
