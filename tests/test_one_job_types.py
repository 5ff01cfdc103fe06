"""The one-job forms (decomposed, and distributed as one job) where Spark widens a column while iterating: a
literal anchor (`SELECT 0, 0`, INT) over BIGINT data, as a pandas or Python-built table brings it. Each task
casts each iteration to the types Spark's evaluation has in that iteration, so such a recursion runs as one
Spark job, as one whose types never change does, with the loop's values and types."""

from __future__ import annotations

import random

import networkx as nx
import pyarrow as pa
import pytest
from spark_jobs import spark_jobs
from strategies import set_strategy

pytestmark = pytest.mark.spark

SHORTEST = (  # single source: the value moves (the distributed form's one job)
    "WITH RECURSIVE sp(node, min() AS d) AS (SELECT {anchor} UNION "
    "SELECT e.dst, sp.d + e.w FROM sp JOIN ow_edges e ON sp.node = e.src) SELECT node, d FROM sp"
)
ALL_PAIRS = (  # every source: a pivot (the decomposed form's parts, which stop after their own iterations)
    "WITH RECURSIVE ap(src, node, min() AS d) AS (SELECT src, dst, {anchor} FROM ow_edges UNION "
    "SELECT ap.src, e.dst, ap.d + e.w FROM ap JOIN ow_edges e ON ap.node = e.src) SELECT src, node, d FROM ap"
)
WIDENING = {SHORTEST: "0, 0", ALL_PAIRS: "1"}  # INT beside the BIGINT weights: BIGINT from the first iteration
SETTLED = {SHORTEST: "CAST(0 AS BIGINT), CAST(0 AS BIGINT)", ALL_PAIRS: "CAST(1 AS BIGINT)"}


def weighted_graph(nodes: int, edges: int, seed: int) -> list[tuple[int, int, int]]:
    rng = random.Random(seed)
    return [(rng.randrange(nodes), rng.randrange(nodes), rng.randrange(1, 10)) for _ in range(edges)]


def first_edge_one(graph: nx.DiGraph, src: int) -> dict[int, int]:
    """Per node reached from `src`, the least 1 + the weights of a path's edges after its first."""
    lengths: dict[int, int] = {}
    for first in graph.successors(src):
        for node, rest in nx.single_source_dijkstra_path_length(graph, first).items():
            lengths[node] = min(lengths.get(node, 1 + rest), 1 + rest)
    return lengths


def answer(conn, sql: str) -> tuple[list[tuple], list[object]]:
    cursor = conn.cursor()
    cursor.execute(sql)
    return sorted(cursor.fetchall()), [column[1] for column in cursor.description]


@pytest.mark.parametrize("strategy, query", [("distributed", SHORTEST), ("decomposed", ALL_PAIRS)])
def test_a_literal_anchor_over_bigint_data_runs_as_one_job(conn, strategy, query):
    edges = weighted_graph(30, 70, seed=5)
    conn.register(
        "ow_edges", pa.table({name: [edge[i] for edge in edges] for i, name in enumerate(("src", "dst", "w"))})
    )
    graph = nx.DiGraph()
    for src, dst, w in edges:  # the lightest of parallel edges
        if not graph.has_edge(src, dst) or graph[src][dst]["weight"] > w:
            graph.add_edge(src, dst, weight=w)
    if query is SHORTEST:
        graph.add_node(0)
        expected = sorted(nx.single_source_dijkstra_path_length(graph, 0).items())
    else:
        expected = sorted((src, node, d) for src in graph for node, d in first_edge_one(graph, src).items())
    widening, settled = query.format(anchor=WIDENING[query]), query.format(anchor=SETTLED[query])
    set_strategy(conn, "local")
    rows, types = answer(conn, widening)
    assert rows == expected
    set_strategy(conn, strategy)
    try:
        assert answer(conn, widening) == (rows, types)  # the in-process evaluation types as Spark does
        assert spark_jobs(conn, widening, f"widening-{strategy}") == spark_jobs(conn, settled, f"settled-{strategy}")
    finally:
        set_strategy(conn, "local")


def test_explain_says_where_a_widening_changes_values(conn):
    """A BIGINT anchor widened to DOUBLE by the recursive rule may lose digits: EXPLAIN names the column;
    an INT anchor widened to BIGINT changes no value, and EXPLAIN says nothing of it."""
    cursor = conn.cursor()
    rounding = (
        "WITH RECURSIVE t(n, x) AS (SELECT 0, CAST(9007199254740993 AS BIGINT) UNION "
        "SELECT n + 1, x * 1.5D FROM t WHERE n < 2) SELECT * FROM t"
    )
    exact = (
        "WITH RECURSIVE t(n, x) AS (SELECT 0, 0 UNION "
        "SELECT n + 1, x + CAST(1 AS BIGINT) FROM t WHERE n < 2) SELECT * FROM t"
    )
    cursor.execute("EXPLAIN " + rounding)
    plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "t.x widens from BIGINT in the exit facts to DOUBLE while it iterates: the cast may change values" in plan
    cursor.execute("EXPLAIN " + exact)
    assert not any("widens" in row[0] for row in cursor.fetchall())
