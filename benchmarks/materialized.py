"""Keeping a materialized recursive view current, against computing it again: the closure of a random DAG
(10,000 nodes, 30,000 edges by default), with each statement timed through the public API (maintenance
included) under each strategy named.

    python -m benchmarks.materialized [--nodes 10000] [--edges 30000] [--repeat 3] [--strategies auto,decomposed]

Per strategy (medians of `--repeat`, each run on fresh edges):
  REFRESH       REFRESH MATERIALIZED VIEW closure: the view computed again from its base table
  INSERT 10     INSERT INTO edge VALUES (10 new edges): the insertion maintained semi-naively
  DELETE 10     DELETE FROM edge WHERE (10 existing edges): maintained by DRed (over-delete, re-derive)
After the runs, the view is checked against its query computed afresh. Prints each median and the ratios
REFRESH / INSERT and REFRESH / DELETE, and what maintenance did (EXPLAIN ANALYZE of the last write).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time

import recsql

CLOSURE = ("WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM edge UNION "
           "SELECT tc.src, edge.dst FROM tc JOIN edge ON tc.dst = edge.src) SELECT src, dst FROM tc")


def random_dag(nodes: int, edges: int, rng: random.Random) -> set[tuple[int, int]]:
    found: set[tuple[int, int]] = set()
    while len(found) < edges:
        a, b = rng.sample(range(nodes), 2)
        found.add((min(a, b), max(a, b)))
    return found


def timed(cursor, sql: str) -> float:
    started = time.perf_counter()
    cursor.execute(sql)
    return time.perf_counter() - started


def measure(cursor, strategy: str, nodes: int, dag: set, repeat: int, rng: random.Random) -> dict[str, float]:
    cursor.execute(f"SET recsql.strategy = {strategy}")
    cursor.execute("CREATE OR REPLACE MATERIALIZED VIEW closure AS " + CLOSURE)
    times: dict[str, list[float]] = {"REFRESH": [], "INSERT 10": [], "DELETE 10": []}
    for _ in range(repeat):
        times["REFRESH"].append(timed(cursor, "REFRESH MATERIALIZED VIEW closure"))
        new = sorted(random_dag(nodes, len(dag) + 10, rng) - dag)[:10]
        while len(new) < 10:
            a, b = sorted(rng.sample(range(nodes), 2))
            if (a, b) not in dag and (a, b) not in new:
                new.append((a, b))
        dag |= set(new)
        times["INSERT 10"].append(timed(cursor, "INSERT INTO edge VALUES " + ", ".join(map(str, new))))
        gone = rng.sample(sorted(dag), 10)
        dag -= set(gone)
        condition = " OR ".join(f"(src = {a} AND dst = {b})" for a, b in gone)
        times["DELETE 10"].append(timed(cursor, f"DELETE FROM edge WHERE {condition}"))
    cursor.execute("SELECT count(*), sum(src * 10007 + dst) FROM closure")
    kept = cursor.fetchall()
    cursor.execute(f"SELECT count(*), sum(src * 10007 + dst) FROM ({CLOSURE})")
    fresh = cursor.fetchall()
    assert kept == fresh, f"view {kept} != query {fresh}"
    last = rng.sample(sorted(dag), 10)
    dag -= set(last)
    cursor.execute("EXPLAIN ANALYZE DELETE FROM edge WHERE " +
                   " OR ".join(f"(src = {a} AND dst = {b})" for a, b in last))
    print("\n".join(f"    {line}" for (line,) in cursor.fetchall()))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--edges", type=int, default=30_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--strategies", default="auto,decomposed,distributed")
    args = parser.parse_args()
    rng = random.Random(7)
    dag = random_dag(args.nodes, args.edges, rng)
    conn = recsql.connect(warehouse=tempfile.mkdtemp(prefix="recsql-materialized-"),
                          conf={"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false"})
    cursor = conn.cursor()
    cursor.execute("CREATE TABLE edge (src INT, dst INT)")
    cursor.executemany("INSERT INTO edge VALUES (?, ?)", sorted(dag))
    conn.spark_session  # Spark started (and its start's work done) before anything is timed
    cursor.execute(f"SELECT count(*) FROM ({CLOSURE})")
    print(f"DAG: {args.nodes:,} nodes, {args.edges:,} edges; closure {cursor.fetchall()[0][0]:,} rows")
    for strategy in args.strategies.split(","):
        print(f"recsql.strategy = {strategy}")
        medians = measure(cursor, strategy, args.nodes, dag, args.repeat, rng)
        for name, seconds in medians.items():
            print(f"  {name:<10} {seconds:8.3f} s")
        print(f"  REFRESH / INSERT 10 = {medians['REFRESH'] / medians['INSERT 10']:.1f}x, "
              f"REFRESH / DELETE 10 = {medians['REFRESH'] / medians['DELETE 10']:.1f}x")
    conn.close()


if __name__ == "__main__":
    main()
