"""Each benchmark workload as recsql's SQL and as its Datalog twin (benchmarks/workloads.py, DATALOG_TWINS):
the same plan, the same answer, the same time.

    python -m benchmarks.datalog [--quick | --scale] [--strategies local decomposed distributed]
                                 [--repeat 5] [--only NAME ...] [--master local[2]] [--driver-memory 8g]
                                 [--conf KEY=VALUE ...] [--bigint] [--warehouse DIR]

For every workload with a twin and every strategy forced (SET recsql.strategy), it checks that the two plan
alike (recsql.planner.shape: the same strata, strategies, rules, join orders and delta variants, whatever
the names) and answer alike, then times them alternating (which goes first turns each round) in one process
on the same data and prints the medians and the ratio datalog / sql. The program text is parsed and planned
on every run, as the query's is.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time

from sqlglot import exp

import recsql
from benchmarks.run import as_bigint
from benchmarks.timing import report
from benchmarks.workloads import Workload, scale_workloads, workloads
from recsql.planner.shape import shape
from translator import dialect
from translator.dialect import DatalogQuery


def plan_of(conn: recsql.Connection, statement: exp.Expr) -> tuple:
    return shape(conn.session.plan(statement))


def compare(conn: recsql.Connection, workload: Workload, strategy: str, repeat: int) -> tuple[str, str]:
    """(label, result line) of one workload under one strategy; raises if the plans or answers differ."""
    assert workload.datalog is not None
    cursor = conn.cursor()
    cursor.execute(f"SET recsql.strategy = {strategy}")
    program = DatalogQuery(this=exp.Literal.string(workload.datalog))
    if plan_of(conn, dialect.parse_one(workload.recsql)) != plan_of(conn, program):
        raise AssertionError(f"{workload.name}, {strategy}: the Datalog program plans otherwise than its SQL twin")
    runs = {
        "sql": lambda: (cursor.execute(workload.recsql), cursor.fetchall())[1],
        "datalog": lambda: (cursor.execute_datalog(workload.datalog), cursor.fetchall())[1],
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    answers = {}
    for attempt in range(repeat + 1):  # the first round warms up; the order turns each round
        for name, run in sorted(runs.items(), reverse=attempt % 2 == 1):
            gc.collect()
            started = time.perf_counter()
            answers[name] = run()
            if attempt:
                times[name].append(time.perf_counter() - started)
    if answers["sql"] != answers["datalog"]:
        raise AssertionError(f"{workload.name}, {strategy}: the answers differ: {answers}")
    medians = {name: statistics.median(values) for name, values in times.items()}
    ratio = medians["datalog"] / medians["sql"]
    line = f"sql {medians['sql']:.3f} s, datalog {medians['datalog']:.3f} s: {ratio:.2f}x, answer {answers['sql'][0]}"
    return f"{workload.name}, {strategy}", line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument("--quick", action="store_true", help="small graphs")
    sizes.add_argument("--scale", action="store_true", help="the sizes past the local bound")
    parser.add_argument("--strategies", nargs="+", default=["local", "decomposed", "distributed"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", nargs="*", help="workload names to run (default: all with a twin)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="8g")
    parser.add_argument("--conf", nargs="*", default=[], metavar="KEY=VALUE", help="more Spark settings")
    parser.add_argument("--bigint", action="store_true", help="the graphs' integers as BIGINT (pandas int64)")
    parser.add_argument("--warehouse", help="recsql's warehouse (on a cluster: a directory every executor sees)")
    args = parser.parse_args()
    every = scale_workloads() if args.scale else workloads(args.quick)
    chosen = [w for w in every if w.datalog is not None and (not args.only or w.name in args.only)]
    conf = {"spark.driver.memory": args.driver_memory, "spark.ui.enabled": "false"}
    conf.update(setting.split("=", 1) for setting in args.conf)
    rows = []
    with (
        tempfile.TemporaryDirectory(dir=args.warehouse) as warehouse,
        recsql.connect(warehouse=warehouse, conf=conf, master=args.master) as conn,
    ):
        for workload in chosen:
            conn.register("edge", as_bigint(workload.edges)() if args.bigint else workload.edges())
            for strategy in args.strategies:
                rows.append(compare(conn, workload, strategy, args.repeat))
                print(f"  {rows[-1][0]}: {rows[-1][1]}", flush=True)
    print(report(f"Datalog twin / SQL, medians of {args.repeat} alternating runs, {args.master}", rows))


if __name__ == "__main__":
    main()
