"""recsql on a standalone Spark cluster (a master and two workers started from pyspark's own launcher, each
worker with a private /tmp, benchmarks/cluster.py), whose executors' Python has recsql's dependencies but
not recsql: the driver ships its code.

The driver runs in a process of its own (tests/cluster_session.py): a process holds one SparkContext,
and the suite's is local."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import cluster_session
import pytest
from reference import assert_same_rows, single_source_shortest, transitive_closure
from spark_processes import worker_python

from benchmarks.cluster import standalone_cluster

pytestmark = pytest.mark.cluster

DRIVER = Path(__file__).resolve().parent / "cluster_session.py"


SHARED = "/var/tmp"  # seen by every process: the workers' /tmp is their own


@pytest.fixture(scope="module")
def cluster():
    """A master and two one-core workers, each worker with a private /tmp; the workers' Python lacks
    recsql, the warehouse is on a path every process sees."""
    directory = Path(tempfile.mkdtemp(prefix="recsql-cluster-", dir=SHARED))
    try:
        with standalone_cluster(directory) as master_url:
            yield master_url, worker_python(directory / "python"), directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


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
    return {(outcome["kind"], outcome["checkpoints"]): outcome for outcome in outcomes}


@pytest.mark.parametrize("kind, checkpoints", cluster_session.KILLS)
def test_a_fixpoint_survives_losing_an_executor(executor_losses, kind, checkpoints):
    """An executor killed while a fixpoint runs costs time, not the answer. A one-job form's stage is run
    again by Spark (a decomposed part alone; the distributed tasks all together, a barrier stage). With
    a checkpoint directory, the distributed loop's iterations are kept in files and it goes on; without
    one, the iterations the executor held in memory are gone and the evaluation starts again."""
    outcome = executor_losses[(kind, checkpoints)]
    assert len(outcome["killed"]) == 1
    assert outcome["count"] == len(transitive_closure(cluster_session.killed_chain(kind))), outcome["analyze"]
    strategy, _ = cluster_session.KINDS[kind]
    assert any(f"semi-naive fixpoint, {strategy}" in line for line in outcome["analyze"]), outcome["analyze"]
    if kind == "distributed loop":
        restarted = any(line.startswith("started again") for line in outcome["analyze"])
        assert restarted == (not checkpoints), outcome["analyze"]
