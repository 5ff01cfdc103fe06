"""`*` and `t.*` wherever a column list is derived from them: SEARCH and CYCLE over a CTE whose branches select
`*` (PostgreSQL's own tests are written so), a recursive CTE with or without a column list whose first branch
selects `*` (mutual recursion included), set operations' branches, `*` beside other items, over joins and CTEs,
and ORDER BY over `*`.

References: DuckDB for what it evaluates (linear recursion, ORDER BY); for SEARCH / CYCLE, which DuckDB lacks, a
walk of the graph in plain Python, and the same query with its columns written out; for mutual recursion, the
closure computed in plain Python.
"""

from __future__ import annotations

from collections import Counter

import duckdb_reference
import pandas as pd
import pytest
from duckdb_reference import check, q
from helpers import rows
from reference import transitive_closure
from strategies import module_under

import recsql

ARCS = [(1, 2), (1, 3), (2, 3), (1, 4), (4, 5)]
CYCLIC = ARCS + [(5, 1)]
TABLES = {
    "st_graph": pd.DataFrame(
        {"f": [f for f, _ in ARCS], "t": [t for _, t in ARCS], "label": [f"arc {f} -> {t}" for f, t in ARCS]}
    ),
    "st_cyclic": pd.DataFrame(
        {"f": [f for f, _ in CYCLIC], "t": [t for _, t in CYCLIC], "label": [f"arc {f} -> {t}" for f, t in CYCLIC]}
    ),
    "st_edge": pd.DataFrame({"a": [1, 2, 3, 3, 4], "b": [2, 3, 1, 4, 5]}),
}
duck, st_tables = duckdb_reference.reference_fixtures(TABLES, "st_tables", autouse=True)
pytestmark = module_under("local")  # what is tested is the translation, the same under every strategy


def walks(arcs: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """Every walk along the arcs of an acyclic graph (from any arc): what a UNION ALL recursion extending
    each row by the arcs leaving its end derives."""
    found, frontier = [], [[arc] for arc in arcs]
    while frontier:
        found += frontier
        frontier = [walk + [(f, t)] for walk in frontier for f, t in arcs if f == walk[-1][1]]
    return found


def walks_to_first_repeat(arcs: list[tuple[int, int]], key=lambda arc: arc) -> list[list[tuple[int, int]]]:
    """Every walk from any arc that stops at the first arc whose `key` is already on it (that walk included)."""
    found, frontier = [], [[arc] for arc in arcs]
    while frontier:
        found += frontier
        frontier = [
            walk + [(f, t)]
            for walk in frontier
            if key(walk[-1]) not in map(key, walk[:-1])
            for f, t in arcs
            if f == walk[-1][1]
        ]
    return found


def label(arc: tuple[int, int]) -> str:
    return f"arc {arc[0]} -> {arc[1]}"


def step(arc: tuple[int, int]) -> dict:
    return {"f": arc[0], "t": arc[1]}


# ---------------------------------------------------------------------------------------------------------------
# SEARCH and CYCLE
# ---------------------------------------------------------------------------------------------------------------

STARRED = "SELECT * FROM {table} g UNION ALL SELECT g.* FROM {table} g, sg WHERE g.f = sg.t"
WRITTEN = "SELECT f, t, label FROM {table} g UNION ALL SELECT g.f, g.t, g.label FROM {table} g, sg WHERE g.f = sg.t"


def recursion(body: str, clause: str, header: bool, table: str = "st_graph", select: str = "SELECT * FROM sg") -> str:
    """PostgreSQL's search_graph query: `body` (STARRED or WRITTEN) over `table`, the CTE with its column list
    or without, `clause` after it."""
    name = "sg(f, t, label)" if header else "sg"
    return f"WITH RECURSIVE {name} AS ({body.format(table=table)}) {clause} {select}"


@pytest.mark.spark
@pytest.mark.parametrize("header", [True, False], ids=["column list", "no column list"])
def test_search_depth_first_over_star(cur, header):
    """PostgreSQL's test: the walks of the graph, each right after the walk it extends."""
    clause = "SEARCH DEPTH FIRST BY f, t SET seq"
    found = rows(cur, recursion(STARRED, clause, header, select="SELECT * FROM sg ORDER BY seq"))
    expected = sorted(walks(ARCS))
    assert found == [(*walk[-1], label(walk[-1]), [step(arc) for arc in walk]) for walk in expected]
    assert found == rows(cur, recursion(WRITTEN, clause, header, select="SELECT * FROM sg ORDER BY seq"))


@pytest.mark.spark
@pytest.mark.parametrize("header", [True, False], ids=["column list", "no column list"])
def test_search_breadth_first_over_star(cur, header):
    """Level by level: a walk's depth is its length less one."""
    clause = "SEARCH BREADTH FIRST BY f, t SET seq"
    found = rows(cur, recursion(STARRED, clause, header, select="SELECT * FROM sg ORDER BY seq"))
    expected = sorted(walks(ARCS), key=lambda walk: (len(walk), walk[-1]))
    assert found == [(*walk[-1], label(walk[-1]), {"depth": len(walk) - 1, **step(walk[-1])}) for walk in expected]
    assert found == rows(cur, recursion(WRITTEN, clause, header, select="SELECT * FROM sg ORDER BY seq"))


@pytest.mark.spark
@pytest.mark.parametrize("header", [True, False], ids=["column list", "no column list"])
def test_cycle_over_star(cur, header):
    """PostgreSQL's test on a graph with a cycle: every walk up to the arc that repeats one on it, marked."""
    clause = "CYCLE f, t SET is_cycle USING path"
    found = rows(cur, recursion(STARRED, clause, header, table="st_cyclic"))
    expected = Counter(
        (*walk[-1], label(walk[-1]), walk[-1] in walk[:-1], tuple(walk)) for walk in walks_to_first_repeat(CYCLIC)
    )
    assert (
        Counter((f, t, name, mark, tuple((s["f"], s["t"]) for s in path)) for f, t, name, mark, path in found)
        == expected
    )
    assert Counter(map(repr, found)) == Counter(
        map(repr, rows(cur, recursion(WRITTEN, clause, header, table="st_cyclic")))
    )


@pytest.mark.spark
def test_search_and_cycle_over_star_beside_other_items(cur):
    """`*` beside a computed item, the clauses naming columns on either side of it (and one past the star)."""
    body = (
        "SELECT *, 0 AS depth FROM st_cyclic g UNION ALL "
        "SELECT g.*, sg.depth + 1 FROM st_cyclic g JOIN sg ON g.f = sg.t"
    )
    query = (
        f"WITH RECURSIVE sg AS ({body}) SEARCH DEPTH FIRST BY t, depth SET seq CYCLE t SET c USING p "
        "SELECT f, t, depth, seq, c, p FROM sg ORDER BY seq"
    )
    found = rows(cur, query)
    expected = sorted(
        walks_to_first_repeat(CYCLIC, key=lambda arc: arc[1]),
        key=lambda walk: [(arc[1], depth) for depth, arc in enumerate(walk)],
    )
    assert [(f, t, depth) for f, t, depth, *_ in found] == [(*walk[-1], len(walk) - 1) for walk in expected]
    for (*_, seq, mark, path), walk in zip(found, expected):
        ends = [arc[1] for arc in walk]
        assert (seq, mark, path) == ([{"t": t, "depth": i} for i, t in enumerate(ends)], ends[-1] in ends[:-1], ends)


# ---------------------------------------------------------------------------------------------------------------
# column lists of CTEs and set operations, * over joins and CTEs
# ---------------------------------------------------------------------------------------------------------------

CASES = [
    q(
        "WITH RECURSIVE r AS (SELECT * FROM st_edge WHERE a = 1 UNION SELECT e.* FROM r JOIN st_edge e ON r.b = e.a) "
        "SELECT * FROM r",
        id="no column list, * in both branches",
    ),
    q(
        "WITH RECURSIVE r(x, y) AS (SELECT * FROM st_edge WHERE a = 1 UNION SELECT e.* FROM r JOIN st_edge e "
        "ON r.y = e.a) SELECT r.* FROM r",
        id="column list over *",
    ),
    q(
        "WITH RECURSIVE r AS (SELECT 0 AS d, * FROM st_edge WHERE a = 1 UNION ALL SELECT r.d + 1, e.* FROM r "
        "JOIN st_edge e ON r.b = e.a WHERE r.d < 4) SELECT * FROM r",
        id="* beside other items",
    ),
    q(
        "WITH c AS (SELECT * FROM st_edge), d AS (SELECT c.*, x.b AS c FROM c JOIN st_edge x ON c.b = x.a) "
        "SELECT * FROM d",
        id="* over a CTE and a join",
    ),
    q("SELECT x.*, y.* FROM st_edge x JOIN st_edge y USING (a)", id="t.* over a join with USING"),
    q("SELECT * FROM st_edge UNION SELECT b, a FROM st_edge", id="* in the first branch of a UNION"),
    q("SELECT a, b FROM st_edge EXCEPT SELECT e.* FROM st_edge e WHERE a > 2", id="t.* in EXCEPT"),
    q("SELECT * FROM st_edge ORDER BY a + b DESC, a", ordered=True, id="ORDER BY an expression over *"),
    q(
        "SELECT * FROM st_edge x JOIN st_edge y ON x.b = y.a ORDER BY y.b DESC, x.a",
        ordered=True,
        id="ORDER BY qualified columns over *",
    ),
    q(
        "SELECT x.*, 1 AS one FROM st_edge x JOIN st_edge y ON x.b = y.a ORDER BY y.b, x.a",
        ordered=True,
        id="ORDER BY a column t.* leaves out",
    ),
    q(
        "SELECT DISTINCT x.* FROM st_edge x JOIN st_edge y ON x.b = y.a ORDER BY x.b",
        ordered=True,
        id="DISTINCT t.* ORDER BY one of its columns",
    ),
    q("SELECT * FROM (SELECT * FROM st_edge ORDER BY a * b DESC LIMIT 2)", id="a subquery's ORDER BY over *"),
    q(
        "SELECT * FROM st_edge JOIN st_edge f USING (a) ORDER BY a, st_edge.b, f.b",
        ordered=True,
        id="ORDER BY the USING column of *",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_star_matches_duckdb(cur, duck, case):
    check(cur, duck, **case)


def test_distinct_star_orders_only_by_its_columns(cur):
    with pytest.raises(recsql.ProgrammingError, match="ORDER BY expressions must appear in the select list"):
        cur.execute("SELECT DISTINCT x.* FROM st_edge x JOIN st_edge y ON x.b = y.a ORDER BY y.b")


@pytest.mark.parametrize("order", ["c first", "d first"])
def test_mutual_recursion_whose_first_branches_select_star(cur, order):
    """Each CTE's first branch reads the other's `*`: the columns of one are known from its own first branch,
    and those of the other from them, whichever comes first in the WITH."""
    c = "c AS (SELECT * FROM d UNION SELECT c.a, e.b FROM c JOIN st_edge e ON c.b = e.a)"
    d = "d AS (SELECT * FROM st_edge WHERE a = 1 UNION SELECT * FROM c)"
    ctes = f"{c}, {d}" if order == "c first" else f"{d}, {c}"
    edges = list(zip(TABLES["st_edge"]["a"], TABLES["st_edge"]["b"]))
    assert set(rows(cur, f"WITH RECURSIVE {ctes} SELECT * FROM c")) == {
        (x, y) for x, y in transitive_closure(edges) if x == 1
    }
    written = (
        "WITH RECURSIVE c(a, b) AS (SELECT a, b FROM d UNION SELECT c.a, e.b FROM c JOIN st_edge e "
        "ON c.b = e.a), d(a, b) AS (SELECT a, b FROM st_edge WHERE a = 1 UNION SELECT a, b FROM c) "
        "SELECT * FROM c"
    )
    assert set(rows(cur, f"WITH RECURSIVE {ctes} SELECT * FROM c")) == set(rows(cur, written))
