"""Linear recursion (WITH RECURSIVE) through recsql, compared with DuckDB as the independent reference.

On linear recursion DuckDB's answers are the reference for both flavours (DESIGN.md section 3):
- UNION: set semantics; DuckDB discards rows already produced, so it terminates on cyclic data too;
- UNION ALL: the SQL standard's iteration, duplicates kept, so answers are compared as multisets (exact counts).
"""

from __future__ import annotations

import duckdb_reference
import pandas as pd
import pytest
from duckdb_reference import check, q, register_both
from explain import explain
from helpers import digraphs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import EVERY_STRATEGY, EXPLAINED, under

# ---------------------------------------------------------------------------------------------------------------
# Data (table names prefixed with rc_)
# ---------------------------------------------------------------------------------------------------------------


def edges(pairs, cols=("src", "dst")):
    return pd.DataFrame(
        {
            cols[0]: pd.Series([a for a, _ in pairs], dtype="int64"),
            cols[1]: pd.Series([b for _, b in pairs], dtype="int64"),
        }
    )


# A DAG with diamonds (several paths between the same pair) plus a separate component.
DAG_EDGES = [(1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (2, 5), (5, 6), (3, 6), (6, 7), (1, 7), (8, 9), (9, 10)]
RC_DAG = edges(DAG_EDGES)

# Cycles: a 3-cycle, a 2-cycle, a self-loop, a separate 2-cycle, an entry edge into the big cycle.
RC_CYC = edges([(1, 2), (2, 3), (3, 1), (3, 4), (4, 5), (5, 4), (5, 6), (6, 6), (7, 8), (8, 7), (9, 1), (6, 10)])

# A tree, as (parent, child); root 1.
RC_TREE = edges(
    [(1, 2), (1, 3), (2, 4), (2, 5), (3, 6), (3, 7), (4, 8), (5, 9), (5, 10), (7, 11), (9, 12), (12, 13)],
    cols=("parent", "child"),
)

RC_NODE = pd.DataFrame(
    {
        "id": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        "label": ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"],
        "active": [1, 1, 1, 0, 1, 1, 1, 1, 0, 1],
    }
)

RC_WDAG = pd.DataFrame(
    {
        "src": [a for a, _ in DAG_EDGES],
        "dst": [b for _, b in DAG_EDGES],
        "w": [4, 1, 2, 5, 1, 7, 3, 2, 1, 20, 1, 1],
    }
)

TABLES = {"rc_dag": RC_DAG, "rc_cyc": RC_CYC, "rc_tree": RC_TREE, "rc_node": RC_NODE, "rc_wdag": RC_WDAG}


# ---------------------------------------------------------------------------------------------------------------
# Fixtures (the comparison is tests/duckdb_reference.py) and query text
# ---------------------------------------------------------------------------------------------------------------


duck, rc_tables = duckdb_reference.reference_fixtures(TABLES, "rc_tables")


def tc_sql(table, union="UNION"):
    return (
        f"WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM {table} {union} "
        f"SELECT tc.src, e.dst FROM tc JOIN {table} e ON tc.dst = e.src) SELECT src, dst FROM tc"
    )


# ---------------------------------------------------------------------------------------------------------------
# The query catalogue
# ---------------------------------------------------------------------------------------------------------------

CLOSURE = [
    q(tc_sql("rc_dag"), names=True, id="tc_union_dag"),
    q(tc_sql("rc_cyc"), id="tc_union_cyclic"),
    q(
        "WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM rc_cyc UNION "
        "SELECT e.src, tc.dst FROM rc_cyc e, tc WHERE e.dst = tc.src) SELECT src, dst FROM tc",
        id="tc_union_cyclic_right_linear_comma_join",
    ),
    q(tc_sql("rc_dag", "UNION ALL"), id="tc_union_all_dag_duplicates"),
    q(
        "WITH RECURSIVE anc(a, d) AS (SELECT parent, child FROM rc_tree UNION ALL "
        "SELECT anc.a, t.child FROM anc JOIN rc_tree t ON t.parent = anc.d) SELECT a, d FROM anc",
        id="tc_union_all_tree",
    ),
    q(
        tc_sql("rc_cyc").replace("SELECT src, dst FROM tc", "SELECT * FROM tc WHERE src = 3"),
        names=True,
        id="tc_cyclic_select_star_filtered_on_source",
    ),
    q(tc_sql("rc_cyc") + " WHERE dst = 4", id="tc_cyclic_filtered_on_destination"),
    q(
        "WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM rc_cyc WHERE src < 8 UNION "
        "SELECT tc.src, e.dst FROM tc JOIN rc_cyc e ON tc.dst = e.src WHERE tc.src <> e.dst) SELECT src, dst FROM tc",
        id="tc_filter_in_both_branches",
    ),
    q(
        "WITH RECURSIVE r(a, b) AS (SELECT src AS x, dst AS y FROM rc_dag UNION "
        "SELECT r.a, e.dst AS z FROM r JOIN rc_dag e ON r.b = e.src) SELECT a, b FROM r",
        names=True,
        id="header_names_override_aliases",
    ),
]

REACHABILITY = [
    q(
        "WITH RECURSIVE reach(node) AS (SELECT 1 UNION SELECT e.dst FROM reach JOIN rc_cyc e ON e.src = reach.node) "
        "SELECT node FROM reach",
        id="reach_from_constant_cyclic",
    ),
    q(
        "WITH RECURSIVE reach(node) AS (SELECT dst FROM rc_cyc WHERE src = 4 UNION "
        "SELECT e.dst FROM reach, rc_cyc e WHERE e.src = reach.node) SELECT node FROM reach",
        id="reach_from_edges_cyclic",
    ),
    q(
        "WITH RECURSIVE reach(node) AS (SELECT 1 UNION ALL SELECT e.dst FROM reach JOIN rc_dag e "
        "ON e.src = reach.node) SELECT node FROM reach",
        id="reach_union_all_dag_counts_paths",
    ),
    q(
        "WITH RECURSIVE back(node) AS (SELECT 6 UNION SELECT e.src FROM back JOIN rc_cyc e ON e.dst = back.node) "
        "SELECT node FROM back",
        id="reach_backwards_cyclic",
    ),
    q(
        "WITH RECURSIVE anc(node) AS (SELECT parent FROM rc_tree WHERE child = 13 UNION ALL "
        "SELECT t.parent FROM anc JOIN rc_tree t ON t.child = anc.node) SELECT node FROM anc",
        id="ancestors",
    ),
    q(
        "WITH RECURSIVE des(node) AS (SELECT child FROM rc_tree WHERE parent = 2 UNION ALL "
        "SELECT t.child FROM des JOIN rc_tree t ON t.parent = des.node) SELECT node FROM des",
        id="descendants",
    ),
    q(
        "WITH RECURSIVE des(node) AS (SELECT 99 UNION SELECT e.dst FROM des JOIN rc_cyc e ON e.src = des.node) "
        "SELECT node FROM des",
        id="reach_from_isolated_node",
    ),
    q(
        "WITH RECURSIVE des(node) AS (SELECT child FROM rc_tree WHERE parent = 99 UNION ALL "
        "SELECT t.child FROM des JOIN rc_tree t ON t.parent = des.node) SELECT node FROM des",
        allow_empty=True,
        id="empty_base",
    ),
]

DEPTH_AND_COUNTERS = [
    q(
        "WITH RECURSIVE d(node, depth) AS (SELECT 1, 0 UNION ALL SELECT t.child, d.depth + 1 FROM d "
        "JOIN rc_tree t ON t.parent = d.node) SELECT node, depth FROM d",
        names=True,
        id="tree_depth",
    ),
    q(
        "WITH RECURSIVE d(node, depth) AS (SELECT child, 1 FROM rc_tree WHERE parent = 1 UNION ALL "
        "SELECT t.child, depth + 1 FROM d JOIN rc_tree t ON t.parent = d.node) "
        "SELECT depth, count(*) AS n FROM d GROUP BY depth",
        id="tree_depth_histogram",
    ),
    q(
        "WITH RECURSIVE d(node, depth) AS (SELECT 1, 0 UNION ALL SELECT t.child, d.depth + 1 FROM d "
        "JOIN rc_tree t ON t.parent = d.node) SELECT node, depth FROM d ORDER BY depth DESC, node LIMIT 4",
        ordered=True,
        id="tree_depth_order_limit",
    ),
    q("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 50) SELECT n FROM r", id="counter_50"),
    q(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n * 2 FROM r WHERE n < 1000) SELECT n FROM r ORDER BY n",
        ordered=True,
        id="powers_of_two_ordered",
    ),
    q(
        "WITH RECURSIVE fib(i, a, b) AS (SELECT 1, 0, 1 UNION ALL SELECT i + 1, b, a + b FROM fib WHERE i < 30) "
        "SELECT i, a FROM fib",
        id="fibonacci",
    ),
    q(
        "WITH RECURSIVE r(n, tag) AS (SELECT 1, 'x' UNION ALL SELECT 5, 'y' UNION ALL "
        "SELECT n + 1, tag FROM r WHERE n < 8) SELECT n, tag FROM r",
        id="base_is_union_of_two_selects",
    ),
    q(
        "WITH RECURSIVE p(src, dst, len) AS (SELECT src, dst, 1 FROM rc_cyc UNION "
        "SELECT p.src, e.dst, p.len + 1 FROM p JOIN rc_cyc e ON p.dst = e.src WHERE p.len < 5) "
        "SELECT src, dst, len FROM p",
        id="bounded_path_lengths_cyclic",
    ),
    q(
        "WITH RECURSIVE p(src, dst, len) AS (SELECT src, dst, 1 FROM rc_cyc UNION "
        "SELECT p.src, e.dst, p.len + 1 FROM p JOIN rc_cyc e ON p.dst = e.src WHERE p.len < 6) "
        "SELECT src, dst, min(len) AS hops FROM p GROUP BY src, dst",
        id="hop_distance_via_group_by",
    ),
]

MULTI_TABLE = [
    q(
        "WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM rc_dag WHERE src IN (1, 8) UNION ALL "
        "SELECT tc.src, e.dst FROM tc JOIN rc_dag e ON tc.dst = e.src) SELECT src, dst FROM tc",
        id="base_with_several_rows",
    ),
    q(
        "WITH RECURSIVE p(src, dst) AS (SELECT e.src, e.dst FROM rc_cyc e JOIN rc_node n ON n.id = e.dst "
        "WHERE n.active = 1 UNION SELECT p.src, e.dst FROM p JOIN rc_cyc e ON p.dst = e.src "
        "JOIN rc_node n ON n.id = e.dst WHERE n.active = 1) SELECT src, dst FROM p",
        id="recursion_joins_attribute_table",
    ),
    q(
        "WITH RECURSIVE p(src, dst) AS (SELECT e.src, e.dst FROM rc_cyc e, rc_node a, rc_node b "
        "WHERE a.id = e.src AND b.id = e.dst AND a.active = 1 AND b.active = 1 UNION "
        "SELECT p.src, e.dst FROM p, rc_cyc e, rc_node n WHERE p.dst = e.src AND n.id = e.dst AND n.active = 1) "
        "SELECT src, dst FROM p",
        id="recursion_comma_join_three_tables",
    ),
    q(
        "WITH RECURSIVE sg(x, y) AS (SELECT a.child, b.child FROM rc_tree a JOIN rc_tree b ON a.parent = b.parent "
        "UNION SELECT a.child, b.child FROM sg JOIN rc_tree a ON a.parent = sg.x JOIN rc_tree b ON b.parent = sg.y) "
        "SELECT x, y FROM sg",
        id="same_generation",
    ),
    q(
        "WITH RECURSIVE c(src, dst, cost) AS (SELECT src, dst, w FROM rc_wdag UNION ALL "
        "SELECT c.src, e.dst, c.cost + e.w FROM c JOIN rc_wdag e ON c.dst = e.src) "
        "SELECT src, dst, min(cost) AS best, max(cost) AS worst, count(*) AS paths FROM c GROUP BY src, dst",
        id="weighted_paths_then_group_by",
    ),
    q(
        "WITH RECURSIVE p(node, path) AS (SELECT 1, CAST(1 AS STRING) UNION ALL "
        "SELECT e.dst, concat(p.path, '>', CAST(e.dst AS STRING)) FROM p JOIN rc_dag e ON e.src = p.node) "
        "SELECT node, path FROM p",
        "WITH RECURSIVE p(node, path) AS (SELECT 1, CAST(1 AS VARCHAR) UNION ALL "
        "SELECT e.dst, concat(p.path, '>', CAST(e.dst AS VARCHAR)) FROM p JOIN rc_dag e ON e.src = p.node) "
        "SELECT node, path FROM p",
        id="path_strings",
    ),
]

FINAL_QUERY = [
    q(
        tc_sql("rc_cyc").replace("SELECT src, dst FROM tc", "SELECT src, count(*) AS n FROM tc GROUP BY src"),
        names=True,
        id="group_by_after_union",
    ),
    q(
        tc_sql("rc_dag", "UNION ALL").replace(
            "SELECT src, dst FROM tc", "SELECT src, dst, count(*) AS paths FROM tc GROUP BY src, dst"
        ),
        id="path_counts_after_union_all",
    ),
    q(
        tc_sql("rc_dag", "UNION ALL").replace("SELECT src, dst FROM tc", "SELECT DISTINCT src, dst FROM tc"),
        id="distinct_after_union_all",
    ),
    q(
        "WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM rc_cyc UNION "
        "SELECT tc.src, e.dst FROM tc JOIN rc_cyc e ON tc.dst = e.src) "
        "SELECT n.label, m.label FROM tc JOIN rc_node n ON n.id = tc.src JOIN rc_node m ON m.id = tc.dst "
        "WHERE m.active = 1",
        id="join_in_final_query",
    ),
    q(
        "WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM rc_dag UNION "
        "SELECT tc.src, e.dst FROM tc JOIN rc_dag e ON tc.dst = e.src) "
        "SELECT a.src, b.dst FROM tc a JOIN tc b ON a.dst = b.src",
        id="self_join_of_cte_in_final_query",
    ),
    q(
        "WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM rc_cyc UNION "
        "SELECT tc.src, e.dst FROM tc JOIN rc_cyc e ON tc.dst = e.src) "
        "SELECT id FROM rc_node WHERE id NOT IN (SELECT dst FROM tc WHERE src = 1)",
        id="not_in_over_cte",
    ),
    q(
        "WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM rc_cyc UNION "
        "SELECT tc.src, e.dst FROM tc JOIN rc_cyc e ON tc.dst = e.src) "
        "SELECT n.id FROM rc_node n WHERE EXISTS (SELECT 1 FROM tc WHERE tc.src = n.id AND tc.dst = n.id)",
        id="exists_over_cte_nodes_on_cycles",
    ),
    q(
        "WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM rc_dag UNION "
        "SELECT tc.src, e.dst FROM tc JOIN rc_dag e ON tc.dst = e.src) "
        "SELECT src, dst FROM tc ORDER BY src DESC, dst LIMIT 6",
        ordered=True,
        id="order_limit_after_recursion",
    ),
    q(
        "WITH RECURSIVE a(x, y) AS (SELECT src, dst FROM rc_dag UNION "
        "SELECT a.x, e.dst FROM a JOIN rc_dag e ON a.y = e.src), "
        "b(x, y) AS (SELECT src, dst FROM rc_cyc UNION SELECT b.x, e.dst FROM b JOIN rc_cyc e ON b.y = e.src) "
        "SELECT 'a' AS which, x, y FROM a UNION ALL SELECT 'b' AS which, x, y FROM b",
        id="two_independent_recursive_ctes",
    ),
    q(
        "WITH RECURSIVE a(x, y) AS (SELECT src, dst FROM rc_dag UNION "
        "SELECT a.x, e.dst FROM a JOIN rc_dag e ON a.y = e.src), "
        "d(node, depth) AS (SELECT 1, 0 UNION ALL SELECT t.child, d.depth + 1 FROM d "
        "JOIN rc_tree t ON t.parent = d.node) "
        "SELECT a.x, d.depth, count(*) AS n FROM a JOIN d ON a.y = d.node GROUP BY a.x, d.depth",
        id="two_recursive_ctes_joined",
    ),
    q(
        "WITH RECURSIVE good AS (SELECT e.src, e.dst FROM rc_cyc e JOIN rc_node n ON n.id = e.src "
        "WHERE n.active = 1), tc(src, dst) AS (SELECT src, dst FROM good UNION "
        "SELECT tc.src, g.dst FROM tc JOIN good g ON tc.dst = g.src) SELECT src, dst FROM tc",
        id="non_recursive_cte_feeding_recursive_cte",
    ),
    q(
        "WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM rc_dag UNION "
        "SELECT tc.src, e.dst FROM tc JOIN rc_dag e ON tc.dst = e.src) "
        "SELECT s.src, s.n FROM (SELECT src, count(*) AS n FROM tc GROUP BY src) s WHERE s.n >= 3",
        id="cte_in_from_subquery",
    ),
]

PARAMS = [
    q(
        "WITH RECURSIVE d(node, depth) AS (SELECT 1, 0 UNION ALL SELECT t.child, d.depth + 1 FROM d "
        "JOIN rc_tree t ON t.parent = d.node WHERE d.depth < ?) SELECT node, depth FROM d",
        params=(2,),
        id="param_bounds_recursion",
    ),
    q(tc_sql("rc_cyc") + " WHERE src = ?", params=(5,), id="param_filters_final_query"),
    q(
        "WITH RECURSIVE reach(node) AS (SELECT dst FROM rc_cyc WHERE src = ? UNION "
        "SELECT e.dst FROM reach JOIN rc_cyc e ON e.src = reach.node) SELECT node FROM reach WHERE node <> ?",
        params=(9, 3),
        id="param_in_base_and_final",
    ),
    q(
        "WITH RECURSIVE p(src, dst) AS (SELECT e.src, e.dst FROM rc_cyc e JOIN rc_node n ON n.id = e.dst "
        "WHERE n.label <> ? UNION SELECT p.src, e.dst FROM p JOIN rc_cyc e ON p.dst = e.src "
        "JOIN rc_node n ON n.id = e.dst WHERE n.label <> ?) SELECT src, dst FROM p",
        params=("d", "d"),
        id="param_string_in_both_branches",
    ),
]

ALL_CASES = CLOSURE + REACHABILITY + DEPTH_AND_COUNTERS + MULTI_TABLE + FINAL_QUERY + PARAMS


@pytest.mark.spark
@under(*EVERY_STRATEGY)
@pytest.mark.parametrize("case", ALL_CASES)
def test_recursive_query_matches_duckdb(case, rc_tables, cur, duck, strategy):
    """Each case under each strategy, against DuckDB; the recursive strata EXPLAIN puts on the strategy
    ran with it (under `decomposed`, those with a pivot: the others run distributed)."""
    plan = explain(cur, case["sql"], case.get("params"))
    check(cur, duck, **case)
    assert len(strategy) == plan.count(EXPLAINED[strategy.strategy])


def test_reregistered_edges_change_the_closure(rc_tables, cur, duck):
    """The recursion reads the table registered now, not a cached copy of an earlier registration."""
    sql = tc_sql("rc_swap")
    for pairs in ([(1, 2), (2, 3)], [(1, 2), (2, 3), (3, 1), (4, 1)]):
        register_both(rc_tables, duck, "rc_swap", edges(pairs))
        check(cur, duck, sql)


# ---------------------------------------------------------------------------------------------------------------
# Property tests on random graphs
# ---------------------------------------------------------------------------------------------------------------


def _run_both(conn, duck, pairs, sql, params=None):
    register_both(conn, duck, "rc_hyp_edge", edges(pairs))
    cur = conn.cursor()
    try:
        return check(cur, duck, sql, params=params, allow_empty=True)
    finally:
        cur.close()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(graph=digraphs())
def test_random_transitive_closure_union(rc_tables, duck, graph):
    _n, pairs = graph
    _run_both(rc_tables, duck, pairs, tc_sql("rc_hyp_edge"))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(graph=digraphs(dag=True))
def test_random_dag_path_enumeration_union_all(rc_tables, duck, graph):
    _n, pairs = graph
    _run_both(
        rc_tables,
        duck,
        pairs,
        "WITH RECURSIVE p(src, dst, len) AS (SELECT src, dst, 1 FROM rc_hyp_edge UNION ALL "
        "SELECT p.src, e.dst, p.len + 1 FROM p JOIN rc_hyp_edge e ON p.dst = e.src) "
        "SELECT src, dst, len FROM p",
    )


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(graph=digraphs(), data=st.data())
def test_random_reachability_from_parameter(rc_tables, duck, graph, data):
    n, pairs = graph
    start = data.draw(st.integers(0, n - 1), label="start")
    _run_both(
        rc_tables,
        duck,
        pairs,
        "WITH RECURSIVE reach(node) AS (SELECT dst FROM rc_hyp_edge WHERE src = ? UNION "
        "SELECT e.dst FROM reach JOIN rc_hyp_edge e ON e.src = reach.node) SELECT node FROM reach",
        params=(start,),
    )
