"""The benchmark workloads at their small size (`python -m benchmarks.run --quick`), under every strategy,
against DuckDB's answer on the same graph: whatever the planner or the user chooses, the answer is the same.
"""

from __future__ import annotations

import duckdb
import pytest

from benchmarks.workloads import workloads

STRATEGIES = ("local", "decomposed", "distributed", "auto")
WORKLOADS = {workload.name: workload for workload in workloads(quick=True)}


@pytest.fixture(scope="module")
def graphs():
    """Each workload's graph, built once."""
    return {name: workload.edges() for name, workload in WORKLOADS.items()}


@pytest.fixture(scope="module")
def expected(graphs):
    """DuckDB's answer to each workload."""
    answers = {}
    for name, workload in WORKLOADS.items():
        duck = duckdb.connect()
        duck.register("edge", graphs[name])
        answers[name] = duck.execute(workload.duckdb).fetchall()
        duck.close()
    return answers


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("name", WORKLOADS)
def test_workload_matches_duckdb(conn, cur, graphs, expected, name, strategy):
    conn.register("edge", graphs[name])
    previous = conn.session.settings.strategy
    cur.execute(f"SET recsql.strategy = {strategy}")
    try:
        cur.execute(WORKLOADS[name].recsql)
        assert cur.fetchall() == expected[name]
    finally:
        cur.execute(f"SET recsql.strategy = {previous}")
