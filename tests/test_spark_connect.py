"""recsql over Spark Connect: a server started from pyspark's own sbin/start-connect-server.sh, whose
Python workers have recsql's dependencies but not recsql (the client adds its code to the session).

A process holds either a Spark driver or Spark Connect sessions, and the suite's is a driver: clients of
the server run in processes of their own. Cases of the recursion suites run over the server unchanged
(conftest.py connects remotely when RECSQL_TEST_REMOTE is set), against the same references."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from reference import transitive_closure
from spark_processes import free_port, spark_home, wait_for_port, worker_python

import recsql

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parent.parent
DRIVER = Path(__file__).resolve().parent / "connect_session.py"
FRAMES = Path(__file__).resolve().parent / "connect_frames.py"
RECURSIONS = (  # one query of each kind the engine runs differently: sets, bags, strings, a LIMIT, strata, parameters
    "tc_union_cyclic",
    "tc_union_all_tree",
    "counter_50",
    "path_strings",
    "tree_depth_order_limit",
    "same_generation",
    "two_recursive_ctes_joined",
    "not_in_over_cte",
    "param_string_in_both_branches",
)
AGGREGATES = (  # each aggregate, an error at a limit, non-linear and mutual recursion
    "test_all_pairs_shortest_paths_min",
    "test_connected_components_min_label",
    "test_bill_of_materials_longest_delivery_max",
    "test_path_counts_all_pairs_dag_count",
    "test_bonus_rollup_sum_doubles",
    "test_cyclic_count_of_paths_hits_iteration_limit",
    "test_nonlinear_transitive_closure",
    "test_mutual_recursion_even_odd",
)
CASES = (
    *(f"tests/test_recursion_vs_duckdb.py::test_recursive_query_matches_duckdb[spark-{name}]" for name in RECURSIONS),
    *(f"tests/test_aggregates_in_recursion.py::{name}[distributed]" for name in AGGREGATES),
    "tests/test_arrow_frames.py",
)
SERVER_CONF = {
    "spark.connect.grpc.binding.address": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The URL of a Spark Connect server on local[2], stopped after the module's tests."""
    directory = tmp_path_factory.mktemp("connect")
    port = free_port()
    environment = {
        **os.environ,
        "SPARK_LOG_DIR": str(directory),
        "SPARK_PID_DIR": str(directory),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_IDENT_STRING": f"recsql-test-{port}",
        "PYSPARK_PYTHON": worker_python(directory / "python"),
    }
    conf = [
        argument
        for key, value in {**SERVER_CONF, "spark.connect.grpc.binding.port": str(port)}.items()
        for argument in ("--conf", f"{key}={value}")
    ]
    sbin = spark_home() / "sbin"
    subprocess.run(
        [str(sbin / "start-connect-server.sh"), "--master", "local[2]", *conf],
        env=environment,
        check=True,
        capture_output=True,
        timeout=120,
    )
    try:
        wait_for_port(port, next(directory.glob("*.out"), directory / "server.out"))
        yield f"sc://127.0.0.1:{port}", directory
    finally:
        subprocess.run([str(sbin / "stop-connect-server.sh")], env=environment, capture_output=True, timeout=120)


def client_environment(url: str) -> dict[str, str]:
    return {**os.environ, "RECSQL_TEST_REMOTE": url, "PYTHONPATH": str(ROOT)}


def test_the_recursion_suites_run_over_spark_connect(server):
    """Cases of the recursion suites, run over the Connect server against their references: a query of each
    kind (decomposed, and distributed too where it has a pivot: the `spark` variant), each aggregate
    (distributed), and the Arrow frames an answer arrives in (the suites run whole on the classic session;
    what runs in this process under `local` runs the same whichever Spark the connection has)."""
    url, _ = server
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider", *CASES],
        cwd=ROOT,
        env=client_environment(url),
        capture_output=True,
        text=True,
        timeout=1200,
    )
    summary = finished.stdout.strip().splitlines()[-1] if finished.stdout.strip() else ""
    assert finished.returncode == 0, finished.stdout[-6000:] + finished.stderr[-2000:]
    passed = re.search(r"(\d+) passed", summary)
    expected = len(RECURSIONS) + len(AGGREGATES) + 2  # the two tests of the Arrow frames
    assert passed and int(passed.group(1)) == expected and "failed" not in summary and "skipped" not in summary, summary


def client_result(script: Path, url: str, *arguments: str) -> tuple[dict, str]:
    """Run a client script of the server: the JSON it prints after `@@ `, and what it wrote to stderr."""
    finished = subprocess.run(
        [sys.executable, str(script), url, *arguments],
        env=client_environment(url),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert finished.returncode == 0, finished.stderr[-4000:]
    result = json.loads(next(line[3:] for line in finished.stdout.splitlines() if line.startswith("@@ ")))
    return result, finished.stderr


def test_spark_names_errors_and_cancelling_over_spark_connect(server):
    url, directory = server
    result, stderr = client_result(DRIVER, url, str(directory / "warehouse"), str(directory / "edges.parquet"))
    view = sorted(transitive_closure([(1, 2), (2, 3), (3, 1), (5, 6)]))
    path_table = sorted(transitive_closure([(10, 11), (11, 12)]))
    for strategy in ("local", "decomposed", "distributed"):
        assert [tuple(row) for row in result["view"][strategy]] == view, strategy
        assert [tuple(row) for row in result["path table"][strategy]] == path_table, strategy
        assert f"semi-naive fixpoint, {strategy}" in result["explain"][strategy], result["explain"][strategy]
    assert result["reached at"] == "127.0.0.1"  # the server's tasks registered with the client
    assert [tuple(row) for row in result["through the barrier"]] == view
    assert "spark.executor.memory" in result["refused"] and "when it starts" in result["refused"]
    assert result["unknown"][0] == "ProgrammingError" and "no_such_table" in result["unknown"][1]
    assert result["cancelled"][0] == "QueryCancelled", result["cancelled"]
    assert result["after cancel"] == 4
    written = sorted({(a, b) for a, b in view if a != b} | {(10, 11), (11, 12)})
    assert [tuple(row) for row in result["written"]] == written
    assert [tuple(row) for row in result["registered"]] == sorted(transitive_closure([(0, 1), (1, 2), (2, 3)]))
    assert stderr == "", stderr[-2000:]


def test_a_users_connect_session_adopted_with_answers_as_its_dataframes(server, tmp_path):
    url, _ = server
    result, _ = client_result(FRAMES, url, str(tmp_path), f"sc://127.0.0.1:{free_port()}")
    closure = sorted(transitive_closure([(1, 2), (2, 3), (3, 1), (5, 6)]))
    for strategy in ("local", "decomposed", "distributed"):
        assert [tuple(row) for row in result["written"][strategy]] == closure, strategy
    assert [tuple(row) for row in result["fetched"]] == closure
    assert result["query error"][0] == "ProgrammingError" and "no_such_table" in result["query error"][1]
    assert result["unreachable"][0] == "OperationalError", result["unreachable"]
    assert result["stopped"] == ["OperationalError", "the Spark session given to connect() is stopped"]
    assert result["stopped since"][0] == "OperationalError" and "is stopped" in result["stopped since"][1]
    assert result["after errors"] == 3


def test_the_shell_runs_over_spark_connect(server):
    url, _ = server
    finished = subprocess.run(
        [
            "recsql",
            "--remote",
            url,
            "--format",
            "csv",
            "-c",
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION SELECT i + 1 FROM n WHERE i < 4) SELECT sum(i) AS total FROM n",
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (finished.returncode, finished.stdout.split(), finished.stderr) == (0, ["total", "10"], "")


def test_a_server_that_is_not_there_is_reported_at_once():
    with pytest.raises(recsql.OperationalError, match=r"cannot reach Spark Connect at sc://127\.0\.0\.1:\d+"):
        recsql.connect(remote=f"sc://127.0.0.1:{free_port()}")
    with pytest.raises(recsql.OperationalError, match="bad Spark Connect URL"):
        recsql.connect(remote="http://127.0.0.1:15002")


@pytest.mark.spark
def test_a_process_with_a_spark_driver_cannot_open_a_connect_session(conn, server):
    url, _ = server
    _ = conn.spark_session  # the suite's Spark driver runs
    with pytest.raises(recsql.OperationalError, match="already runs a Spark driver"):
        recsql.connect(remote=url)
