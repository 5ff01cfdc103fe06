"""A driver process on a standalone Spark cluster, for tests/test_cluster.py.

    python tests/cluster_session.py MASTER WORKER_PYTHON WAREHOUSE [kill]

Connects to MASTER with executors running WORKER_PYTHON, registers EDGES and WEIGHTED, and under each
strategy runs a transitive closure and single-source shortest paths; prints `@@ ` and a JSON line per
strategy: {"strategy", "closure": rows, "distances": rows, "explain": EXPLAIN's text}.

With `kill`: for each of KILLS (a kind of fixpoint, and whether a checkpoint directory is set), runs it
and kills one executor (SIGKILL) while it runs, once the cluster has given the driver both executors
again; prints `@@ {"kind", "checkpoints", "killed": [pid], "count": the answer's size, "analyze": EXPLAIN
ANALYZE's lines}` for each. Over a chain of LONG_CHAIN nodes, the one-job forms: decomposed (the fewest
hops between the nodes of a chain, a min() per pair; one Spark job, no iterations seen from here) killed
once a task of the job has run for TASK_SECONDS, distributed (the closure of a chain, its tasks exchanging
candidates) killed at iteration KILLED_AT; the distributed loop (the closure as a mutual recursion, a
Spark job per relation and iteration) over a chain of LOOP_CHAIN nodes, killed at iteration KILLED_AT.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's recsql, wherever run from

import recsql
from benchmarks.cluster import DRIVER_CONF

EDGES = [(1, 2), (2, 3), (3, 1), (3, 4), (4, 5), (7, 8), (8, 9), (9, 7)]
WEIGHTED = [(1, 2, 4), (1, 3, 1), (3, 2, 1), (2, 4, 5), (3, 4, 9), (4, 5, 2), (5, 1, 1), (6, 7, 1)]
CLOSURE = """WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM edge
UNION SELECT tc.src, edge.dst FROM tc JOIN edge ON tc.dst = edge.src) SELECT src, dst FROM tc"""
DISTANCES = """WITH RECURSIVE sp(node, min() AS d) AS (SELECT 1, 0
UNION SELECT w.dst, sp.d + w.w FROM sp JOIN weighted w ON sp.node = w.src) SELECT node, d FROM sp"""
MUTUAL = """WITH RECURSIVE odd(src, dst) AS (SELECT src, dst FROM edge
UNION SELECT e.src, x.dst FROM edge e JOIN even x ON e.dst = x.src),
even(src, dst) AS (SELECT e.src, o.dst FROM edge e JOIN odd o ON e.dst = o.src)
SELECT src, dst FROM odd UNION SELECT src, dst FROM even"""  # the closure: paths of odd and of even length
HOPS = """WITH RECURSIVE hops(src, dst, min() AS d) AS (SELECT src, dst, 1 FROM edge
UNION SELECT hops.src, edge.dst, hops.d + 1 FROM hops JOIN edge ON hops.dst = edge.src) SELECT src, dst, d FROM hops"""
STRATEGIES = ("local", "decomposed", "distributed")
LONG_CHAIN = 600  # nodes: each task of the one-job forms iterates for a second or more
LOOP_CHAIN = 13  # nodes: the mutual recursion's iterations add an edge to the paths, 12 of them
TASK_SECONDS = 0.5
KILLED_AT = 3
KINDS = {  # kind -> (strategy, query)
    "decomposed": ("decomposed", HOPS),
    "distributed one job": ("distributed", CLOSURE),
    "distributed loop": ("distributed", MUTUAL),
}
KILLS = (("decomposed", False), ("distributed one job", False), ("distributed loop", False), ("distributed loop", True))
EXECUTORS = 2


def chain(nodes: int) -> list[tuple[int, int]]:
    """A path of `nodes` nodes, with a shortcut from every third node."""
    return [(i, i + 1) for i in range(nodes - 1)] + [(i, i + 2) for i in range(0, nodes - 1, 3)]


def killed_chain(kind: str) -> list[tuple[int, int]]:
    return chain(LOOP_CHAIN if kind == "distributed loop" else LONG_CHAIN)


def kill_one_executor(killed: list[int]) -> None:
    if not killed:
        executors = subprocess.run(
            ["pgrep", "-f", "CoarseGrainedExecutorBackend"], capture_output=True, text=True
        ).stdout.split()
        os.kill(int(executors[0]), signal.SIGKILL)
        killed.append(int(executors[0]))


def kill_during_a_long_task(spark, killed: list[int], done: threading.Event) -> None:
    """Kill an executor once some stage has been running for TASK_SECONDS with tasks not done (its count of
    active tasks can lag behind by seconds: the status tracker learns of a task's start late)."""
    tracker = spark.sparkContext.statusTracker()
    running_since: dict[int, float] = {}
    while not done.is_set() and not killed:
        for stage in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage)
            if info is not None and info.numCompletedTasks < info.numTasks:
                since = running_since.setdefault(stage, time.monotonic())
                if time.monotonic() - since >= TASK_SECONDS:
                    kill_one_executor(killed)
        time.sleep(0.1)


def wait_for_executors(spark, seconds: float = 120.0) -> None:
    """Until the cluster has given the driver EXECUTORS executors (a killed one is started again)."""
    deadline = time.monotonic() + seconds
    while spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() < EXECUTORS + 1:  # and the driver's
        if time.monotonic() > deadline:
            raise TimeoutError(f"fewer than {EXECUTORS} executors after {seconds} s")
        time.sleep(0.2)


def kill_an_executor(conn, cursor, kind: str, checkpoints: bool, directory: Path) -> None:
    """The fixpoint of `kind`, losing an executor while it runs."""
    spark = conn.spark_session
    if checkpoints:
        spark.sparkContext.setCheckpointDir(str(directory))
    wait_for_executors(spark)
    strategy, query = KINDS[kind]
    edges = killed_chain(kind)
    conn.register("chain", pa.table({"src": [a for a, _ in edges], "dst": [b for _, b in edges]}))
    cursor.execute(f"SET recsql.strategy = {strategy}")
    killed: list[int] = []
    done = threading.Event()
    if kind != "decomposed":  # the one-job distributed form reports its iterations as its tasks run them
        conn.progress = lambda event: kill_one_executor(killed) if event.iteration == KILLED_AT else None
    else:
        threading.Thread(target=kill_during_a_long_task, args=(conn.spark_session, killed, done)).start()
    try:
        cursor.execute("EXPLAIN ANALYZE " + query.replace("edge", "chain"))
        analyze = [row[0] for row in cursor.fetchall()]
    finally:
        done.set()
        conn.progress = None
    count = next(int(line.split(": ")[1]) for line in analyze if line.startswith("answer rows: "))
    outcome = {"kind": kind, "checkpoints": checkpoints, "killed": killed, "count": count, "analyze": analyze}
    print("@@ " + json.dumps(outcome), flush=True)


def main(master: str, worker_python: str, warehouse: str, mode: str = "strategies") -> None:
    conf = {
        **DRIVER_CONF,
        "spark.pyspark.python": worker_python,
        "spark.executor.memory": "512m",
        "spark.executor.cores": "1",
        "spark.cores.max": "2",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
    }
    conn = recsql.connect(master=master, conf=conf, warehouse=warehouse)
    if mode == "kill":
        for kind, checkpoints in KILLS:
            kill_an_executor(conn, conn.cursor(), kind, checkpoints, Path(warehouse).parent / "checkpoints")
        return
    conn.register("edge", pa.table({"src": [a for a, _ in EDGES], "dst": [b for _, b in EDGES]}))
    conn.register(
        "weighted",
        pa.table(
            {"src": [a for a, _, _ in WEIGHTED], "dst": [b for _, b, _ in WEIGHTED], "w": [w for _, _, w in WEIGHTED]}
        ),
    )
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
