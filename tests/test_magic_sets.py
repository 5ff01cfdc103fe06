"""Magic sets: on random graphs with random bound constants, every program shape answers the same with
the rewrite as without it, and the rewrite is really applied; where a LEFT JOIN (or a scalar subquery, which
is one) gives a bound column, the answers are DuckDB's with the rewrite and without it."""

from __future__ import annotations

import re

import duckdb_reference
import pyarrow as pa
import pytest
from duckdb_reference import check, q
from explain import explain
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spark_jobs import spark_jobs
from strategies import under

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
    edges = draw(
        st.lists(
            st.tuples(st.integers(0, nodes - 1), st.integers(0, nodes - 1), st.integers(1, 9)), min_size=1, max_size=18
        )
    )
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


@pytest.mark.spark
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


INT, BIGINT = pa.int32(), pa.int64()


def table(columns: dict[str, pa.DataType], rows: list[tuple]) -> pa.Table:
    return pa.table({name: pa.array([row[i] for row in rows], kind) for i, (name, kind) in enumerate(columns.items())})


EDGE, ROW = {"src": INT, "dst": INT, "w": BIGINT}, {"a": INT, "b": BIGINT, "s": pa.string()}
# a `b` without an equal `a` (NULL, 9) leaves a LEFT JOIN on b = a without a match; NULLs, duplicate rows
OUTER_TABLES = {
    "ms_t": table(ROW, [(1, 2, "x"), (2, 3, None), (3, None, "y"), (None, 1, "x"), (4, 9, "z"), (2, 3, None)]),
    "ms_e": table(EDGE, [(1, 2, 1), (2, 3, 1), (3, 1, 1), (3, 3, 1), (None, 1, 1), (4, None, 1)]),
    # the tables of the random query that found the bug (tests/test_differential.py)
    "ms_e1": table(EDGE, [(None, None, 4), (None, None, 2), (None, 2, 8)] * 2),
    "ms_e2": table(EDGE, [(3, 1, 4), (None, 4, 4), (None, None, 4), (None, 4, 4)]),
    "ms_t1": table(
        ROW,
        [
            (None, 10, "b"),
            (None, None, None),
            (4, 19, ""),
            (4, None, "B"),
            (None, 3, "B"),
            (None, None, "a"),
            (None, None, "ab"),
            (-1, 14, None),
            (None, 15, None),
            (0, 20, None),
            (None, 3, "B"),
            (-1, 14, None),
        ],
    ),
}

duck, ms_tables = duckdb_reference.reference_fixtures(OUTER_TABLES, "ms_tables")

LEFT_JOINED = "SELECT y.a FROM ms_t x LEFT JOIN ms_t y ON x.b = y.a"
REACH = f"WITH RECURSIVE r(n) AS ({LEFT_JOINED} UNION SELECT e.dst FROM r JOIN ms_e e ON r.n = e.src) "
BOUND_BY_AN_OUTER_JOIN = [
    q(REACH + "SELECT x.a, r.n FROM ms_t x JOIN r ON r.n = x.a", id="exit_rule_bound_by_a_join"),
    q(REACH + "SELECT n FROM r WHERE n = 4", allow_empty=True, id="exit_rule_bound_by_a_constant"),
    q(
        "WITH RECURSIVE r(n, m) AS (SELECT x.a, y.a FROM ms_t x LEFT JOIN ms_t y ON x.b = y.a UNION "
        "SELECT r.n, e.dst FROM r JOIN ms_e e ON r.m = e.src) "
        "SELECT r.n, r.m FROM ms_t x JOIN r ON r.m = x.a AND r.n = x.a + 1",
        id="one_of_two_bound_columns",
    ),
    q(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT y.a FROM r JOIN ms_t x ON r.n = x.a LEFT JOIN ms_t y "
        "ON x.b = y.a) SELECT x.a, r.n FROM ms_t x JOIN r ON r.n = x.a",
        id="recursive_rule",
    ),
    q(
        "WITH RECURSIVE r(n) AS (SELECT (SELECT max(y.a) FROM ms_t y WHERE y.b = x.a) FROM ms_t x "
        "UNION SELECT e.dst FROM r JOIN ms_e e ON r.n = e.src) SELECT x.a, r.n FROM ms_t x JOIN r ON r.n = x.a",
        id="scalar_subquery",
    ),
    q(
        "WITH RECURSIVE r(n, min() AS d) AS (SELECT y.a, x.b FROM ms_t x LEFT JOIN ms_t y ON x.b = y.a "
        "UNION SELECT e.dst, r.d + 1 FROM r JOIN ms_e e ON r.n = e.src) SELECT x.a, r.n, r.d FROM ms_t x JOIN r "
        "ON r.n = x.a",
        "WITH RECURSIVE r(n, d) AS (SELECT y.a, x.b FROM ms_t x LEFT JOIN ms_t y ON x.b = y.a UNION "
        "SELECT e.dst, r.d + 1 FROM r JOIN ms_e e ON r.n = e.src WHERE r.d < 20) SELECT x.a, r.n, r.d FROM ms_t x "
        "JOIN (SELECT n, min(d) AS d FROM r GROUP BY n) r ON r.n = x.a",
        id="min_aggregate",
    ),
    # bound through a comparison's join, an EXCEPT in the recursion, GROUP BY / ORDER BY / LIMIT above
    q(
        f"WITH RECURSIVE r(n) AS ({LEFT_JOINED} UNION (SELECT r.n FROM r JOIN ms_t z ON r.n = z.a "
        "WHERE z.b IS NOT NULL EXCEPT SELECT coalesce(e.dst, 2) FROM ms_e e)) "
        "SELECT a.n, count(*) FROM r a JOIN r b ON a.n = b.n AND a.n < 5 WHERE (a.n - a.n) >= a.n - 3 "
        "GROUP BY a.n ORDER BY 1 LIMIT 2",
        ordered=True,
        id="except_in_the_recursion_grouped_and_limited",
    ),
    q(
        "WITH RECURSIVE r0(c0) AS (SELECT x2.a AS c0 FROM ms_t1 x1 LEFT JOIN ms_t1 x2 ON x1.b = x2.a "
        "UNION (SELECT x3.c0 FROM ms_t1 x4 JOIN r0 x3 ON x3.c0 = x4.a WHERE x4.s IS NULL "
        "EXCEPT SELECT coalesce(x5.dst, 2) AS c0 FROM ms_e1 x5 JOIN ms_e2 x6 ON x5.src = x6.dst "
        "AND x5.dst = x5.src GROUP BY coalesce(x5.dst, 2))) "
        "SELECT x10.c0 AS c0, x9.c0 AS c1, x10.c0 AS c2 FROM r0 x9 JOIN r0 x10 ON x9.c0 = x10.c0 AND x9.c0 < 5 "
        "WHERE (x9.c0 - x9.c0) >= x9.c0 GROUP BY x10.c0, x9.c0, x10.c0 HAVING count(*) > 0 "
        "ORDER BY 1 ASC NULLS LAST, 2 ASC NULLS FIRST, 3 ASC NULLS FIRST LIMIT 2 OFFSET 1",
        ordered=True,
        allow_empty=True,
        id="found_by_the_differential_test",
    ),
]


@under("local", "distributed")
@pytest.mark.parametrize("case", BOUND_BY_AN_OUTER_JOIN)
def test_a_bound_column_an_outer_join_gives(ms_tables, cur, duck, case):
    """The magic atom restricting a rule must not bind a LEFT JOIN's column before the join: the rows the
    join leaves without a match have NULL there, not the bound value (which made rows no relation holds)."""
    assert "== Pass 3: magic_sets ==\nused: " in explain(cur, case["sql"], magic="on")
    for magic in ("on", "auto"):
        cur.execute(f"SET recsql.magic = {magic}")
        try:
            check(cur, duck, **case)
        finally:
            cur.execute("SET recsql.magic = auto")
