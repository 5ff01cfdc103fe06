"""Array functions inside recursive queries: the local strategy (DuckDB lists) must give Spark's answers,
NULLs, element order, positions counted from 1 (from 0 for a[i]) and ANSI errors included.

Each expression is computed in the exit rule of a recursion and carried one step, under `distributed`
(the reference) and under `local`; a random graph's simple paths, built as arrays, are compared with
networkx too.
"""

from __future__ import annotations

import contextlib
from collections import Counter

import networkx as nx
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import counting_runs, set_strategy

import recsql

ARRAYS = pa.table(
    {
        "id": pa.array([1, 2, 3, 4, 5, 6], pa.int32()),
        "x": pa.array([1, None, 5, 2, 3, None], pa.int32()),
        "p": pa.array([[1, 2, 3], [1, None, 3], None, [], [3, 3, 1], [None, 2, None, 2]], pa.list_(pa.int32())),
        "q": pa.array([[3, 4], [None], [1], None, [1, 3, 3], [2, None]], pa.list_(pa.int32())),
        "s": pa.array([["a", "b"], ["a", None], None, [], ["c", "c"], [None]], pa.list_(pa.string())),
    }
)
CARRIED = (
    "WITH RECURSIVE r(id, v, n) AS (SELECT id, {expression}, 0 FROM la_arrays UNION ALL "
    "SELECT id, v, n + 1 FROM r WHERE n < 1) SELECT id, v FROM r WHERE n = 1"
)

EXPRESSIONS = [
    # membership: unknown (NULL) when not found and a NULL element might have matched
    "array_contains(p, 2)",
    "array_contains(p, x)",
    "array_contains(s, 'a')",
    "arrays_overlap(p, q)",
    "arrays_overlap(p, array(x))",
    "array_position(p, 3)",
    "array_position(p, x)",
    # sets: first occurrences in order, one NULL kept
    "array_distinct(p)",
    "array_distinct(s)",
    "array_except(p, q)",
    "array_union(p, q)",
    "array_union(s, array('c', NULL))",
    "array_intersect(p, q)",
    "array_intersect(s, array('a', NULL))",
    "array_remove(p, 3)",
    "array_remove(p, x)",
    "size(array_distinct(p))",
    "array_contains(array_union(p, q), 3)",
    # positions: element_at from 1 (negative from the end), a[i] and get from 0
    "try_element_at(p, 1)",
    "try_element_at(p, -1)",
    "try_element_at(p, 4)",
    "try_element_at(p, -4)",
    "get(p, 1)",
    "get(p, 5)",
    "get(p, -1)",
    "get(p, x)",
    "CASE WHEN size(p) > 0 THEN p[0] END",
    "slice(p, 2, 2)",
    "slice(p, -2, 2)",
    "slice(p, -5, 2)",
    "array_insert(p, 2, 9)",
    "array_insert(p, 5, x)",
    "array_insert(p, -1, 9)",
    "array_insert(p, -5, 9)",
    # whole arrays: NULL arrays, NULL elements, empty arrays
    "flatten(array(p, p))",
    "flatten(array(p, q))",
    "reverse(p)",
    "reverse(s)",
    "concat(p, q)",
    "concat(p, array(x))",
    "array_append(p, x)",
    "array_prepend(p, x)",
    "array_compact(p)",
    "sort_array(p)",
    "sort_array(p, false)",
    "array_sort(p)",
    "array_max(p)",
    "array_min(p)",
    "size(p)",
    "cardinality(p)",
    "array_size(p)",
    "array_join(s, ',')",
    "array_join(s, ',', '?')",
    "array_repeat(x, 2)",
    "array_repeat(x, id - 3)",
    "sequence(1, x)",
    "sequence(x, 1)",
    "sequence(x, id)",
    "array(x, id)",
    "p = q",
    # lambdas: three-valued forall, indexes from 0
    "forall(p, e -> e > 0)",
    "forall(p, e -> e IS NULL)",
    "forall(s, e -> e <> 'c')",
    "transform(p, e -> e + 1)",
    "transform(p, (e, i) -> e + i)",
    "filter(p, e -> e > 1)",
    "filter(p, (e, i) -> i > 0)",
    "aggregate(p, 0, (acc, e) -> acc + e)",
    "aggregate(p, 0, (acc, e) -> acc + e, acc -> acc * 2)",
    "zip_with(p, q, (a, b) -> a + b)",
]
# Spark's errors under ANSI: an index out of bounds, element_at's index 0
FAILING = [
    "element_at(p, 1)",
    "p[id - id]",
    "element_at(p, 4)",
    "element_at(p, -4)",
    "element_at(p, 0)",
    "element_at(p, x)",
    "p[id - 1]",
    "p[-1]",
    "array_insert(p, 0, 1)",
]
# without ANSI an index out of bounds is NULL (element_at's index 0 stays an error)
WITHOUT_ANSI = ["element_at(p, 4)", "element_at(p, -4)", "p[id - 1]", "p[-1]", "element_at(p, 0)"]


def answer(conn, sql: str):
    """The rows and column types of `sql`, or the class of the recsql error it raises."""
    cursor = conn.cursor()
    try:
        cursor.execute(sql)
        return cursor.fetchall(), [column[1] for column in cursor.description]
    except recsql.Error as error:
        return type(error)
    finally:
        cursor.close()


@contextlib.contextmanager
def spark_setting(conn, name: str, value: str):
    cursor = conn.cursor()
    cursor.execute(f"SET {name} = {value}")
    try:
        yield
    finally:
        cursor.execute(f"SET {name} = true")
        cursor.close()


@pytest.fixture
def both(conn, monkeypatch):
    """Runs a query under `distributed` and under `local` (whose recursive strata must all run locally)."""
    conn.register("la_arrays", ARRAYS)

    def run(sql: str) -> dict:
        set_strategy(conn, "distributed")
        distributed = answer(conn, sql)
        with counting_runs(conn, monkeypatch, "local") as runs:
            local = answer(conn, sql)
        assert runs and not runs.others, (runs, runs.others)
        return {"distributed": distributed, "local": local}

    return run


@pytest.mark.spark
@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_array_function_gives_sparks_answer(both, expression):
    answers = both(CARRIED.format(expression=expression) + " ORDER BY id")
    rows, _ = answers["distributed"]
    assert len(rows) == ARRAYS.num_rows
    assert answers["local"] == answers["distributed"]


@pytest.mark.spark
@pytest.mark.parametrize("expression", FAILING)
def test_array_index_out_of_bounds_is_a_data_error(both, expression):
    answers = both(CARRIED.format(expression=expression))
    assert answers == {"distributed": recsql.DataError, "local": recsql.DataError}


@pytest.mark.spark
@pytest.mark.parametrize("expression", WITHOUT_ANSI)
def test_array_index_without_ansi(conn, both, expression):
    with spark_setting(conn, "spark.sql.ansi.enabled", "false"):
        answers = both(CARRIED.format(expression=expression) + " ORDER BY id")
    assert answers["local"] == answers["distributed"]


PATHS = (
    "WITH RECURSIVE paths(dst, path) AS (SELECT b, array(a, b) FROM la_graph WHERE a <> b UNION ALL "
    "SELECT e.b, concat(p.path, array(e.b)) FROM paths p JOIN la_graph e ON e.a = p.dst "
    "WHERE NOT array_contains(p.path, e.b)) SELECT path, size(path) FROM paths"
)


def simple_paths(edges: set[tuple[int, int]]) -> Counter:
    graph = nx.DiGraph(list(edges))
    return Counter(
        (tuple(path), len(path))
        for source in graph
        for target in graph
        if source != target
        for path in nx.all_simple_paths(graph, source, target)
    )


@pytest.mark.spark
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edges=st.sets(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=8))
def test_simple_paths_as_arrays(conn, monkeypatch, edges):
    sources, targets = zip(*sorted(edges))
    conn.register("la_graph", pa.table({"a": pa.array(sources, pa.int32()), "b": pa.array(targets, pa.int32())}))
    found = {}
    for strategy in ("distributed", "local"):
        with counting_runs(conn, monkeypatch, strategy) as runs:
            rows, _ = answer(conn, PATHS)
        assert runs and not runs.others
        found[strategy] = Counter((tuple(path), size) for path, size in rows)
    assert found["local"] == found["distributed"] == simple_paths(edges)
