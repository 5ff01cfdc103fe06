"""Property tests: recursive queries over random small graphs against networkx / plain Python.

Graphs have 2-12 nodes (0 .. n-1) and 1-25 distinct edges; self-loops and cycles are allowed unless the property
needs a DAG. Tables carry a `prop_` prefix. Each example opens a cursor on the session's one connection (the
function-scoped `cur` fixture cannot be used under @given).
"""

from __future__ import annotations

import pandas as pd
import pytest
from helpers import digraphs
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import (
    assert_same_rows,
    dag_path_counts_dp,
    min_label_components,
    single_source_shortest,
    transitive_closure,
)

PROPERTY_SETTINGS = settings(max_examples=15, deadline=None)


@st.composite
def weighted_multidags(draw):
    """A DAG whose edges carry weights: parallel edges (same ends, other weights) and duplicate rows."""
    n, edges = draw(digraphs(dag=True, min_edges=1, unique=True))
    rows = [(u, v, draw(st.integers(min_value=1, max_value=9))) for u, v in edges]
    rows += draw(st.lists(st.sampled_from(rows), max_size=8))  # duplicates, and with the next, parallel edges
    rows += [
        (u, v, w + draw(st.integers(min_value=1, max_value=5)))
        for u, v, w in draw(st.lists(st.sampled_from(rows), max_size=8))
    ]
    return n, rows


def rollups(rows, source):
    """Each node's path count and weight roll-up from `source`, by the recursions the queries write:
    count(n) = sum of count(m) and total(n) = sum of total(m) + w, over the distinct edge rows (m, n, w)
    (a table's duplicate rows are one row), in topological order: edges go from smaller to larger nodes."""
    edges = sorted(set(rows))
    count, total = {source: 1}, {source: 0}
    for node in sorted({v for _, v, _ in edges}):
        into = [(u, w) for u, v, w in edges if v == node and u in count]
        if into:
            count[node] = sum(count[u] for u, _ in into)
            total[node] = sum(total[u] + w for u, w in into)
    return count, total


@st.composite
def weighted_graphs(draw):
    n, edges = draw(digraphs(min_edges=1, unique=True))
    weights = draw(st.lists(st.integers(min_value=0, max_value=20), min_size=len(edges), max_size=len(edges)))
    return n, [(u, v, w) for (u, v), w in zip(edges, weights)]


def register(conn, name, rows, columns):
    conn.register(name, pd.DataFrame(list(rows), columns=list(columns)).astype({c: "int64" for c in columns}))


def run(conn, sql):
    cur = conn.cursor()
    try:
        cur.execute(sql)
        return cur.fetchall()
    finally:
        cur.close()


TC_LINEAR = (
    "WITH RECURSIVE tc(x, y) AS (SELECT src, dst FROM prop_edge) UNION "
    "(SELECT tc.x, e.dst FROM tc, prop_edge e WHERE tc.y = e.src) SELECT x, y FROM tc"
)
TC_NONLINEAR = (
    "WITH RECURSIVE tc(x, y) AS (SELECT src, dst FROM prop_edge) UNION "
    "(SELECT a.x, b.y FROM tc a, tc b WHERE a.y = b.x) SELECT x, y FROM tc"
)
SSSP = (
    "WITH RECURSIVE sp(node, min() AS dist) AS (SELECT 0, 0) UNION "
    "(SELECT e.dst, sp.dist + e.w FROM sp, prop_wedge e WHERE sp.node = e.src) SELECT node, dist FROM sp"
)
COMPONENTS = (
    "WITH RECURSIVE cc(node, min() AS comp) AS (SELECT src, src FROM prop_uedge) UNION "
    "(SELECT e.dst, cc.comp FROM cc, prop_uedge e WHERE cc.node = e.src) SELECT node, comp FROM cc"
)
WEIGHTED_PATH_COUNTS = (
    "WITH RECURSIVE paths(node, count() AS cnt) AS (SELECT 0, 1) UNION "
    "(SELECT e.dst, paths.cnt FROM paths, prop_multidag e WHERE paths.node = e.src) SELECT node, cnt FROM paths"
)
WEIGHT_ROLLUP = (
    "WITH RECURSIVE total(node, sum() AS w) AS (SELECT 0, 0) UNION "
    "(SELECT e.dst, total.w + e.w FROM total JOIN prop_multidag e ON total.node = e.src) SELECT node, w FROM total"
)
PATH_COUNTS = (
    "WITH RECURSIVE paths(node, count() AS cnt) AS (SELECT 0, 1) UNION "
    "(SELECT e.dst, paths.cnt FROM paths, prop_dag e WHERE paths.node = e.src) SELECT node, cnt FROM paths"
)


@pytest.mark.parametrize("sql", [TC_LINEAR, TC_NONLINEAR], ids=["linear", "nonlinear"])
@PROPERTY_SETTINGS
@given(graph=digraphs(min_edges=1, unique=True))
def test_transitive_closure_matches_networkx(conn, sql, graph):
    _, edges = graph
    register(conn, "prop_edge", edges, ("src", "dst"))
    assert_same_rows(run(conn, sql), transitive_closure(edges), context=f"{sql}\nedges={edges}")


@PROPERTY_SETTINGS
@given(graph=weighted_graphs())
def test_single_source_shortest_paths_match_dijkstra(conn, graph):
    _, edges = graph
    register(conn, "prop_wedge", edges, ("src", "dst", "w"))
    expected = single_source_shortest(edges, 0)
    assert_same_rows(run(conn, SSSP), expected.items(), context=f"{SSSP}\nedges={edges}")


@PROPERTY_SETTINGS
@given(graph=digraphs(min_edges=1, unique=True))
def test_connected_components_min_label_match_networkx(conn, graph):
    _, edges = graph
    both = sorted(set(edges) | {(v, u) for u, v in edges})
    register(conn, "prop_uedge", both, ("src", "dst"))
    expected = min_label_components(edges)
    assert_same_rows(run(conn, COMPONENTS), expected.items(), context=f"{COMPONENTS}\nedges={edges}")


@PROPERTY_SETTINGS
@given(graph=digraphs(dag=True, min_edges=1, unique=True))
def test_path_counts_on_dags_match_dynamic_programming(conn, graph):
    _, edges = graph
    register(conn, "prop_dag", edges, ("src", "dst"))
    expected = dag_path_counts_dp(edges, 0)
    assert_same_rows(run(conn, PATH_COUNTS), expected.items(), context=f"{PATH_COUNTS}\nedges={edges}")


@PROPERTY_SETTINGS
@given(graph=weighted_multidags())
def test_sum_and_count_contributions_are_derivations(conn, graph):
    """Every derivation contributes once to a sum() or count(): two parallel edges are two paths (and two
    weights), a duplicate row is one."""
    _, rows = graph
    register(conn, "prop_multidag", rows, ("src", "dst", "w"))
    count, total = rollups(rows, 0)
    context = f"\nrows={rows}"
    assert_same_rows(run(conn, WEIGHTED_PATH_COUNTS), count.items(), context=WEIGHTED_PATH_COUNTS + context)
    assert_same_rows(run(conn, WEIGHT_ROLLUP), total.items(), context=WEIGHT_ROLLUP + context)
