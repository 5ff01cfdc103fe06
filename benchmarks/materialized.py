"""Keeping a materialized recursive view current, against computing it again, with each statement timed
through the public API (maintenance included) under each strategy named. Three views (`--views`):

  closure    the transitive closure of a random DAG (10,000 nodes, 30,000 edges by default): set DRed
  shortest   shortest distances from node 0 over a random weighted graph (as many nodes and edges), min()
  headcount  each manager's head count in a random reporting tree (as many nodes), count()

    python -m benchmarks.materialized [--views closure,shortest,headcount] [--nodes 10000] [--edges 30000]
                                      [--repeat 3] [--strategies auto,decomposed,distributed]

Per view and strategy (medians of `--repeat`, each run on fresh rows):
  REFRESH       REFRESH MATERIALIZED VIEW: the view computed again from its base table
  INSERT 10     INSERT INTO <base> VALUES (10 new rows), maintenance included
  DELETE 10     DELETE FROM <base> WHERE (10 existing rows), maintenance included
After the runs, the view is checked against its query computed afresh. Prints each median, the ratios
REFRESH / INSERT and REFRESH / DELETE, and what maintenance did (EXPLAIN ANALYZE of a last delete).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

import recsql

Row = tuple[int, ...]


@dataclass
class View:
    """A view over one base table, and how to draw rows to insert into it and rows to delete from it."""

    table: str
    columns: str  # the base table's columns, as CREATE TABLE lists them
    query: str
    initial: Callable[[random.Random], set[Row]]
    new_rows: Callable[[random.Random, set[Row]], list[Row]]  # 10 rows the table does not hold
    doomed: Callable[[random.Random, set[Row]], list[Row]]  # 10 of its rows

    def delete(self, rows: list[Row]) -> str:
        names = [column.split()[0] for column in self.columns.split(",")]
        return f"DELETE FROM {self.table} WHERE " + " OR ".join(
            "(" + " AND ".join(f"{name} = {value}" for name, value in zip(names, row)) + ")" for row in rows
        )


def random_dag(nodes: int, edges: int, rng: random.Random) -> set[Row]:
    found: set[Row] = set()
    while len(found) < edges:
        a, b = rng.sample(range(nodes), 2)
        found.add((min(a, b), max(a, b)))
    return found


def views(nodes: int, edges: int) -> dict[str, View]:
    def new_edges(rng: random.Random, held: set[Row]) -> list[Row]:
        pairs = {row[:2] for row in held}
        found: list[Row] = []
        while len(found) < 10:
            a, b = sorted(rng.sample(range(nodes), 2))
            if (a, b) not in pairs and all(row[:2] != (a, b) for row in found):
                found.append((a, b))
        return found

    def weighted(rng: random.Random) -> set[Row]:
        weights = {tuple(rng.sample(range(nodes), 2)): rng.randrange(1, 100) for _ in range(edges)}
        return {(a, b, w) for (a, b), w in weights.items()}

    def hires(rng: random.Random, held: set[Row]) -> list[Row]:
        first = max(emp for _, emp in held) + 1
        return [(rng.randrange(first), first + i) for i in range(10)]

    def leaves(rng: random.Random, held: set[Row]) -> list[Row]:
        managers = {mgr for mgr, _ in held}
        return rng.sample(sorted(row for row in held if row[1] not in managers), 10)

    return {
        "closure": View(
            "edge",
            "src INT, dst INT",
            "WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM edge UNION SELECT tc.src, edge.dst "
            "FROM tc JOIN edge ON tc.dst = edge.src) SELECT src, dst FROM tc",
            lambda rng: random_dag(nodes, edges, rng),
            new_edges,
            lambda rng, held: rng.sample(sorted(held), 10),
        ),
        "shortest": View(
            "road",
            "src INT, dst INT, w INT",
            "WITH RECURSIVE sp(node, min() AS d) AS (SELECT 0, 0) UNION (SELECT road.dst, sp.d + road.w "
            "FROM sp, road WHERE sp.node = road.src) SELECT node, d FROM sp",
            weighted,
            lambda rng, held: [row + (rng.randrange(1, 100),) for row in new_edges(rng, held)],
            lambda rng, held: rng.sample(sorted(held), 10),
        ),
        "headcount": View(
            "report",
            "mgr INT, emp INT",
            "WITH RECURSIVE dept(mgr, count() AS n) AS (SELECT emp, 1 FROM report) UNION "
            "(SELECT report.mgr, dept.n FROM dept, report WHERE dept.mgr = report.emp) "
            "SELECT mgr, n FROM dept",
            lambda rng: {(rng.randrange(i // 2, i), i) for i in range(1, nodes)},
            hires,
            leaves,
        ),
    }


def timed(cursor, sql: str) -> float:
    started = time.perf_counter()
    cursor.execute(sql)
    return time.perf_counter() - started


def measure(
    cursor, name: str, view: View, strategy: str, held: set[Row], repeat: int, rng: random.Random
) -> dict[str, float]:
    cursor.execute(f"SET recsql.strategy = {strategy}")
    cursor.execute(f"CREATE OR REPLACE MATERIALIZED VIEW {name} AS {view.query}")
    times: dict[str, list[float]] = {"REFRESH": [], "INSERT 10": [], "DELETE 10": []}
    for _ in range(repeat):
        times["REFRESH"].append(timed(cursor, f"REFRESH MATERIALIZED VIEW {name}"))
        new = view.new_rows(rng, held)
        held |= set(new)
        times["INSERT 10"].append(timed(cursor, f"INSERT INTO {view.table} VALUES " + ", ".join(map(str, new))))
        gone = view.doomed(rng, held)
        held -= set(gone)
        times["DELETE 10"].append(timed(cursor, view.delete(gone)))
    cursor.execute(f"SELECT * FROM {name}")
    kept = sorted(cursor.fetchall())
    cursor.execute(view.query)
    assert kept == sorted(cursor.fetchall()), f"{name} differs from its query"
    last = view.doomed(rng, held)
    held -= set(last)
    cursor.execute(f"EXPLAIN ANALYZE {view.delete(last)}")
    print("\n".join(f"    {line}" for (line,) in cursor.fetchall()))
    return {step: statistics.median(values) for step, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--views", default="closure")
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--edges", type=int, default=30_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--strategies", default="auto,decomposed,distributed")
    args = parser.parse_args()
    rng = random.Random(7)
    conn = recsql.connect(
        warehouse=tempfile.mkdtemp(prefix="recsql-materialized-"),
        conf={"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false"},
    )
    cursor = conn.cursor()
    _ = conn.spark_session  # Spark started (and its start's work done) before anything is timed
    for name, view in views(args.nodes, args.edges).items():
        if name not in args.views.split(","):
            continue
        held = view.initial(rng)
        cursor.execute(f"CREATE TABLE {view.table} ({view.columns})")
        cursor.executemany(f"INSERT INTO {view.table} VALUES ({', '.join('?' * len(next(iter(held))))})", sorted(held))
        cursor.execute(f"SELECT count(*) FROM ({view.query})")
        print(f"{name}: {view.table} {len(held):,} rows; the view {cursor.fetchall()[0][0]:,} rows")
        for strategy in args.strategies.split(","):
            print(f"  recsql.strategy = {strategy}")
            medians = measure(cursor, name, view, strategy, held, args.repeat, rng)
            for step, seconds in medians.items():
                print(f"    {step:<10} {seconds:8.3f} s")
            print(
                f"    REFRESH / INSERT 10 = {medians['REFRESH'] / medians['INSERT 10']:.1f}x, "
                f"REFRESH / DELETE 10 = {medians['REFRESH'] / medians['DELETE 10']:.1f}x"
            )
    conn.close()


if __name__ == "__main__":
    main()
