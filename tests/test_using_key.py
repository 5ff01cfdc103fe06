"""DuckDB's USING KEY recursive CTEs, with DuckDB's meaning: each round's rows replace the row known for their key
(one per key), `t` reads the last round's rows and `recurring.t` every row known so far; under UNION a row the CTE
already holds as it is does not go round again, under UNION ALL it does. The iteration ends with a round without
rows. Compared with DuckDB itself on fixed and random weighted graphs, under every strategy (the one-job forms
decline a USING KEY recursion: it runs on Spark as a job per round). Programs keep one candidate per key in each
round (GROUP BY the key), where DuckDB's choice among several would be its own.
"""

from __future__ import annotations

import duckdb_reference
import pandas as pd
import pytest
from duckdb_reference import check, q, register_both
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recsql

pytestmark = pytest.mark.spark

ALL_STRATEGIES = ("local", "decomposed", "distributed")
FEW_EXAMPLES = settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

UK_E = pd.DataFrame(
    {
        "src": pd.Series([0, 0, 1, 2, 2, 3, 4, 5], dtype="int64"),
        "dst": pd.Series([1, 2, 3, 1, 4, 4, 5, 3], dtype="int64"),
        "w": pd.Series([4, 1, 1, 2, 7, 1, 1, 1], dtype="int64"),
    }
)

duck, uk_tables = duckdb_reference.reference_fixtures({"uk_e": UK_E}, "uk_tables", autouse=True)


def shortest_paths(edges: str) -> str:
    """Distances from node 0: each round, a node's best candidate, kept where it improves the known one."""
    return (
        "WITH RECURSIVE sp(node, dist) USING KEY (node) AS (SELECT 0, 0 UNION SELECT e.dst, min(sp.dist + e.w) "
        f"FROM sp JOIN {edges} e ON e.src = sp.node LEFT JOIN recurring.sp r ON r.node = e.dst GROUP BY e.dst "
        "HAVING min(sp.dist + e.w) < coalesce(min(r.dist), 1000000)) SELECT node, dist FROM sp"
    )


def levels(edges: str) -> str:
    """Breadth-first levels from node 0: a node is reached once, in the first round that finds it."""
    return (
        "WITH RECURSIVE lv(node, level) USING KEY (node) AS (SELECT 0, 0 UNION SELECT e.dst, min(lv.level + 1) "
        f"FROM lv JOIN {edges} e ON e.src = lv.node LEFT JOIN recurring.lv r ON r.node = e.dst "
        "WHERE r.node IS NULL GROUP BY e.dst) SELECT * FROM lv"
    )


def components(edges: str) -> str:
    """Connected components of the undirected graph by label propagation: each node's smallest label."""
    both = f"(SELECT src AS a, dst AS b FROM {edges} UNION SELECT dst, src FROM {edges})"
    return (
        f"WITH RECURSIVE cc(node, label) USING KEY (node) AS (SELECT a, a FROM {both} g GROUP BY a "
        f"UNION SELECT g.b, min(cc.label) FROM cc JOIN {both} g ON g.a = cc.node JOIN recurring.cc r "
        "ON r.node = g.b GROUP BY g.b HAVING min(cc.label) < min(r.label)) SELECT * FROM cc"
    )


CASES = [
    q(shortest_paths("uk_e"), id="shortest_paths"),
    q(levels("uk_e"), id="levels"),
    q(components("uk_e"), id="components"),
    q(
        "WITH RECURSIVE t(k, v) USING KEY (k) AS (SELECT DISTINCT src, 0 FROM uk_e UNION ALL "
        "SELECT k, v + 1 FROM t WHERE v < k) SELECT * FROM t",
        id="union_all_counters",
    ),
    q(
        "WITH RECURSIVE t(k, v) USING KEY (k) AS (SELECT 1, 0 UNION SELECT k, v FROM t) SELECT * FROM t",
        id="union_stops_on_rows_it_holds",
    ),
    q(
        "WITH RECURSIVE t(k, v) USING KEY (k) AS (SELECT src, count(*) FROM uk_e GROUP BY src UNION "
        "SELECT t.k, t.v + r.v FROM t JOIN recurring.t r ON r.k = t.k + 1 WHERE t.v < 20) SELECT * FROM t",
        id="reading_recurring_by_another_key",
    ),
    q(
        "WITH RECURSIVE p(a, b, hops) USING KEY (a, b) AS (SELECT src, dst, 1 FROM uk_e UNION SELECT p.a, e.dst, "
        "min(p.hops + 1) FROM p JOIN uk_e e ON e.src = p.b LEFT JOIN recurring.p r ON r.a = p.a AND r.b = e.dst "
        "WHERE r.a IS NULL GROUP BY p.a, e.dst) SELECT * FROM p",
        id="a_key_of_two_columns",
    ),
]


@pytest.mark.strategies(*ALL_STRATEGIES)
@pytest.mark.parametrize("case", CASES)
def test_using_key_matches_duckdb(case, cur, duck, strategy):
    check(cur, duck, **case)


weighted_edges = st.lists(
    st.tuples(st.integers(0, 7), st.integers(0, 7), st.integers(1, 9)),
    min_size=1,
    max_size=16,
    unique_by=lambda e: e[:2],
)


@pytest.mark.strategies(*ALL_STRATEGIES)
@FEW_EXAMPLES
@given(edges=weighted_edges)
def test_random_graphs_match_duckdb(edges, conn, cur, strategy):
    reference = duckdb_reference.connect({})
    frame = pd.DataFrame(edges, columns=["src", "dst", "w"]).astype("int64")
    register_both(conn, reference, "uk_random", frame)
    try:
        for sql in (shortest_paths("uk_random"), levels("uk_random"), components("uk_random")):
            check(cur, reference, sql, allow_empty=True)
    finally:
        reference.close()


def test_explain_names_the_iteration_and_the_recurring_reads(cur):
    cur.execute("EXPLAIN " + shortest_paths("uk_e"))
    plan = "\n".join(row[0] for row in cur.fetchall())
    assert "(recursive: USING KEY iteration" in plan
    assert "left recurring sp(" in plan


@pytest.mark.parametrize(
    "sql, error, message",
    [
        (
            "WITH RECURSIVE t(k, v) USING KEY (k) AS (SELECT 1, 0 UNION SELECT k, v + 1 FROM t WHERE v < 3) "
            "SELECT * FROM recurring.t",
            recsql.ProgrammingError,
            "'recurring.t' reads a USING KEY recursive CTE within its own recursive branches only",
        ),
        (
            "WITH RECURSIVE t(k, v) USING KEY (x) AS (SELECT 1, 0 UNION SELECT k, v + 1 FROM t WHERE v < 3) "
            "SELECT * FROM t",
            recsql.ProgrammingError,
            "USING KEY names 'x', not a column of 't'",
        ),
        (
            "WITH RECURSIVE t(k) USING KEY (k) AS (SELECT 1 UNION SELECT k + 1 FROM t WHERE k < 3) SELECT * FROM t",
            recsql.ProgrammingError,
            "USING KEY of 't' needs a column outside the key",
        ),
        (
            "CREATE MATERIALIZED VIEW uk_mv AS WITH RECURSIVE t(k, v) USING KEY (k) AS (SELECT 1, 0 UNION "
            "SELECT k, v + 1 FROM t WHERE v < 3) SELECT * FROM t",
            recsql.NotSupportedError,
            "USING KEY rounds replace rows",
        ),
    ],
)
def test_what_is_refused_says_why(cur, sql, error, message):
    with pytest.raises(error, match=message):
        cur.execute(sql)
