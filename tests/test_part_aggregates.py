"""Aggregates over a recursive relation computed in the one-job forms' tasks (planner/part_aggregate.py,
strategies/reduction.py): the tasks reduce their facts to partial aggregates, Spark combines them. Each
answer is checked against DuckDB over the closure networkx computes, and its column types against the
in-process evaluation's, which aggregates the facts themselves."""

from __future__ import annotations

import random
from collections import Counter
from decimal import Decimal

import duckdb
import networkx as nx
import pyarrow as pa
import pytest
from duckdb_reference import normalize
from explain import explain
from strategies import auto_with_local_rows, set_strategy

import recsql

pytestmark = pytest.mark.spark

CLOSURE = (
    "WITH RECURSIVE tc(x, y) AS (SELECT src, dst FROM pa_edges{where} UNION "
    "SELECT tc.x, e.dst FROM tc JOIN pa_edges e ON tc.y = e.src) "
)
SHORTEST = (
    "WITH RECURSIVE sp(node, min() AS d) AS (SELECT 0, {zero} UNION "
    "SELECT e.dst, sp.d + e.w FROM sp JOIN pa_edges e ON sp.node = e.src) "
)
COMPONENTS = (
    "WITH RECURSIVE cc(node, min() AS label) AS (SELECT src, src FROM pa_both UNION "
    "SELECT e.dst, cc.label FROM cc JOIN pa_both e ON cc.node = e.src) "
)
OVER_CLOSURE = [
    "SELECT count(*), count(DISTINCT y), min(y), max(x), sum(y), sum(DISTINCT x) FROM tc",
    "SELECT x, count(*), sum(y), min(y), max(y) FROM tc GROUP BY x",  # grouped by the pivot
    "SELECT y, count(x), max(x), count(DISTINCT x) FROM tc GROUP BY y",  # by another column
]
REDUCED = "its tasks aggregated their facts for"


def graph(seed: int, nodes: int = 40, edges: int = 90) -> list[tuple[int, int, int]]:
    rng = random.Random(seed)
    return [(rng.randrange(nodes), rng.randrange(nodes), rng.randrange(1, 9)) for _ in range(edges)]


@pytest.fixture(scope="module", params=[3, 11])
def edges(request, conn):
    """A random graph's edges, registered as a pyarrow table of int64 columns (as pandas brings them)."""
    rows = graph(request.param)
    columns = {name: [row[i] for row in rows] for i, name in enumerate(("src", "dst", "w"))}
    conn.register("pa_edges", pa.table(columns))
    both = {"src": columns["src"] + columns["dst"], "dst": columns["dst"] + columns["src"]}
    conn.register("pa_both", pa.table(both))
    return rows


def reference(facts: dict[str, tuple[list[str], list[tuple]]], sql: str) -> list[tuple]:
    """`sql` run by DuckDB over the given relations (name: column names, rows)."""
    with duckdb.connect() as duck:
        for name, (columns, rows) in facts.items():
            duck.execute(f"CREATE TABLE {name} ({', '.join(c + ' BIGINT' for c in columns)})")
            if rows:
                duck.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' for _ in columns)})", rows)
        return duck.execute(sql).fetchall()


def closure(rows: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    g = nx.DiGraph((src, dst) for src, dst, _ in rows)
    return [(src, dst) for src in g for dst in nx.descendants(g, src) | ({src} if in_cycle(g, src) else set())]


def in_cycle(g: nx.DiGraph, node: int) -> bool:
    return any(node in nx.descendants(g, successor) | {successor} for successor in g.successors(node))


def run(conn, strategy: str, sql: str) -> tuple[list[tuple], list[object], str]:
    """The answer, its column types and EXPLAIN ANALYZE's text under `strategy`."""
    set_strategy(conn, strategy)
    cursor = conn.cursor()
    cursor.execute(sql)
    rows, types = cursor.fetchall(), [column[1] for column in cursor.description]
    return rows, types, explain(cursor, sql, analyze=True)


def check(conn, sql: str, expected: list[tuple], strategies: tuple[str, ...], reduced: bool = True) -> None:
    _, local_types, _ = run(conn, "local", sql)
    for strategy in strategies:
        rows, types, analyzed = run(conn, strategy, sql)
        assert Counter(normalize(rows)) == Counter(normalize(expected)), strategy
        assert types == local_types, strategy
        assert (REDUCED in analyzed) == reduced, analyzed


@pytest.mark.parametrize("query", OVER_CLOSURE)
def test_aggregates_over_a_closure(conn, edges, query):
    sql = CLOSURE.format(where="") + query
    expected = reference({"tc": (["x", "y"], closure(edges))}, query)
    check(conn, sql, expected, ("decomposed", "distributed"))


def test_shortest_paths_from_a_literal_anchor_whose_types_widen(conn, edges):
    g = nx.DiGraph()
    g.add_node(0)
    for src, dst, w in edges:
        if not g.has_edge(src, dst) or g[src][dst]["weight"] > w:
            g.add_edge(src, dst, weight=w)
    distances = list(nx.single_source_dijkstra_path_length(g, 0).items())
    query = "SELECT count(*), sum(d), max(d), min(node) FROM sp"
    expected = reference({"sp": (["node", "d"], distances)}, query)
    check(conn, SHORTEST.format(zero="0") + query, expected, ("distributed",))


def test_a_count_of_distinct_labels(conn, edges):
    g = nx.Graph((src, dst) for src, dst, _ in edges)
    labels = [(node, min(component)) for component in nx.connected_components(g) for node in component]
    query = "SELECT count(DISTINCT label), count(*) FROM cc"
    check(conn, COMPONENTS + query, reference({"cc": (["node", "label"], labels)}, query), ("distributed",))


def test_an_empty_fixpoint_counts_zero_and_sums_null(conn, edges):
    query = "SELECT count(*), count(y), sum(y), min(x) FROM tc"
    check(conn, CLOSURE.format(where=" WHERE src < 0") + query, [(0, 0, None, None)], ("decomposed", "distributed"))
    grouped = "SELECT x, count(*) FROM tc GROUP BY x"
    check(conn, CLOSURE.format(where=" WHERE src < 0") + grouped, [], ("decomposed",))


def test_sums_of_floating_point_numbers(conn, edges):
    conn.register("pa_fractions", pa.table({"src": [1, 2, 3], "dst": [2, 3, 4], "w": [0.5, 0.25, 1.0]}))
    sql = (
        "WITH RECURSIVE p(a, b, s) AS (SELECT src, dst, w FROM pa_fractions UNION "
        "SELECT p.a, e.dst, p.s + e.w FROM p JOIN pa_fractions e ON p.b = e.src) SELECT a, sum(s), count(*) FROM p "
        "GROUP BY a"
    )
    check(conn, sql, [(1, 0.5 + 0.75 + 1.75, 3), (2, 0.25 + 1.25, 2), (3, 1.0, 1)], ("decomposed",))


def test_a_sum_of_decimals_is_combined_by_spark_from_the_facts(conn, edges):
    """Spark types a sum of partial DECIMAL sums wider than the sum itself: the tasks return their facts."""
    weights = pa.array([Decimal("0.5"), Decimal("0.25"), Decimal("1.00")], pa.decimal128(6, 2))
    conn.register("pa_money", pa.table({"src": [1, 2, 3], "dst": [2, 3, 4], "w": weights}))
    sql = (
        "WITH RECURSIVE p(a, b, s) AS (SELECT src, dst, w FROM pa_money UNION "
        "SELECT p.a, e.dst, p.s + e.w FROM p JOIN pa_money e ON p.b = e.src) SELECT sum(s), count(*) FROM p"
    )
    expected = [(Decimal("0.5") + Decimal("0.75") + Decimal("1.75") + Decimal("0.25") + Decimal("1.25") + 1, 6)]
    check(conn, sql, expected, ("decomposed",), reduced=False)


def test_explain_names_the_aggregate_its_tasks_compute(conn, edges):
    cursor = conn.cursor()
    set_strategy(conn, "distributed")
    text = explain(cursor, CLOSURE.format(where="") + "SELECT count(*) FROM tc")
    assert "aggregated in its tasks, the facts kept there: agg(count<*>) :- tc(" in text
    set_strategy(conn, "local")
    assert "aggregated in its tasks" not in explain(cursor, CLOSURE.format(where="") + "SELECT count(*) FROM tc")


def test_a_local_run_past_its_bound_aggregates_in_the_tasks_it_moves_to(conn, edges):
    query = "SELECT count(*), max(y) FROM tc"
    sql = CLOSURE.format(where="") + query
    expected = reference({"tc": (["x", "y"], closure(edges))}, query)
    with auto_with_local_rows(conn, 200):  # inputs within, the closure past it
        cursor = conn.cursor()
        cursor.execute(sql)
        assert cursor.fetchall() == expected
        analyzed = explain(cursor, sql, analyze=True)
    assert "past recsql.local_rows" in analyzed
    assert REDUCED in analyzed


def test_partial_rows_past_local_rows_are_combined_on_spark(conn, edges):
    """More partial rows than recsql.local_rows (as estimated) stay on Spark, kept in a checkpoint."""
    query = OVER_CLOSURE[2]
    expected = reference({"tc": (["x", "y"], closure(edges))}, query)
    conn.cursor().execute("SET recsql.local_rows = 1")
    check(conn, CLOSURE.format(where="") + query, expected, ("decomposed", "distributed"))


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_a_sum_past_bigint_fails_or_wraps_as_sparks_own(conn, edges, ansi):
    """Under ANSI mode an overflowing sum is a DataError; without it the sum wraps around, as Spark's."""
    big = 2**62
    conn.register("pa_big", pa.table({"src": [1, 2, 3], "dst": [2, 3, 4], "w": [big, big, big]}))
    sql = (
        "WITH RECURSIVE p(a, b, s) AS (SELECT src, dst, w FROM pa_big UNION "
        "SELECT p.a, e.dst, e.w FROM p JOIN pa_big e ON p.b = e.src) SELECT sum(s), count(*) FROM p"
    )
    cursor = conn.cursor()
    cursor.execute(f"SET spark.sql.ansi.enabled = {ansi}")
    try:
        for strategy in ("decomposed", "distributed"):
            set_strategy(conn, strategy)
            if ansi == "true":
                with pytest.raises(recsql.DataError, match="SUM\\(s\\) is past the range of BIGINT"):
                    cursor.execute(sql)
            else:
                cursor.execute(sql)
                assert cursor.fetchall() == [(6 * big - 2 * 2**64, 6)]  # 1.5 * 2**64, wrapped into BIGINT: -2**63
    finally:
        cursor.execute("SET spark.sql.ansi.enabled = true")
