"""A driver process on a standalone Spark cluster, for tests/test_cluster.py.

    python tests/cluster_session.py MASTER WORKER_PYTHON WAREHOUSE [kill]

Connects to MASTER with executors running WORKER_PYTHON, registers EDGES and WEIGHTED, and under each
strategy runs a transitive closure and single-source shortest paths; prints `@@ ` and a JSON line per
strategy: {"strategy", "closure": rows, "distances": rows, "explain": EXPLAIN's text}.

With `kill`: with a checkpoint directory, runs the closure of CHAIN distributed and kills one executor
(SIGKILL) at iteration KILLED_AT; prints `@@ {"killed": pid, "count": the closure's size}`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's recsql, wherever run from

import recsql  # noqa: E402

EDGES = [(1, 2), (2, 3), (3, 1), (3, 4), (4, 5), (7, 8), (8, 9), (9, 7)]
WEIGHTED = [(1, 2, 4), (1, 3, 1), (3, 2, 1), (2, 4, 5), (3, 4, 9), (4, 5, 2), (5, 1, 1), (6, 7, 1)]
CLOSURE = """WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM edge
UNION SELECT tc.src, edge.dst FROM tc JOIN edge ON tc.dst = edge.src) SELECT src, dst FROM tc"""
DISTANCES = """WITH RECURSIVE sp(node, min() AS d) AS (SELECT 1, 0
UNION SELECT w.dst, sp.d + w.w FROM sp JOIN weighted w ON sp.node = w.src) SELECT node, d FROM sp"""
STRATEGIES = ("local", "decomposed", "distributed")
CHAIN = [(i, i + 1) for i in range(60)] + [(i, i + 2) for i in range(0, 60, 3)]  # 60 iterations
KILLED_AT = 10


def kill_an_executor(conn, cursor) -> None:
    """The closure of CHAIN, distributed, losing an executor at iteration KILLED_AT."""
    conn.register("chain", pa.table({"src": [a for a, _ in CHAIN], "dst": [b for _, b in CHAIN]}))
    cursor.execute("SET recsql.strategy = distributed")
    killed = []

    def progress(event) -> None:
        if event.iteration == KILLED_AT and not killed:
            executors = subprocess.run(["pgrep", "-f", "CoarseGrainedExecutorBackend"], capture_output=True,
                                       text=True).stdout.split()
            os.kill(int(executors[0]), signal.SIGKILL)
            killed.append(int(executors[0]))

    conn.progress = progress
    cursor.execute(CLOSURE.replace("edge", "chain").replace("SELECT src, dst FROM tc", "SELECT count(*) FROM tc"))
    print("@@ " + json.dumps({"killed": killed, "count": cursor.fetchall()[0][0]}), flush=True)


def main(master: str, worker_python: str, warehouse: str, mode: str = "strategies") -> None:
    conf = {
        "spark.pyspark.python": worker_python,
        "spark.executor.memory": "512m",
        "spark.executor.cores": "1",
        "spark.cores.max": "2",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
    }
    if mode == "kill":
        conf["spark.checkpoint.dir"] = str(Path(warehouse).parent / "checkpoints")
    conn = recsql.connect(master=master, conf=conf, warehouse=warehouse)
    if mode == "kill":
        kill_an_executor(conn, conn.cursor())
        return
    conn.register("edge", pa.table({"src": [a for a, _ in EDGES], "dst": [b for _, b in EDGES]}))
    conn.register("weighted", pa.table({"src": [a for a, _, _ in WEIGHTED], "dst": [b for _, b, _ in WEIGHTED],
                                        "w": [w for _, _, w in WEIGHTED]}))
    cursor = conn.cursor()
    for strategy in STRATEGIES:
        cursor.execute(f"SET recsql.strategy = {strategy}")
        outcome = {"strategy": strategy}
        for key, query in (("closure", CLOSURE), ("distances", DISTANCES)):
            cursor.execute(query)
            outcome[key] = [list(row) for row in cursor.fetchall()]
            cursor.execute("EXPLAIN " + query)
            outcome[key + " explain"] = "\n".join(row[0] for row in cursor.fetchall())
        print("@@ " + json.dumps(outcome), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
