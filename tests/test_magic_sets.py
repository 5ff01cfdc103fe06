"""Magic sets: on random graphs with random bound constants, every program shape answers the same with
the rewrite as without it, and the rewrite is really applied."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explain import explain
from spark_jobs import spark_jobs

SHAPES = {
    "left-linear closure": """
        WITH RECURSIVE r(x, y) AS (SELECT src, dst FROM mg_edge
            UNION SELECT r.x, e.dst FROM r JOIN mg_edge e ON r.y = e.src)
        SELECT y FROM r WHERE x = ?""",
    "right-linear closure": """
        WITH RECURSIVE r(x, y) AS (SELECT src, dst FROM mg_edge
            UNION SELECT e.src, r.y FROM mg_edge e JOIN r ON e.dst = r.x)
        SELECT y FROM r WHERE x = ?""",
    "non-linear closure": """
        WITH RECURSIVE r(x, y) AS (SELECT src, dst FROM mg_edge
            UNION SELECT a.x, b.y FROM r a JOIN r b ON a.y = b.x)
        SELECT y FROM r WHERE x = ?""",
    "second argument bound": """
        WITH RECURSIVE r(x, y) AS (SELECT src, dst FROM mg_edge
            UNION SELECT r.x, e.dst FROM r JOIN mg_edge e ON r.y = e.src)
        SELECT x FROM r WHERE y = ?""",
    "same generation": """
        WITH RECURSIVE sg(x, y) AS (
            SELECT p1.dst, p2.dst FROM mg_edge p1 JOIN mg_edge p2 ON p1.src = p2.src WHERE p1.dst <> p2.dst
            UNION SELECT a.dst, b.dst FROM mg_edge a, sg, mg_edge b WHERE a.src = sg.x AND b.src = sg.y)
        SELECT y FROM sg WHERE x = ?""",
    "shortest paths with min()": """
        WITH RECURSIVE sp(s, d, min() AS c) AS (SELECT src, dst, w FROM mg_edge
            UNION SELECT sp.s, e.dst, sp.c + e.w FROM sp JOIN mg_edge e ON sp.d = e.src)
        SELECT d, c FROM sp WHERE s = ?""",
    "mutual recursion": """
        WITH RECURSIVE odd(x, y) AS (SELECT src, dst FROM mg_edge
                UNION SELECT ev.x, e.dst FROM even ev JOIN mg_edge e ON ev.y = e.src),
            even(x, y) AS (SELECT o.x, e.dst FROM odd o JOIN mg_edge e ON o.y = e.src)
        SELECT 'even' AS kind, y FROM even WHERE x = ? UNION ALL SELECT 'odd', y FROM odd WHERE x = 0""",
    "bound by a join with a small table": """
        WITH RECURSIVE r(x, y) AS (SELECT src, dst FROM mg_edge
            UNION SELECT r.x, e.dst FROM r JOIN mg_edge e ON r.y = e.src)
        SELECT s.id, r.y FROM r JOIN mg_start s ON r.x = s.id WHERE s.id <> ?""",
}


@st.composite
def graphs(draw):
    nodes = draw(st.integers(2, 9))
    edges = draw(st.lists(st.tuples(st.integers(0, nodes - 1), st.integers(0, nodes - 1), st.integers(1, 9)),
                          min_size=1, max_size=18))
    start = draw(st.integers(0, nodes - 1))
    return edges, start


def load(conn, edges):
    src, dst, weight = zip(*edges)
    conn.register("mg_edge", pa.table({"src": list(src), "dst": list(dst), "w": list(weight)}))
    conn.register("mg_start", pa.table({"id": sorted({s for s in src[:3]})}))


def answer(cur, sql, start, magic):
    cur.execute(f"SET recsql.magic = {magic}")
    try:
        cur.execute(sql, (start,))
        return sorted(cur.fetchall(), key=repr)
    finally:
        cur.execute("SET recsql.magic = auto")


def rewritten(cur, sql, start) -> bool:
    plan = explain(cur, sql, (start,), magic="on")
    return "== Pass 3: magic_sets ==\nused: " in plan and "m_" in plan


@pytest.mark.parametrize("shape", list(SHAPES))
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(graph=graphs())
def test_magic_sets_do_not_change_answers(conn, cur, shape, graph):
    edges, start = graph
    load(conn, edges)
    sql = SHAPES[shape]
    assert rewritten(cur, sql, start)
    assert answer(cur, sql, start, "on") == answer(cur, sql, start, "off")


def test_free_query_is_not_rewritten(conn, cur):
    load(conn, [(0, 1, 1), (1, 2, 1)])
    sql = SHAPES["left-linear closure"].replace("WHERE x = ?", "")
    plan = explain(cur, sql, magic="on")
    assert "m_r" not in plan
    cur.execute(sql)
    assert sorted(cur.fetchall()) == [(1,), (2,), (2,)]


def test_auto_strategy_runs_the_restricted_recursion_locally(conn, cur):
    """On small tables `auto` evaluates the whole magic-set-rewritten query in one process, without a
    Spark job, with the same answer."""
    load(conn, [(i, (i * 3 + 1) % 40, 1) for i in range(40)] + [(i, i + 1, 1) for i in range(39)])
    sql = SHAPES["left-linear closure"]
    expected = answer(cur, sql, 5, "off")
    previous = conn.session.settings.strategy
    cur.execute("SET recsql.strategy = auto")
    try:
        plan = explain(cur, sql, (5,))
        assert re.search(r"r\s+\(recursive: semi-naive fixpoint, local, in one process; past [\d,]+ facts", plan)
        assert "runs without Spark: the whole query in this process (DuckDB over Arrow)" in plan
        assert answer(cur, sql, 5, "on") == expected
        assert spark_jobs(conn, sql, "magic-sets-auto", (5,)) == 0
    finally:
        cur.execute(f"SET recsql.strategy = {previous}")
