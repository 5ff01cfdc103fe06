"""EXPLAIN ANALYZE lists every recursive relation with its iterations and the new facts of each, however its
stratum runs: the whole query in this process, in this process inside a plan on Spark, decomposed or
distributed on Spark, one recursion among several, mutual recursion, and a recursion that outgrows this
process and goes on (or starts again) on Spark.

Reference: a semi-naive evaluation in plain Python, iteration by iteration (the new facts of each).
"""

from __future__ import annotations

import re

import pyarrow as pa
import pytest
from explain import explain
from strategies import auto_with_local_rows, under

STEP = re.compile(r"^(?P<names>[\w, ]+) (?:exit rules|iteration (?P<iteration>\d+)): (?P<facts>.*), [\d.]+ s$")


def analyzed(cur, sql: str) -> dict[tuple[str, ...], list[dict[str, int]]]:
    return iterations(explain(cur, sql, analyze=True))


def iterations(text: str) -> dict[tuple[str, ...], list[dict[str, int]]]:
    """The new facts of each relation, iteration by iteration (0: the exit rules), of each recursive stratum
    EXPLAIN ANALYZE lists; its iterations must be listed in order, each once."""
    lines = text.splitlines()
    strata: dict[tuple[str, ...], list[dict[str, int]]] = {}
    for line in lines[lines.index("== Analyze ==") :]:
        match = STEP.match(line)
        if match is None:
            continue
        names = tuple(match["names"].split(", "))
        iterations = strata.setdefault(names, [])
        assert int(match["iteration"] or 0) == len(iterations), text
        iterations.append({name: int(n) for name, n in re.findall(r"(\w+) \+(\d+)", match["facts"])})
    return strata


def closure_deltas(edges: list[tuple[int, int]]) -> list[int]:
    """The new facts of each iteration of tc(a, b) :- edge(a, b). tc(a, c) :- tc(a, b), edge(b, c)."""
    known = set(edges)
    deltas, new = [len(known)], set(known)
    while new:
        new = {(a, d) for a, b in new for c, d in edges if b == c} - known
        known |= new
        deltas.append(len(new))
    return deltas


def mutual_deltas(edges: list[tuple[int, int]]) -> list[dict[str, int]]:
    """odd(x, y) :- edge(x, y). odd(x, z) :- even(x, y), edge(y, z). even(x, z) :- odd(x, y), edge(y, z):
    the new facts of each, every iteration reading the new facts of the one before."""
    odd, even = set(edges), set()
    new_odd, new_even = set(odd), set()
    deltas = [{"odd": len(odd), "even": 0}]
    while new_odd or new_even:
        new_odd, new_even = (
            {(x, z) for x, y in new_even for a, z in edges if a == y} - odd,
            {(x, z) for x, y in new_odd for a, z in edges if a == y} - even,
        )
        odd |= new_odd
        even |= new_even
        deltas.append({"odd": len(new_odd), "even": len(new_even)})
    return deltas


def register(conn, name: str, edges: list[tuple[int, int]]) -> None:
    conn.register(name, pa.table({"src": [a for a, _ in edges], "dst": [b for _, b in edges]}))


GRAPH = [(1, 2), (2, 3), (3, 4), (4, 1), (2, 5), (5, 6)]
CLOSURE = (
    "WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM ea_edge UNION "
    "SELECT tc.a, e.dst FROM tc JOIN ea_edge e ON tc.b = e.src) SELECT count(*) FROM tc"
)


@pytest.fixture(scope="module", autouse=True)
def tables(conn):
    register(conn, "ea_edge", GRAPH)
    register(conn, "ea_chain", [(1, 2), (2, 3), (3, 4)])


@under("local", "decomposed", "distributed")
def test_a_closure_lists_its_iterations(cur):
    assert analyzed(cur, CLOSURE) == {("tc",): [{"tc": n} for n in closure_deltas(GRAPH)]}


@under("local")
def test_a_union_all_recursion_in_this_process(cur):
    """The statement's own example: five rows, one per iteration, and an iteration deriving none."""
    found = analyzed(cur, "WITH RECURSIVE q(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM q WHERE n < 5) SELECT * FROM q")
    assert found == {("q",): [{"q": 1}] * 5 + [{"q": 0}]}


MUTUAL = (
    "WITH RECURSIVE odd(x, y) AS (SELECT src, dst FROM ea_chain UNION "
    "SELECT ev.x, e.dst FROM even ev JOIN ea_chain e ON ev.y = e.src), "
    "even(x, y) AS (SELECT o.x, e.dst FROM odd o JOIN ea_chain e ON o.y = e.src) SELECT count(*) FROM even"
)


@under("local", "distributed")
def test_mutual_recursion_lists_both_relations(cur):
    assert analyzed(cur, MUTUAL) == {("odd", "even"): mutual_deltas([(1, 2), (2, 3), (3, 4)])}


@under("local")
def test_several_recursions_are_each_listed(cur):
    sql = (
        "WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM ea_edge UNION "
        "SELECT tc.a, e.dst FROM tc JOIN ea_edge e ON tc.b = e.src), "
        "up(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM up WHERE n < 3) SELECT count(*) FROM tc, up"
    )
    assert analyzed(cur, sql) == {
        ("tc",): [{"tc": n} for n in closure_deltas(GRAPH)],
        ("up",): [{"up": 1}] * 3 + [{"up": 0}],
    }


@pytest.mark.spark
def test_a_recursion_moving_from_this_process_to_spark(conn, cur):
    """The closure of a de Bruijn graph outgrows recsql.local_rows = 1000 after a few iterations in this
    process, and goes on decomposed on Spark: every iteration is listed once, those in this process and
    those on Spark."""
    edges = sorted({(node, 2 * node % 64) for node in range(64)} | {(node, (2 * node + 1) % 64) for node in range(64)})
    register(conn, "ea_debruijn", edges)
    sql = (
        "WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM ea_debruijn UNION "
        "SELECT tc.a, e.dst FROM tc JOIN ea_debruijn e ON tc.b = e.src) SELECT count(*) FROM tc"
    )
    with auto_with_local_rows(conn, 1000):
        text = explain(cur, sql, analyze=True)
    assert iterations(text) == {("tc",): [{"tc": n} for n in closure_deltas(edges)]}
    assert "past recsql.local_rows" in text
