"""recsql on a standalone Spark cluster (a master and two workers started from pyspark's own launcher),
whose executors' Python has recsql's dependencies but not recsql: the driver ships its code.

The driver runs in a process of its own (tests/cluster_session.py): a process holds one SparkContext,
and the suite's is local."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import cluster_session
import pytest
from reference import assert_same_rows, single_source_shortest, transitive_closure
from spark_processes import free_port, spark_home, wait_for_port, worker_python

pytestmark = pytest.mark.cluster

DRIVER = Path(__file__).resolve().parent / "cluster_session.py"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cluster")
    spark_class = str(spark_home() / "bin" / "spark-class")
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    environment = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(directory)}
    log = open(directory / "cluster.log", "w")  # noqa: SIM115 - the processes write it until they stop
    processes = [
        subprocess.Popen(
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(free_port()),
            ],
            env=environment,
            stdout=log,
            stderr=log,
        )
    ]
    try:
        wait_for_port(port, directory / "cluster.log")
        for n in range(2):
            processes.append(
                subprocess.Popen(
                    [
                        spark_class,
                        "org.apache.spark.deploy.worker.Worker",
                        master_url,
                        "--host",
                        "127.0.0.1",
                        "--cores",
                        "1",
                        "--memory",
                        "768m",
                        "--webui-port",
                        str(free_port()),
                        "--work-dir",
                        str(directory / f"worker{n}"),
                    ],
                    env=environment,
                    stdout=log,
                    stderr=log,
                )
            )
        yield master_url, worker_python(directory / "python"), directory
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            process.wait(timeout=60)
        log.close()


def test_every_strategy_on_a_cluster_whose_workers_lack_recsql(cluster):
    master, python, directory = cluster
    finished = subprocess.run(
        [sys.executable, str(DRIVER), master, python, str(directory / "warehouse")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert finished.returncode == 0, finished.stderr[-4000:]
    outcomes = [json.loads(line[3:]) for line in finished.stdout.splitlines() if line.startswith("@@ ")]
    assert [o["strategy"] for o in outcomes] == list(cluster_session.STRATEGIES)
    closure = sorted(transitive_closure(cluster_session.EDGES))
    distances = sorted(single_source_shortest(cluster_session.WEIGHTED, 1).items())
    for outcome in outcomes:
        strategy = outcome["strategy"]
        assert_same_rows([tuple(r) for r in outcome["closure"]], closure, context=strategy)
        assert_same_rows([tuple(r) for r in outcome["distances"]], distances, context=strategy)
        assert f"semi-naive fixpoint, {strategy}" in outcome["closure explain"], outcome["closure explain"]


@pytest.fixture(scope="module")
def executor_losses(cluster):
    """What the driver saw of each fixpoint of cluster_session.KILLS losing an executor: one driver runs them
    all, one after the other, each once the cluster has both executors again."""
    master, python, directory = cluster
    finished = subprocess.run(
        [sys.executable, str(DRIVER), master, python, str(directory / "warehouse"), "kill"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert finished.returncode == 0, finished.stderr[-4000:]
    outcomes = [json.loads(line[3:]) for line in finished.stdout.splitlines() if line.startswith("@@ ")]
    return {(outcome["strategy"], outcome["checkpoints"]): outcome for outcome in outcomes}


@pytest.mark.parametrize("strategy, checkpoints", cluster_session.KILLS)
def test_a_fixpoint_survives_losing_an_executor(executor_losses, strategy, checkpoints):
    """An executor killed while a fixpoint runs costs time, not the answer. With a checkpoint directory,
    the distributed fixpoint's iterations are kept in files and it goes on; without one, the iterations
    the executor held in memory are gone and the evaluation starts again. A decomposed part is one task,
    which Spark runs again elsewhere."""
    outcome = executor_losses[(strategy, checkpoints)]
    assert len(outcome["killed"]) == 1
    edges = cluster_session.CHAIN if strategy == "distributed" else cluster_session.chain(cluster_session.LONG_CHAIN)
    assert outcome["count"] == len(transitive_closure(edges)), outcome["analyze"]
    assert any(f"semi-naive fixpoint, {strategy}" in line for line in outcome["analyze"]), outcome["analyze"]
    if strategy == "distributed":  # a decomposed part is run again by Spark, whichever executor held what
        restarted = any(line.startswith("started again") for line in outcome["analyze"])
        assert restarted == (not checkpoints), outcome["analyze"]
