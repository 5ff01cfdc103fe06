"""The answer's row window (LIMIT / OFFSET / FETCH FIRST), a LIMIT that stops a recursion, and PostgreSQL's SEARCH
and CYCLE clauses, on every strategy.

References: DuckDB for the row windows of ordinary queries; plain Python for what the clauses mean: a depth-first
sequence is the path of values from the root (so ORDER BY it is a depth-first walk), a breadth-first one the level
then the values, and CYCLE's rows are the walks from the start rows that end at the first repeated row, the one
repeating it marked.
"""

from __future__ import annotations

import random
from collections import Counter

import duckdb
import pytest
from helpers import rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import EVERY_STRATEGY, under

import recsql

STRATEGIES = EVERY_STRATEGY
RANDOM = settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def fill(cur, table, columns, values):
    cur.execute(f"CREATE OR REPLACE TABLE {table} ({columns})")
    if values:
        cur.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(values[0]))})", values)


# ---------------------------------------------------------------------------------------------------------------
# LIMIT, OFFSET, FETCH FIRST
# ---------------------------------------------------------------------------------------------------------------

WINDOWS = [
    "SELECT x FROM (VALUES (1), (2), (3)) v(x) ORDER BY x LIMIT 2 OFFSET 1",
    "SELECT x FROM (VALUES (1), (2), (3)) v(x) ORDER BY x DESC OFFSET 1",
    "SELECT x FROM (VALUES (1), (2), (3)) v(x) ORDER BY x OFFSET 1 ROWS FETCH FIRST 1 ROWS ONLY",
    "SELECT x FROM (VALUES (1), (2), (3)) v(x) ORDER BY x LIMIT 5 OFFSET 3",
    "SELECT x FROM (VALUES (1), (2), (3)) v(x) UNION SELECT 4 ORDER BY 1 LIMIT 2 OFFSET 2",
    "WITH RECURSIVE t(n) AS (SELECT 1 UNION SELECT n + 1 FROM t WHERE n < 10) SELECT n FROM t ORDER BY n "
    "LIMIT 3 OFFSET 4",
]


SUBQUERY_WINDOWS = [  # w is unique but for a NULL, so that every window is one set of rows
    "SELECT * FROM (SELECT a, b FROM sc_weighted ORDER BY w DESC LIMIT 3) t",
    "SELECT a FROM (SELECT a FROM sc_weighted ORDER BY b, a LIMIT 2 OFFSET 1)",
    "SELECT count(*) FROM (SELECT DISTINCT a FROM sc_weighted ORDER BY a LIMIT 2)",
    "SELECT * FROM sc_weighted WHERE a IN (SELECT a FROM sc_weighted ORDER BY w LIMIT 2)",
    "WITH light AS (SELECT a, b FROM sc_weighted ORDER BY w LIMIT 3) SELECT * FROM light JOIN sc_weighted USING (a)",
    "SELECT * FROM (SELECT a FROM sc_weighted UNION SELECT b FROM sc_weighted ORDER BY 1 DESC LIMIT 2)",
    "SELECT * FROM (SELECT * FROM sc_weighted LIMIT 0)",
    "SELECT x FROM (SELECT a AS x FROM sc_weighted ORDER BY a + b DESC, w LIMIT 3)",
    "SELECT x FROM (SELECT a AS x FROM sc_weighted ORDER BY w NULLS LAST OFFSET 4)",
    # a recursion joining the lightest edges only (the subquery is computed before the recursion)
    "WITH RECURSIVE t(x, y) AS (SELECT a, b FROM sc_weighted UNION SELECT t.x, light.b FROM t "
    "JOIN (SELECT a, b FROM sc_weighted ORDER BY w LIMIT 4) light ON t.y = light.a) SELECT * FROM t",
]
WEIGHTED = [(1, 2, 5), (2, 3, 1), (3, 4, 7), (1, 3, 2), (4, 5, 3), (2, 5, None)]


@pytest.mark.parametrize("sql", WINDOWS)
@under(*STRATEGIES)
def test_row_windows_match_duckdb(cur, sql):
    assert rows(cur, sql) == duckdb.sql(sql).fetchall()


@pytest.fixture(scope="module")
def weighted(conn):
    fill(conn.cursor(), "sc_weighted", "a INT, b INT, w INT", WEIGHTED)
    reference = duckdb.connect()
    reference.execute("SET default_null_order = 'nulls_first_on_asc_last_on_desc'")  # Spark's
    reference.execute("CREATE TABLE sc_weighted (a INT, b INT, w INT)")
    reference.executemany("INSERT INTO sc_weighted VALUES (?, ?, ?)", WEIGHTED)
    return reference


@pytest.mark.parametrize("sql", SUBQUERY_WINDOWS)
@under(*STRATEGIES)
def test_subquery_windows_match_duckdb(cur, weighted, sql):
    assert Counter(rows(cur, sql)) == Counter(weighted.sql(sql).fetchall())


@pytest.mark.parametrize(
    "sql, message",
    [
        ("SELECT 1 OFFSET x", "OFFSET takes a non-negative integer"),
        ("SELECT 1 FETCH FIRST 50 PERCENT ROWS ONLY", "FETCH FIRST takes a row count"),
        (
            "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM (SELECT n FROM t ORDER BY n LIMIT 1) s "
            "WHERE n < 3) SELECT * FROM t",
            "LIMIT / OFFSET through recursion",
        ),
    ],
)
def test_row_windows_refused(cur, weighted, sql, message):
    with pytest.raises(recsql.Error, match=message):
        cur.execute(sql)


@pytest.mark.parametrize(
    "sql, expected",
    [
        # an endless count: its first rows
        ("WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT * FROM t LIMIT 10", 10),
        ("WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT n FROM t LIMIT 3 OFFSET 2", 3),
        # rows that double every iteration
        (
            "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n FROM t UNION ALL SELECT n + 1 FROM t) "
            "SELECT * FROM t LIMIT 50",
            50,
        ),
        # set semantics, DISTINCT over a set relation
        ("WITH RECURSIVE t(n) AS (SELECT 1 UNION SELECT n + 1 FROM t) SELECT DISTINCT n FROM t LIMIT 4", 4),
    ],
)
@under(*STRATEGIES)
def test_limit_stops_an_endless_recursion(cur, sql, expected):
    """Each row returned is one of the recursion's (n counts up from 1 by steps of one, each a value n >= 1
    the recursion derives); how many the LIMIT says."""
    found = rows(cur, sql)
    assert len(found) == expected
    assert all(isinstance(n, int) and n >= 1 for (n,) in found)
    values = sorted(n for (n,) in found)
    assert values[0] <= expected + 2 and values[-1] <= 64  # early rows, not a recursion run far past the limit


def test_limit_over_an_ordered_endless_recursion_still_fails(cur):
    """ORDER BY needs every row: the recursion runs to its iteration limit and says so."""
    cur.execute("SET recsql.max_iterations = 30")
    try:
        with pytest.raises(recsql.OperationalError, match="recsql.max_iterations"):
            cur.execute(
                "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT n FROM t ORDER BY n LIMIT 3"
            )
    finally:
        cur.execute("SET recsql.max_iterations = 10000")


@under("local", "distributed")
def test_rows_that_double_stop_before_passing_max_rows(cur):
    """The iteration that would pass recsql.max_rows is not run: the error comes after 2 ** 10 - 1 rows,
    not after the iteration deriving the next 2 ** 10."""
    cur.execute("SET recsql.max_rows = 1500")
    try:
        with pytest.raises(
            recsql.OperationalError,
            match=r"is bound to derive more than 1500 rows by iteration 10: "
            r"1023 rows by iteration 9",
        ):
            cur.execute(
                "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n FROM t UNION ALL SELECT n + 1 FROM t) "
                "SELECT count(*) FROM t"
            )
    finally:
        cur.execute("SET recsql.max_rows = 100000000")


# ---------------------------------------------------------------------------------------------------------------
# SEARCH DEPTH / BREADTH FIRST
# ---------------------------------------------------------------------------------------------------------------


def random_tree(seed: int, nodes: int) -> list[tuple[int, int | None]]:
    """(id, parent) of a random tree over 1..nodes with root 1, ids shuffled so that order tells nothing."""
    rng = random.Random(seed)
    labels = rng.sample(range(1, 100), nodes)
    return [(labels[i], labels[rng.randrange(i)] if i else None) for i in range(nodes)]


def root_paths(tree: list[tuple[int, int | None]]) -> dict[int, list[int]]:
    parent = dict(tree)
    paths = {}
    for node in parent:
        path, at = [], node
        while at is not None:
            path.append(at)
            at = parent[at]
        paths[node] = path[::-1]
    return paths


TREE_WALK = (
    "WITH RECURSIVE t(id) AS (SELECT id FROM sc_tree WHERE parent IS NULL UNION ALL "
    "SELECT sc_tree.id FROM t JOIN sc_tree ON sc_tree.parent = t.id) {clause} SELECT * FROM t ORDER BY seq"
)


def walked(cur, seed: int, nodes: int, kind: str) -> tuple[dict[int, list[int]], list[tuple]]:
    """A random tree's root paths, and its walk in the order of SEARCH `kind` FIRST."""
    tree = random_tree(seed, nodes)
    fill(cur, "sc_tree", "id INT, parent INT", tree)
    return root_paths(tree), rows(cur, TREE_WALK.format(clause=f"SEARCH {kind} FIRST BY id SET seq"))


@given(seed=st.integers(0, 10_000), nodes=st.integers(1, 12))
@RANDOM
@under(*STRATEGIES)
def test_search_depth_first_orders_a_depth_first_walk(cur, seed, nodes):
    paths, found = walked(cur, seed, nodes, "DEPTH")
    assert found == sorted(((node, path) for node, path in paths.items()), key=lambda row: row[1])


@pytest.mark.spark
@given(seed=st.integers(0, 10_000), nodes=st.integers(1, 12))
@RANDOM
@under(*STRATEGIES)
def test_search_breadth_first_orders_level_by_level(cur, seed, nodes):
    paths, found = walked(cur, seed, nodes, "BREADTH")
    levels = {node: len(path) - 1 for node, path in paths.items()}
    assert [node for node, _ in found] == sorted(levels, key=lambda node: (levels[node], node))
    assert all(seq == {"depth": levels[node], "id": node} for node, seq in found)


# ---------------------------------------------------------------------------------------------------------------
# CYCLE
# ---------------------------------------------------------------------------------------------------------------


def walks_to_first_repeat(edges: list[tuple[int, int]], start: int) -> Counter:
    """(a, b, closes a cycle, path) of every walk along `edges` from the edges leaving `start`, a walk stopping
    at the first edge already on it (that edge's row marked)."""
    found, frontier = Counter(), [((a, b), ((a, b),)) for a, b in edges if a == start]
    while frontier:
        extended = []
        for (a, b), path in frontier:
            marked = (a, b) in path[:-1]
            found[(a, b, marked, path)] += 1
            if not marked:
                extended += [((b, c), path + ((b, c),)) for x, c in edges if x == b]
        frontier = extended
    return found


@pytest.mark.spark
@given(edges=st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5)), max_size=8, unique=True))
@RANDOM
@under(*STRATEGIES)
def test_cycle_marks_the_row_closing_a_cycle_and_stops_there(cur, edges):
    fill(cur, "sc_graph", "a INT, b INT", edges)
    found = rows(
        cur,
        "WITH RECURSIVE p(a, b) AS (SELECT a, b FROM sc_graph WHERE a = 1 UNION ALL "
        "SELECT sc_graph.a, sc_graph.b FROM p JOIN sc_graph ON p.b = sc_graph.a) "
        "CYCLE a, b SET closes USING path SELECT * FROM p",
    )
    walked = Counter((a, b, closes, tuple((step["a"], step["b"]) for step in path)) for a, b, closes, path in found)
    assert walked == walks_to_first_repeat(edges, 1)


@pytest.mark.spark
@under(*STRATEGIES)
def test_search_and_cycle_together_with_marks_of_their_own(cur):
    fill(cur, "sc_ring", "a INT, b INT", [(1, 2), (2, 3), (3, 1), (2, 4)])
    found = rows(
        cur,
        "WITH RECURSIVE p(n) AS (SELECT a FROM sc_ring WHERE a = 1 UNION ALL "
        "SELECT sc_ring.b FROM p JOIN sc_ring ON p.n = sc_ring.a) "
        "SEARCH DEPTH FIRST BY n SET s CYCLE n SET c TO 'Y' DEFAULT 'N' USING route "
        "SELECT n, s, c, route FROM p ORDER BY s",
    )
    assert found == [
        (1, [1], "N", [1]),
        (2, [1, 2], "N", [1, 2]),
        (3, [1, 2, 3], "N", [1, 2, 3]),
        (1, [1, 2, 3, 1], "Y", [1, 2, 3, 1]),
        (4, [1, 2, 4], "N", [1, 2, 4]),
    ]


@pytest.mark.parametrize(
    "sql, message",
    [
        (
            "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) SEARCH DEPTH FIRST BY m SET s "
            "SELECT * FROM t",
            "SEARCH column 'm' is not a column of the CTE",
        ),
        (
            "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT a.n + b.n FROM t a, t b WHERE a.n < 3) "
            "CYCLE n SET c USING p SELECT * FROM t",
            "reads 't' once per branch",
        ),
        (
            "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SEARCH n SET s SELECT * FROM t",
            "Expected DEPTH or BREADTH after SEARCH",
        ),
    ],
)
def test_search_and_cycle_errors_say_what_and_where(cur, sql, message):
    with pytest.raises(recsql.Error, match=message) as error:
        cur.execute(sql)
    assert "line 1" in str(error.value)
