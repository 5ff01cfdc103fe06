"""Aggregates in recursion (RaSQL header aggregates), non-linear and mutual recursion, against plain Python and
networkx (tests/reference.py).

Data sets are small, generated from fixed seeds; tables carry an `agg_` prefix.
"""

from __future__ import annotations

import random

import networkx as nx
import pandas as pd
import pytest
from reference import (
    all_pairs_path_counts,
    all_pairs_shortest_nonempty,
    assert_same_rows,
    attend,
    bom_max_days,
    dag_path_counts,
    head_counts,
    min_label_components,
    mlm_bonus,
    parity_reach,
    same_generation_naive,
    same_generation_tree,
    single_source_shortest,
    transitive_closure,
)
from strategies import module_under

import recsql

pytestmark = module_under("distributed", "local")


def register(conn, name, rows, columns, doubles=()):
    """Register `rows` as table `name` (int64 columns, float64 for those in `doubles`); return `rows`."""
    dtypes = {c: ("float64" if c in doubles else "int64") for c in columns}
    conn.register(name, pd.DataFrame(list(rows), columns=list(columns)).astype(dtypes))
    return rows


def query(cur, sql, params=None):
    cur.execute(sql, params) if params is not None else cur.execute(sql)
    return cur.fetchall()


def assert_answer(cur, sql, expected, **options):
    """Run `sql` and compare its rows with `expected` as sets (`assert_same_rows`, the query as context)."""
    assert_same_rows(query(cur, sql), expected, context=sql, **options)


# --- data ------------------------------------------------------------------------------------------------------


def weighted_cyclic_graph(seed=7, n=14, m=36):
    """Directed graph with cycles and non-negative integer weights (some zero), no parallel edges."""
    rng = random.Random(seed)
    edges = {}
    # a ring through every node guarantees cycles and reachability from node 1
    for i in range(1, n + 1):
        edges[(i, i % n + 1)] = rng.randint(1, 9)
    while len(edges) < m:
        u, v = rng.randint(1, n), rng.randint(1, n)
        if u != v and (u, v) not in edges:
            edges[(u, v)] = rng.randint(0, 9)
    return [(u, v, w) for (u, v), w in sorted(edges.items())]


def cyclic_graph(seed=11, n=12, m=22):
    rng = random.Random(seed)
    edges = set()
    while len(edges) < m:
        u, v = rng.randint(1, n), rng.randint(1, n)
        edges.add((u, v))  # self-loops allowed
    edges.add((1, 2))
    edges.add((2, 1))  # at least one cycle
    return sorted(edges)


def dag(seed=3, n=14, m=40):
    """DAG on 1..n (edges from smaller to larger) with many paths between its ends."""
    rng = random.Random(seed)
    edges = {(i, i + 1) for i in range(1, n)}
    while len(edges) < m:
        u, v = sorted(rng.sample(range(1, n + 1), 2))
        edges.add((u, v))
    return sorted(edges)


def tree(seed=5, n=25, first=100):
    """(parent, child) rows of a random tree on first .. first + n - 1, rooted at `first`."""
    rng = random.Random(seed)
    return [(first + rng.randrange(i), first + i) for i in range(1, n)]


WEIGHTED = weighted_cyclic_graph()
SOURCE = 1


# --- min ---------------------------------------------------------------------------------------------------------

SSSP_RASQL = (
    "WITH RECURSIVE sp(node, min() AS dist) AS (SELECT 1, 0) UNION "
    "(SELECT e.dst, sp.dist + e.w FROM sp, agg_wedge e WHERE sp.node = e.src) "
    "SELECT node, dist FROM sp"
)
SSSP_INNER = (
    "WITH RECURSIVE sp(node, min() AS dist) AS (SELECT 1, 0 UNION "
    "SELECT e.dst, sp.dist + e.w FROM sp, agg_wedge e WHERE sp.node = e.src) "
    "SELECT node, dist FROM sp"
)


def test_single_source_shortest_paths_min(conn, cur):
    register(conn, "agg_wedge", WEIGHTED, ("src", "dst", "w"))
    expected = single_source_shortest(WEIGHTED, SOURCE)
    assert len(expected) > 5
    assert_answer(cur, SSSP_RASQL, expected.items())


def test_all_pairs_shortest_paths_min(conn, cur):
    register(conn, "agg_wedge", WEIGHTED, ("src", "dst", "w"))
    sql = (
        "WITH RECURSIVE sp(src, dst, min() AS cost) AS (SELECT src, dst, w FROM agg_wedge) UNION "
        "(SELECT sp.src, e.dst, sp.cost + e.w FROM sp, agg_wedge e WHERE sp.dst = e.src) "
        "SELECT src, dst, cost FROM sp"
    )
    expected = all_pairs_shortest_nonempty(WEIGHTED)
    assert_answer(cur, sql, [(s, d, c) for (s, d), c in expected.items()])


def test_connected_components_min_label(conn, cur):
    rng = random.Random(21)
    # four components on scattered labels, the smallest label of a component not necessarily on an edge's left
    labels = rng.sample(range(10, 200), 30)
    groups = [labels[0:9], labels[9:17], labels[17:26], labels[26:30]]
    undirected = set()
    for group in groups:
        for i in range(1, len(group)):  # a random spanning tree plus a few extra edges
            undirected.add((group[rng.randrange(i)], group[i]))
        for _ in range(3):
            a, b = rng.sample(group, 2)
            undirected.add((a, b))
    both = sorted(undirected | {(b, a) for a, b in undirected})
    register(conn, "agg_uedge", both, ("x", "y"))
    sql = (
        "WITH RECURSIVE cc(node, min() AS comp) AS (SELECT x, x FROM agg_uedge) UNION "
        "(SELECT e.y, cc.comp FROM cc, agg_uedge e WHERE cc.node = e.x) SELECT node, comp FROM cc"
    )
    expected = min_label_components(undirected)
    assert len(set(expected.values())) == 4
    assert_answer(cur, sql, expected.items())


# --- max ---------------------------------------------------------------------------------------------------------


def test_bill_of_materials_longest_delivery_max(conn, cur):
    rng = random.Random(8)
    basic = {part: rng.randint(1, 40) for part in range(1, 11)}
    assbl = set()
    for part in range(11, 26):  # assemblies made of lower-numbered parts (basic or assemblies): a DAG
        for sub in rng.sample(range(1, part), rng.randint(2, 3)):
            assbl.add((part, sub))
    register(conn, "agg_basic", basic.items(), ("part", "days"))
    register(conn, "agg_assbl", sorted(assbl), ("part", "sub"))
    sql = (
        "WITH RECURSIVE actualdays(part, max() AS days) AS (SELECT part, days FROM agg_basic) UNION "
        "(SELECT a.part, actualdays.days FROM agg_assbl a, actualdays WHERE a.sub = actualdays.part) "
        "SELECT part, days FROM actualdays"
    )
    expected = bom_max_days(assbl, basic)
    assert_answer(cur, sql, expected.items())


# --- count -------------------------------------------------------------------------------------------------------


def test_path_counts_single_source_dag_count(conn, cur):
    edges = register(conn, "agg_dag", dag(), ("src", "dst"))
    sql = (
        "WITH RECURSIVE paths(node, count() AS cnt) AS (SELECT 1, 1) UNION "
        "(SELECT e.dst, paths.cnt FROM paths, agg_dag e WHERE paths.node = e.src) SELECT node, cnt FROM paths"
    )
    expected = dag_path_counts(edges, 1)
    assert max(expected.values()) > 50  # many paths: a real test of counting, not of reachability
    assert_answer(cur, sql, expected.items())


def test_path_counts_along_a_condition_on_a_cyclic_graph(conn, cur):
    """count() over the ascending edges of a cyclic graph (a condition in the recursive rule makes the walk
    acyclic); on Spark it once failed with "key not found" in Spark's constraint propagation."""
    edges = register(conn, "agg_cycle", [(1, 2), (2, 3), (3, 1), (3, 4), (4, 5), (2, 4), (1, 3)], ("src", "dst"))
    sql = (
        "WITH RECURSIVE paths(node, count() AS cnt) AS (SELECT 1, 1 UNION SELECT e.dst, paths.cnt "
        "FROM paths JOIN agg_cycle e ON paths.node = e.src WHERE e.dst > paths.node) SELECT node, cnt FROM paths"
    )
    expected = dag_path_counts([(a, b) for a, b in edges if b > a], 1)
    assert max(expected.values()) > 1
    assert_answer(cur, sql, expected.items())


def test_path_counts_all_pairs_dag_count(conn, cur):
    edges = register(conn, "agg_dag", dag(seed=4, n=10, m=20), ("src", "dst"))
    sql = (
        "WITH RECURSIVE paths(x, y, count() AS cnt) AS (SELECT src, dst, 1 FROM agg_dag) UNION "
        "(SELECT paths.x, e.dst, paths.cnt FROM paths, agg_dag e WHERE paths.y = e.src) SELECT x, y, cnt FROM paths"
    )
    expected = all_pairs_path_counts(edges)
    assert_answer(cur, sql, [(x, y, c) for (x, y), c in expected.items()])


def test_org_chart_head_count(conn, cur):
    report = tree(seed=5, n=25)
    register(conn, "agg_report", report, ("mgr", "emp"))
    sql = (
        "WITH RECURSIVE dept(mgr, count() AS cnt) AS (SELECT emp, 1 FROM agg_report) UNION "
        "(SELECT r.mgr, dept.cnt FROM dept, agg_report r WHERE dept.mgr = r.emp) SELECT mgr, cnt FROM dept"
    )
    expected = head_counts(report)
    assert_answer(cur, sql, expected.items())


def test_cyclic_count_of_paths_hits_iteration_limit(conn, cur):
    edges = cyclic_graph()
    graph = nx.DiGraph(edges)
    # the reference: a cycle is reachable from node 1, so node 1 has infinitely many paths to it
    reachable = nx.descendants(graph, 1) | {1}
    assert not nx.is_directed_acyclic_graph(graph.subgraph(reachable))
    register(conn, "agg_cyc", edges, ("src", "dst"))
    sql = (
        "WITH RECURSIVE paths(node, count() AS cnt) AS (SELECT 1, 1) UNION "
        "(SELECT e.dst, paths.cnt FROM paths, agg_cyc e WHERE paths.node = e.src) SELECT node, cnt FROM paths"
    )
    cur.execute("SET recsql.max_iterations = 10")
    try:
        with pytest.raises(recsql.OperationalError) as info:
            cur.execute(sql)
            cur.fetchall()
        message = str(info.value).lower()
        assert "paths" in message, f"the error should name the CTE: {info.value}"
        assert "max_iterations" in message or "max recursion level" in message, (
            f"the error should say how to raise the limit: {info.value}"
        )
    finally:
        cur.execute("SET recsql.max_iterations = 10000")


# --- sum ---------------------------------------------------------------------------------------------------------


def test_bonus_rollup_sum_doubles(conn, cur):
    rng = random.Random(13)
    sponsor = tree(seed=13, n=22, first=1)  # (m1 sponsors m2)
    members = {m for pair in sponsor for m in pair}
    sales = {m: round(rng.uniform(1.0, 2000.0), 2) for m in members}
    register(conn, "agg_sales", sales.items(), ("m", "p"), doubles=("p",))
    register(conn, "agg_sponsor", sponsor, ("m1", "m2"))
    sql = (
        "WITH RECURSIVE bonus(m, sum() AS b) AS (SELECT m, p * 0.1 FROM agg_sales) UNION "
        "(SELECT s.m1, bonus.b * 0.5 FROM bonus, agg_sponsor s WHERE bonus.m = s.m2) SELECT m, b FROM bonus"
    )
    expected = mlm_bonus(sales, sponsor)
    assert_answer(cur, sql, expected.items(), tol=1e-6)


# --- syntax: both parenthesizations ---------------------------------------------------------------------------


def test_parenthesization_base_union_recursive_inside_same_answer(conn, cur):
    register(conn, "agg_wedge", WEIGHTED, ("src", "dst", "w"))
    expected = single_source_shortest(WEIGHTED, SOURCE)
    outer = query(cur, SSSP_RASQL)
    inner = query(cur, SSSP_INNER)
    assert_same_rows(inner, outer, context="AS (base UNION recursive) vs AS (base) UNION (recursive)")
    assert_same_rows(inner, expected.items(), context=SSSP_INNER)


# --- non-linear recursion ------------------------------------------------------------------------------------


def test_nonlinear_transitive_closure(conn, cur):
    edges = register(conn, "agg_e", cyclic_graph(seed=17, n=12, m=18), ("src", "dst"))
    sql = (
        "WITH RECURSIVE tc(x, y) AS (SELECT src, dst FROM agg_e) UNION "
        "(SELECT a.x, b.y FROM tc a, tc b WHERE a.y = b.x) SELECT x, y FROM tc"
    )
    assert_answer(cur, sql, transitive_closure(edges))


def test_nonlinear_three_atoms_odd_walks(conn, cur):
    # tc(x, y) :- e(x, y).  tc(x, y) :- tc(x, a), e(a, b), tc(b, y).  Path lengths 1, 1+1+1, ...: all odd ones.
    edges = register(conn, "agg_e", cyclic_graph(seed=29, n=10, m=12), ("src", "dst"))
    sql = (
        "WITH RECURSIVE ow(x, y) AS (SELECT src, dst FROM agg_e) UNION "
        "(SELECT a.x, c.y FROM ow a, agg_e b, ow c WHERE a.y = b.src AND b.dst = c.x) SELECT x, y FROM ow"
    )
    _, odd = parity_reach(edges)
    assert odd != transitive_closure(edges)  # some pairs are joined by even walks only
    assert_answer(cur, sql, odd)


def forest(seed=23):
    """(parent, child) rows: two trees of different shapes."""
    return tree(seed=seed, n=16, first=1) + tree(seed=seed + 1, n=10, first=50)


def test_same_generation_three_atoms(conn, cur):
    rel = register(conn, "agg_rel", forest(), ("parent", "child"))
    sql = (
        "WITH RECURSIVE sg(x, y) AS (SELECT a.child, b.child FROM agg_rel a, agg_rel b "
        "WHERE a.parent = b.parent AND a.child <> b.child) UNION "
        "(SELECT a.child, b.child FROM agg_rel a, sg, agg_rel b WHERE a.parent = sg.x AND b.parent = sg.y) "
        "SELECT x, y FROM sg"
    )
    expected = same_generation_tree(rel)
    assert expected == same_generation_naive(rel)
    assert_answer(cur, sql, expected)


def test_same_generation_nonlinear(conn, cur):
    # a third, non-linear rule sg(x, y) :- sg(x, z), sg(z, y) adds the pairs (x, x), which the linear rule then
    # carries down to children
    rel = register(conn, "agg_rel", forest(seed=29), ("parent", "child"))
    sql = (
        "WITH RECURSIVE sg(x, y) AS ("
        "SELECT a.child, b.child FROM agg_rel a, agg_rel b WHERE a.parent = b.parent AND a.child <> b.child "
        "UNION SELECT a.child, b.child FROM agg_rel a, sg, agg_rel b WHERE a.parent = sg.x AND b.parent = sg.y "
        "UNION SELECT s1.x, s2.y FROM sg s1, sg s2 WHERE s1.y = s2.x) "
        "SELECT x, y FROM sg"
    )
    expected = same_generation_naive(rel, transitive=True)
    assert any(x == y for x, y in expected)
    assert_answer(cur, sql, expected)


# --- mutual recursion --------------------------------------------------------------------------------------------


def test_mutual_recursion_even_odd(conn, cur):
    edges = register(conn, "agg_e", cyclic_graph(seed=31, n=11, m=16), ("src", "dst"))
    sql = (
        "WITH RECURSIVE "
        "odd(x, y) AS (SELECT src, dst FROM agg_e) UNION "
        "(SELECT even.x, e.dst FROM even, agg_e e WHERE even.y = e.src), "
        "even(x, y) AS (SELECT odd.x, e.dst FROM odd, agg_e e WHERE odd.y = e.src) "
        "SELECT 0, x, y FROM even UNION ALL SELECT 1, x, y FROM odd"
    )
    even, odd = parity_reach(edges)
    assert even != odd
    expected = [(0, x, y) for x, y in even] + [(1, x, y) for x, y in odd]
    assert_answer(cur, sql, expected)


def test_mutual_recursion_count_attend(conn, cur):
    rng = random.Random(37)
    people = range(1, 31)
    friend = set()
    while len(friend) < 90:
        x, y = rng.sample(people, 2)
        friend.add((x, y))
    organizers = [1, 2, 3]
    k = 2
    attending, coming = attend(organizers, friend, k)
    assert len(organizers) < len(attending) < len(people)  # the recursion matters and k matters
    register(conn, "agg_organizer", [(o,) for o in organizers], ("x",))
    register(conn, "agg_friend", sorted(friend), ("x", "y"))
    ctes = (
        "WITH RECURSIVE attend(x) AS (SELECT x FROM agg_organizer) UNION "
        f"(SELECT y FROM cntcoming WHERE n >= {k}), "
        "cntcoming(y, count() AS n) AS (SELECT f.y, 1 FROM attend, agg_friend f WHERE attend.x = f.x) "
    )
    # both CTEs in one answer: tag 0 = attend(x), tag 1 = cntcoming(y, n)
    sql = ctes + "SELECT 0, x, 0 FROM attend UNION ALL SELECT 1, y, n FROM cntcoming"
    expected = [(0, p, 0) for p in attending] + [(1, y, n) for y, n in coming.items()]
    assert_answer(cur, sql, expected)


# --- the final query over the recursive result ----------------------------------------------------------------


def test_final_query_join_and_order_by(conn, cur):
    register(conn, "agg_wedge", WEIGHTED, ("src", "dst", "w"))
    nodes = sorted({u for u, _, _ in WEIGHTED} | {v for _, v, _ in WEIGHTED})
    names = {n: f"city{(n * 7) % 5}_{n:02d}" for n in nodes}
    conn.register("agg_names", pd.DataFrame({"id": nodes, "name": [names[n] for n in nodes]}).astype({"id": "int64"}))
    sql = (
        "WITH RECURSIVE sp(node, min() AS dist) AS (SELECT 1, 0) UNION "
        "(SELECT e.dst, sp.dist + e.w FROM sp, agg_wedge e WHERE sp.node = e.src) "
        "SELECT n.name, sp.dist FROM sp JOIN agg_names n ON sp.node = n.id WHERE sp.dist > 0 "
        "ORDER BY sp.dist DESC, n.name"
    )
    dist = single_source_shortest(WEIGHTED, SOURCE)
    expected = sorted(((names[n], d) for n, d in dist.items() if d > 0), key=lambda r: (-r[1], r[0]))
    rows = [tuple(r) for r in query(cur, sql)]
    assert rows == expected, f"{sql}\ngot      {rows}\nexpected {expected}"
    assert [d[0] for d in cur.description] == ["name", "dist"]
