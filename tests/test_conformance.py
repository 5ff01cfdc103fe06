"""Conformance of recursive queries (WITH RECURSIVE), area by area: termination of UNION and UNION ALL, LIMIT over
an unbounded recursion, the types of literals in the non-recursive term, hierarchies, recursive views (plain and
materialized), nested WITH clauses, several CTEs referring to each other (forward, mutual and non-linear
references), outer joins and subqueries around a recursive result, and the errors recsql gives.

Each answer is checked against DuckDB (tests/duckdb_reference.py: the same tables, answers compared as multisets
unless the query orders them totally) or, where DuckDB does not evaluate the query the way recsql documents it
(mutual and non-linear recursion, aggregates in the CTE header), against a few lines of Python over networkx.

Where the engines type a recursion differently: recsql gives a recursive column the common type of both branches
(as Spark types a UNION), DuckDB the type of the non-recursive term. Those cases give DuckDB the non-recursive term
cast to that common type, and compare values.

Tables and views carry a `conf_` prefix.
"""

from __future__ import annotations

import duckdb_reference
import networkx as nx
import pandas as pd
import pytest
from duckdb_reference import check, normalize, q, register_both
from helpers import edge_lists, rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import transitive_closure
from strategies import EVERY_STRATEGY

import recsql

ALL_STRATEGIES = EVERY_STRATEGY
IN_ONE_PROCESS_AND_ON_SPARK = ("local", "distributed")  # for the costlier cases
FEW_EXAMPLES = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# ---------------------------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------------------------


def edge_frame(pairs, columns=("src", "dst")) -> pd.DataFrame:
    first, second = columns
    return pd.DataFrame(
        {
            first: pd.Series([a for a, _ in pairs], dtype="int64"),
            second: pd.Series([b for _, b in pairs], dtype="int64"),
        }
    )


# A 3-cycle with a self-loop hanging off it, a separate 2-cycle, an exit from the 3-cycle.
CYCLE_EDGES = [(1, 2), (2, 3), (3, 1), (3, 4), (4, 4), (5, 6), (6, 5), (2, 7)]
# Acyclic, with several paths between the same nodes (1 -> 6 four ways).
DAG_EDGES = [(1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (1, 5), (5, 6), (2, 6)]
# A reporting line: `boss` NULL for the head of it.
STAFF = pd.DataFrame(
    {
        "id": pd.Series(range(1, 10), dtype="int64"),
        "name": ["ada", "ben", "cy", "dee", "eve", "fay", "gus", "hal", "ivy"],
        "boss": pd.array([None, 1, 1, 2, 2, 3, 5, 5, 7], dtype="Int64"),
        "salary": pd.Series([300, 200, 210, 120, 150, 90, 80, 70, 60], dtype="int64"),
    }
)
NODE = pd.DataFrame({"id": pd.Series(range(1, 10), dtype="int64"), "label": list("abcdefghi")})

TABLES = {
    "conf_cycle": edge_frame(CYCLE_EDGES),
    "conf_dag": edge_frame(DAG_EDGES),
    "conf_staff": STAFF,
    "conf_node": NODE,
}


duck, conf_tables = duckdb_reference.reference_fixtures(TABLES, "conf_tables")


# ---------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------


def check_recursive(cur, duck, strategy, case: dict) -> None:
    """`case` (a catalogue entry) against DuckDB; a recursive stratum must have run for it."""
    check(cur, duck, **case)
    assert len(strategy) + len(strategy.others) >= 1, "no recursive stratum ran"


def assert_rows(got, expected) -> None:
    """Rows compared as sets with Python's own answer (no duplicates on either side)."""
    got = normalize(got)
    assert len(got) == len(set(got)), f"duplicate rows: {sorted(got)}"
    assert set(got) == set(normalize(expected)), sorted(set(got) ^ set(expected))[:10]


def refused(cur, sql: str, error: type, fragment: str) -> str:
    """`sql` must fail with exactly `error` (a recsql.Error) whose message holds `fragment`; the message."""
    with pytest.raises(recsql.Error) as raised:
        cur.execute(sql)
    assert type(raised.value) is error, f"{type(raised.value).__name__}: {raised.value}"
    assert fragment in str(raised.value), str(raised.value)
    return str(raised.value)


def trees(max_size: int = 12):
    """Random rooted trees as (parent, child) edges: node i's parent is one of the nodes before it."""
    return st.integers(2, max_size).flatmap(
        lambda size: st.tuples(*[st.integers(1, child - 1) for child in range(2, size + 1)]).map(
            lambda parents: [(parent, child) for child, parent in enumerate(parents, start=2)]
        )
    )


REACH_CYCLE = (
    "WITH RECURSIVE reach(n) AS (SELECT 1 UNION SELECT e.dst FROM reach JOIN conf_cycle e ON e.src = reach.n) "
)
PATHS_CYCLE = (
    "WITH RECURSIVE p(a, b) AS (SELECT src, dst FROM conf_cycle UNION "
    "SELECT p.a, e.dst FROM p JOIN conf_cycle e ON e.src = p.b) "
)

# ---------------------------------------------------------------------------------------------------------------
# 1. UNION against UNION ALL: termination and duplicates
# ---------------------------------------------------------------------------------------------------------------

TERMINATION = [
    q(REACH_CYCLE + "SELECT n FROM reach", id="union_reachability_on_a_cycle_terminates"),
    q(PATHS_CYCLE + "SELECT a, b FROM p", names=True, id="union_closure_of_a_cyclic_graph"),
    q(
        "WITH RECURSIVE w(n) AS (SELECT 1 UNION ALL SELECT e.dst FROM w JOIN conf_dag e ON e.src = w.n) "
        "SELECT n FROM w",
        id="union_all_keeps_one_row_per_path",
    ),
    q(
        "WITH RECURSIVE w(n) AS (SELECT 1 UNION ALL SELECT e.dst FROM w JOIN conf_dag e ON e.src = w.n) "
        "SELECT n, count(*) AS paths FROM w GROUP BY n",
        id="union_all_path_counts_grouped",
    ),
    q(
        "WITH RECURSIVE w(a, b) AS (SELECT src, dst FROM conf_dag UNION ALL SELECT w.a, e.dst FROM w "
        "JOIN conf_dag e ON e.src = w.b) SELECT a, b FROM w",
        id="union_all_pairs_with_duplicates",
    ),
    q(
        "WITH RECURSIVE w(a, b) AS (SELECT src, dst FROM conf_dag UNION SELECT w.a, e.dst FROM w "
        "JOIN conf_dag e ON e.src = w.b) SELECT a, b FROM w",
        id="union_pairs_without_duplicates",
    ),
    q(
        "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 25) SELECT n FROM c",
        id="union_all_counter_stops_on_its_condition",
    ),
]


@pytest.mark.strategies(*ALL_STRATEGIES)
@pytest.mark.parametrize("case", TERMINATION)
def test_termination_matches_duckdb(case, conf_tables, cur, duck, strategy):
    check_recursive(cur, duck, strategy, case)


@pytest.mark.strategies(*IN_ONE_PROCESS_AND_ON_SPARK)
def test_union_all_on_a_cycle_is_stopped_by_max_iterations(conf_tables, cur, strategy):
    cur.execute("SET recsql.max_iterations = 12")
    try:
        message = refused(
            cur,
            "WITH RECURSIVE w(n) AS (SELECT 1 UNION ALL SELECT e.dst FROM w JOIN conf_cycle e "
            "ON e.src = w.n) SELECT n FROM w",
            recsql.OperationalError,
            "recsql.max_iterations",
        )
    finally:
        cur.execute("SET recsql.max_iterations = 10000")
    assert "'w'" in message and "within 12 iterations" in message, message


@pytest.mark.strategies(*IN_ONE_PROCESS_AND_ON_SPARK)
@FEW_EXAMPLES
@given(pairs=edge_lists())
def test_union_closure_of_random_graphs_matches_duckdb(pairs, conn, cur, strategy):
    duck = duckdb_reference.connect({})
    register_both(conn, duck, "conf_random", edge_frame(pairs))
    sql = (
        "WITH RECURSIVE p(a, b) AS (SELECT src, dst FROM conf_random UNION SELECT p.a, e.dst FROM p "
        "JOIN conf_random e ON e.src = p.b) SELECT a, b FROM p"
    )
    try:
        assert set(check(cur, duck, sql)) == transitive_closure(pairs)
    finally:
        duck.close()


# ---------------------------------------------------------------------------------------------------------------
# 2. LIMIT over a recursion
# ---------------------------------------------------------------------------------------------------------------

UNBOUNDED = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) "
BOUNDED = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 20) "

LIMITS = [
    q(UNBOUNDED + "SELECT * FROM t LIMIT 10", id="limit_stops_an_unbounded_recursion"),
    q(UNBOUNDED + "SELECT n FROM t LIMIT 5 OFFSET 3", id="limit_and_offset_over_an_unbounded_recursion"),
    q(UNBOUNDED + "SELECT * FROM t FETCH FIRST 3 ROWS ONLY", id="fetch_first_over_an_unbounded_recursion"),
    q(
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION SELECT n + 1 FROM t) SELECT * FROM t LIMIT 7",
        id="limit_stops_an_unbounded_union",
    ),
    q(
        "WITH RECURSIVE t(n, s) AS (SELECT 1, 'a' UNION ALL SELECT n + 1, s || 'b' FROM t) SELECT * FROM t LIMIT 4",
        id="limit_over_two_growing_columns",
    ),
    q(BOUNDED + "SELECT n FROM t ORDER BY n DESC LIMIT 4", ordered=True, id="order_by_and_limit"),
    q(BOUNDED + "SELECT n FROM t ORDER BY n LIMIT 3 OFFSET 5", ordered=True, id="order_by_limit_and_offset"),
    q(
        "WITH RECURSIVE d(id, depth) AS (SELECT id, 0 FROM conf_staff WHERE boss IS NULL UNION ALL "
        "SELECT s.id, d.depth + 1 FROM conf_staff s JOIN d ON s.boss = d.id) "
        "SELECT id, depth FROM d ORDER BY depth DESC, id LIMIT 3",
        ordered=True,
        id="order_by_two_keys_and_limit",
    ),
]


@pytest.mark.spark
@pytest.mark.strategies(*ALL_STRATEGIES)
@pytest.mark.parametrize("case", LIMITS)
def test_limit_matches_duckdb(case, conf_tables, cur, duck, strategy):
    check_recursive(cur, duck, strategy, case)


@pytest.mark.strategies(*ALL_STRATEGIES)
def test_limit_0_over_an_unbounded_recursion_returns_no_row(conf_tables, cur, strategy):
    """No row is wanted: the recursion stops after its first facts instead of at recsql.max_iterations."""
    assert rows(cur, UNBOUNDED + "SELECT * FROM t LIMIT 0") == []


# ---------------------------------------------------------------------------------------------------------------
# 3. Literals in the non-recursive term and the types of the recursive columns
# ---------------------------------------------------------------------------------------------------------------


def widened(sql: str, anchor: str, cast_anchor: str, **options):
    """A case whose DuckDB text casts the non-recursive term's literal to the type recsql widens the column to."""
    assert anchor in sql
    return q(sql, sql.replace(anchor, cast_anchor, 1), **options)


LITERALS = [
    q(
        "WITH RECURSIVE t(n, s) AS (SELECT 1, 'a' UNION ALL SELECT n + 1, s || 'b' FROM t WHERE n < 4) "
        "SELECT n, s FROM t",
        id="integer_and_string_literals",
    ),
    q(
        "WITH RECURSIVE t(n, s) AS (SELECT 1, 'x' UNION SELECT n + 1, upper(s) FROM t WHERE n < 3) SELECT n, s FROM t",
        id="string_literal_through_a_function",
    ),
    q(
        "WITH RECURSIVE t(n, x) AS (SELECT 1, CAST(NULL AS INT) UNION ALL SELECT n + 1, n * 2 FROM t WHERE n < 4) "
        "SELECT n, x FROM t",
        id="typed_null",
    ),
    widened(
        "WITH RECURSIVE t(n, s) AS (SELECT 1, NULL UNION ALL SELECT n + 1, 'x' FROM t WHERE n < 4) SELECT n, s FROM t",
        "SELECT 1, NULL",
        "SELECT 1, CAST(NULL AS VARCHAR)",
        id="null_widened_to_string",
    ),
    widened(
        "WITH RECURSIVE t(n, x) AS (SELECT 1, NULL UNION ALL SELECT n + 1, n * 2 FROM t WHERE n < 4) "
        "SELECT n, x FROM t",
        "SELECT 1, NULL",
        "SELECT 1, CAST(NULL AS INT)",
        id="null_widened_to_integer",
    ),
    widened(
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n * 3000000000 FROM t WHERE n < 10) SELECT n FROM t",
        "SELECT 1 ",
        "SELECT CAST(1 AS BIGINT) ",
        id="integer_widened_to_bigint",
    ),
    widened(
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT CAST(n AS BIGINT) * 100000 FROM t "
        "WHERE n < 1000000000000) SELECT n FROM t",
        "SELECT 1 ",
        "SELECT CAST(1 AS BIGINT) ",
        id="integer_widened_by_a_cast_to_bigint",
    ),
    widened(
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 0.5 FROM t WHERE n < 3) SELECT n FROM t",
        "SELECT 1 ",
        "SELECT CAST(1 AS DECIMAL(16, 1)) ",
        id="integer_widened_to_decimal",
    ),
    widened(
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n / 2.0 FROM t WHERE n > 0.1) SELECT n FROM t",
        "SELECT 1 ",
        "SELECT CAST(1 AS DOUBLE) ",
        id="integer_widened_by_a_decimal_division",
    ),
    widened(
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n * 1.5e0 FROM t WHERE n < 10) SELECT n FROM t",
        "SELECT 1 ",
        "SELECT CAST(1 AS DOUBLE) ",
        id="integer_widened_to_double",
    ),
    q(
        "WITH RECURSIVE r(n, k) AS (SELECT src, 0 FROM conf_dag WHERE src = 1 UNION ALL "
        "SELECT e.dst, r.k + 1 FROM r JOIN conf_dag e ON e.src = r.n) SELECT n, k FROM r",
        id="bigint_column_beside_an_integer_literal",
    ),
]


@pytest.mark.spark
@pytest.mark.strategies(*ALL_STRATEGIES)
@pytest.mark.parametrize("case", LITERALS)
def test_literals_in_the_non_recursive_term_match_duckdb(case, conf_tables, cur, duck, strategy):
    check_recursive(cur, duck, strategy, case)


# ---------------------------------------------------------------------------------------------------------------
# 4. Hierarchies
# ---------------------------------------------------------------------------------------------------------------

BELOW = (
    "WITH RECURSIVE below(top, id) AS (SELECT id, id FROM conf_staff UNION "
    "SELECT b.top, s.id FROM below b JOIN conf_staff s ON s.boss = b.id) "
)

HIERARCHIES = [
    q(
        "WITH RECURSIVE d(id, depth) AS (SELECT id, 0 FROM conf_staff WHERE boss IS NULL UNION ALL "
        "SELECT s.id, d.depth + 1 FROM conf_staff s JOIN d ON s.boss = d.id) SELECT id, depth FROM d",
        names=True,
        id="depth_of_everyone",
    ),
    q(
        "WITH RECURSIVE up(id) AS (SELECT boss FROM conf_staff WHERE id = 9 UNION SELECT s.boss FROM conf_staff s "
        "JOIN up ON s.id = up.id WHERE s.boss IS NOT NULL) SELECT id FROM up",
        id="ancestors_of_one",
    ),
    q(
        "WITH RECURSIVE down(id) AS (SELECT id FROM conf_staff WHERE boss = 2 UNION SELECT s.id FROM conf_staff s "
        "JOIN down ON s.boss = down.id) SELECT d.id, s.name FROM down d JOIN conf_staff s ON s.id = d.id",
        id="descendants_of_one_with_names",
    ),
    q(BELOW + "SELECT top, count(*) AS size FROM below GROUP BY top", id="subtree_sizes"),
    q(
        BELOW + "SELECT b.top, sum(s.salary) AS payroll FROM below b JOIN conf_staff s ON s.id = b.id GROUP BY b.top",
        id="subtree_payrolls",
    ),
    q(BELOW + "SELECT top FROM below WHERE top <> id GROUP BY top HAVING count(*) >= 2", id="managers_of_two_or_more"),
    q(BELOW + "SELECT top FROM below WHERE top <> id GROUP BY top", id="managers_grouped_without_aggregate"),
    q(
        "WITH RECURSIVE up(id) AS (SELECT boss FROM conf_staff WHERE id = 9 UNION SELECT s.boss FROM conf_staff s "
        "JOIN up ON s.id = up.id WHERE s.boss IS NOT NULL GROUP BY s.boss) SELECT id FROM up",
        id="recursive_branch_grouped_without_aggregate",
    ),
]


@pytest.mark.strategies(*ALL_STRATEGIES)
@pytest.mark.parametrize("case", HIERARCHIES)
def test_hierarchies_match_duckdb(case, conf_tables, cur, duck, strategy):
    check_recursive(cur, duck, strategy, case)


def staff_tree() -> nx.DiGraph:
    return nx.DiGraph([(int(boss), int(who)) for who, boss in zip(STAFF.id, STAFF.boss) if not pd.isna(boss)])


@pytest.mark.strategies(*ALL_STRATEGIES)
def test_subtree_sizes_by_a_count_in_the_header(conf_tables, cur, strategy):
    sql = (
        "WITH RECURSIVE size(id, count() AS n) AS (SELECT id, 1 FROM conf_staff) UNION "
        "(SELECT s.boss, size.n FROM size JOIN conf_staff s ON s.id = size.id WHERE s.boss IS NOT NULL) "
        "SELECT id, n FROM size"
    )
    tree = staff_tree()
    assert_rows(rows(cur, sql), [(node, len(nx.descendants(tree, node)) + 1) for node in tree])


@pytest.mark.strategies(*ALL_STRATEGIES)
def test_depths_by_a_min_in_the_header(conf_tables, cur, strategy):
    sql = (
        "WITH RECURSIVE depth(id, min() AS d) AS (SELECT id, 0 FROM conf_staff WHERE boss IS NULL) UNION "
        "(SELECT s.id, depth.d + 1 FROM depth JOIN conf_staff s ON s.boss = depth.id) SELECT id, d FROM depth"
    )
    assert_rows(rows(cur, sql), nx.single_source_shortest_path_length(staff_tree(), 1).items())


@pytest.mark.strategies(*IN_ONE_PROCESS_AND_ON_SPARK)
@FEW_EXAMPLES
@given(edges=trees())
def test_subtree_sizes_of_random_trees(edges, conn, cur, strategy):
    conn.register("conf_random_tree", edge_frame(edges, ("parent", "child")))
    sql = (
        "WITH RECURSIVE size(node, count() AS n) AS (SELECT child, 1 FROM conf_random_tree UNION "
        "SELECT 1, 1) UNION (SELECT t.parent, size.n FROM size JOIN conf_random_tree t ON t.child = size.node) "
        "SELECT node, n FROM size"
    )
    tree = nx.DiGraph(edges)
    assert_rows(rows(cur, sql), [(node, len(nx.descendants(tree, node)) + 1) for node in tree])


# ---------------------------------------------------------------------------------------------------------------
# 5. Recursive views
# ---------------------------------------------------------------------------------------------------------------

VIEWS = {
    "conf_v_reach": PATHS_CYCLE + "SELECT a, b FROM p",
    "conf_v_depth": (
        "WITH RECURSIVE d(id, depth) AS (SELECT id, 0 FROM conf_staff WHERE boss IS NULL UNION ALL "
        "SELECT s.id, d.depth + 1 FROM conf_staff s JOIN d ON s.boss = d.id) SELECT id, depth FROM d"
    ),
    "conf_v_sources": PATHS_CYCLE + "SELECT a FROM p GROUP BY a",
}


@pytest.fixture(scope="module")
def conf_views(conf_tables, duck):
    cursor = conf_tables.cursor()
    for name, query in VIEWS.items():
        for target in (cursor, duck):
            target.execute(f"CREATE OR REPLACE VIEW {name} AS {query}")
    cursor.close()
    return VIEWS


VIEW_QUERIES = [
    q("SELECT a, b FROM conf_v_reach", id="whole_view"),
    q("SELECT a, b FROM conf_v_reach WHERE a = 5", id="view_filtered_on_its_first_column"),
    q("SELECT a FROM conf_v_reach WHERE b = 4", id="view_filtered_on_its_second_column"),
    q(
        "SELECT v.a, count(*) AS n FROM conf_v_reach v JOIN conf_node n ON n.id = v.b GROUP BY v.a",
        id="view_joined_and_grouped",
    ),
    q(
        "SELECT s.name, v.depth FROM conf_v_depth v JOIN conf_staff s ON s.id = v.id WHERE v.depth >= 2",
        id="view_of_depths_filtered",
    ),
    q(
        "SELECT depth, count(*) AS n FROM conf_v_depth GROUP BY depth ORDER BY depth",
        ordered=True,
        id="view_of_depths_grouped_and_ordered",
    ),
    q("SELECT v.a, n.label FROM conf_v_sources v JOIN conf_node n ON n.id = v.a", id="view_grouped_without_aggregate"),
]


@pytest.mark.strategies(*ALL_STRATEGIES)
@pytest.mark.parametrize("case", VIEW_QUERIES)
def test_recursive_views_match_duckdb(case, conf_views, cur, duck, strategy):
    check_recursive(cur, duck, strategy, case)


MATERIALIZED_CLOSURE = (
    "WITH RECURSIVE r(a, b) AS (SELECT src, dst FROM conf_mv_edge UNION SELECT r.a, e.dst "
    "FROM r JOIN conf_mv_edge e ON e.src = r.b) SELECT a, b FROM r"
)
MATERIALIZED_DISTANCE = (
    "WITH RECURSIVE sp(node, min() AS d) AS (SELECT 1, 0) UNION (SELECT e.dst, sp.d + 1 "
    "FROM sp JOIN conf_mv_edge e ON e.src = sp.node) SELECT node, d FROM sp"
)


def test_materialized_recursive_views_follow_their_base_table(cur, duck):
    """After each write to the base table, each view equals its query computed afresh, DuckDB's closure and
    networkx's distances."""
    for target in (cur, duck):
        target.execute("CREATE TABLE conf_mv_edge (src INT, dst INT)")
    writes = [
        "INSERT INTO conf_mv_edge VALUES (1, 2), (2, 3), (3, 1), (4, 5)",
        "INSERT INTO conf_mv_edge VALUES (5, 6), (3, 4)",
        "DELETE FROM conf_mv_edge WHERE src = 3 AND dst = 1",
    ]
    cur.execute(writes[0])
    duck.execute(writes[0])
    cur.execute(f"CREATE MATERIALIZED VIEW conf_mv_closure AS {MATERIALIZED_CLOSURE}")
    cur.execute(f"CREATE MATERIALIZED VIEW conf_mv_distance AS {MATERIALIZED_DISTANCE}")
    try:
        for write in writes[1:]:
            cur.execute(write)
            duck.execute(write)
            closure_rows = check(cur, duck, "SELECT a, b FROM conf_mv_closure", MATERIALIZED_CLOSURE)
            assert sorted(closure_rows) == sorted(rows(cur, MATERIALIZED_CLOSURE))
            distances = rows(cur, "SELECT node, d FROM conf_mv_distance")
            assert sorted(distances) == sorted(rows(cur, MATERIALIZED_DISTANCE))
            graph = nx.DiGraph(duck.execute("SELECT src, dst FROM conf_mv_edge").fetchall())
            assert_rows(distances, nx.single_source_shortest_path_length(graph, 1).items())
    finally:
        cur.execute("DROP MATERIALIZED VIEW IF EXISTS conf_mv_closure")
        cur.execute("DROP MATERIALIZED VIEW IF EXISTS conf_mv_distance")
        cur.execute("DROP TABLE IF EXISTS conf_mv_edge")


# ---------------------------------------------------------------------------------------------------------------
# 6. Nested WITH clauses
# ---------------------------------------------------------------------------------------------------------------

NESTED = [
    q(
        "WITH RECURSIVE r(n) AS (WITH s AS (SELECT src FROM conf_dag WHERE dst = 2) SELECT src FROM s UNION "
        "SELECT e.dst FROM r JOIN conf_dag e ON e.src = r.n) SELECT n FROM r",
        id="with_inside_the_recursive_cte",
    ),
    q(
        "SELECT x.n, x.n * 10 AS tens FROM (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r "
        "WHERE n < 5) SELECT n FROM r) x WHERE x.n > 2",
        id="recursive_with_inside_a_subquery_in_from",
    ),
    q(
        "WITH t AS (SELECT * FROM (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
        "SELECT n FROM r) z) SELECT n * 2 AS twice FROM t",
        id="recursive_with_inside_a_cte_of_an_outer_with",
    ),
    q(
        "SELECT label FROM conf_node WHERE id IN (WITH RECURSIVE r(n) AS (SELECT 3 UNION SELECT e.dst FROM r "
        "JOIN conf_cycle e ON e.src = r.n) SELECT n FROM r)",
        id="recursive_with_inside_an_in_subquery",
    ),
    q(
        REACH_CYCLE + "SELECT (SELECT count(*) FROM reach) AS c, (SELECT max(n) FROM reach) AS m",
        id="recursive_cte_in_scalar_subqueries",
    ),
    q(
        "WITH RECURSIVE a(n) AS (SELECT 1 UNION SELECT e.dst FROM a JOIN conf_dag e ON e.src = a.n), "
        "b(n, k) AS (SELECT n, 0 FROM a WHERE n = 4 UNION SELECT e.dst, b.k + 1 FROM b JOIN conf_dag e "
        "ON e.src = b.n JOIN a ON a.n = e.dst) SELECT n, k FROM b",
        id="recursive_cte_reading_another",
    ),
    q(
        "WITH RECURSIVE a(n) AS (SELECT 2 UNION SELECT e.dst FROM a JOIN conf_cycle e ON e.src = a.n), "
        "b(n) AS (SELECT 5 UNION SELECT e.dst FROM b JOIN conf_cycle e ON e.src = b.n) "
        "SELECT 'a' AS side, n FROM a UNION ALL SELECT 'b', n FROM b",
        id="two_independent_recursive_ctes",
    ),
]


@pytest.mark.strategies(*IN_ONE_PROCESS_AND_ON_SPARK)
@pytest.mark.parametrize("case", NESTED)
def test_nested_with_matches_duckdb(case, conf_tables, cur, duck, strategy):
    check_recursive(cur, duck, strategy, case)


# ---------------------------------------------------------------------------------------------------------------
# 7. Forward references, mutual and non-linear recursion
# ---------------------------------------------------------------------------------------------------------------


def test_a_cte_reading_a_later_recursive_cte(conf_tables, cur, duck):
    """DuckDB does not take forward references: it gets the CTEs in the other order."""
    recursive = (
        "p(a, b) AS (SELECT src, dst FROM conf_cycle UNION SELECT p.a, e.dst FROM p JOIN conf_cycle e ON e.src = p.b)"
    )
    reading = "apart AS (SELECT a, b FROM p WHERE a <> b)"
    check(
        cur,
        duck,
        f"WITH RECURSIVE {reading}, {recursive} SELECT a, b FROM apart",
        f"WITH RECURSIVE {recursive}, {reading} SELECT a, b FROM apart",
    )


@pytest.mark.strategies(*ALL_STRATEGIES)
def test_a_recursive_cte_reading_a_later_plain_cte(conf_tables, cur, duck, strategy):
    """As PostgreSQL reads it; DuckDB gets the CTEs in the other order."""
    recursive = "r(n) AS (SELECT n FROM seeds UNION SELECT e.dst FROM r JOIN conf_dag e ON e.src = r.n)"
    seeds = "seeds(n) AS (SELECT 4)"
    check(
        cur,
        duck,
        f"WITH RECURSIVE {recursive}, {seeds} SELECT n FROM r",
        f"WITH RECURSIVE {seeds}, {recursive} SELECT n FROM r",
    )


def parity_walks(pairs, start: int) -> dict[str, set[int]]:
    """The nodes an even-length and an odd-length walk from `start` ends at."""
    seen = {(start, 0)}
    frontier = list(seen)
    while frontier:
        node, parity = frontier.pop()
        for _, successor in [pair for pair in pairs if pair[0] == node]:
            state = (successor, 1 - parity)
            if state not in seen:
                seen.add(state)
                frontier.append(state)
    return {"even": {n for n, p in seen if p == 0}, "odd": {n for n, p in seen if p == 1}}


@pytest.mark.strategies(*ALL_STRATEGIES)
def test_mutual_recursion_even_and_odd_numbers(conf_tables, cur, strategy):
    sql = (
        "WITH RECURSIVE even(n) AS (SELECT 0 UNION SELECT odd.n + 1 FROM odd WHERE odd.n < 6), "
        "odd(n) AS (SELECT even.n + 1 FROM even WHERE even.n < 6) "
        "SELECT 'even', n FROM even UNION ALL SELECT 'odd', n FROM odd"
    )
    assert_rows(rows(cur, sql), [("even" if n % 2 == 0 else "odd", n) for n in range(7)])


@pytest.mark.strategies(*ALL_STRATEGIES)
def test_mutual_recursion_over_walks_of_a_cyclic_graph(conf_tables, cur, strategy):
    sql = (
        "WITH RECURSIVE even(n) AS (SELECT 1 UNION SELECT e.dst FROM odd JOIN conf_cycle e ON e.src = odd.n), "
        "odd(n) AS (SELECT e.dst FROM even JOIN conf_cycle e ON e.src = even.n) "
        "SELECT 'even', n FROM even UNION ALL SELECT 'odd', n FROM odd"
    )
    walks = parity_walks(CYCLE_EDGES, 1)
    assert_rows(rows(cur, sql), [(parity, n) for parity, nodes in walks.items() for n in nodes])


NON_LINEAR = (
    "WITH RECURSIVE tc(x, z) AS (SELECT src, dst FROM {table} UNION "
    "SELECT a.x, b.z FROM tc a JOIN tc b ON a.z = b.x) SELECT x, z FROM tc"
)


@pytest.mark.strategies(*ALL_STRATEGIES)
@pytest.mark.parametrize(
    "table, pairs", [("conf_cycle", CYCLE_EDGES), ("conf_dag", DAG_EDGES)], ids=["cyclic", "acyclic"]
)
def test_non_linear_closure(table, pairs, conf_tables, cur, strategy):
    assert_rows(rows(cur, NON_LINEAR.format(table=table)), transitive_closure(pairs))


@pytest.mark.strategies(*IN_ONE_PROCESS_AND_ON_SPARK)
@FEW_EXAMPLES
@given(pairs=edge_lists())
def test_non_linear_closure_of_random_graphs(pairs, conn, cur, strategy):
    conn.register("conf_random_nl", edge_frame(pairs))
    assert_rows(rows(cur, NON_LINEAR.format(table="conf_random_nl")), transitive_closure(pairs))


# ---------------------------------------------------------------------------------------------------------------
# 8. Outer joins, subqueries and aggregates around a recursive result
# ---------------------------------------------------------------------------------------------------------------

AROUND = [
    q(
        REACH_CYCLE + "SELECT c.id, c.label, reach.n FROM conf_node c LEFT JOIN reach ON reach.n = c.id",
        id="left_join_of_a_table_to_a_recursive_result",
    ),
    q(
        PATHS_CYCLE + "SELECT n.label, p.b FROM conf_node n LEFT JOIN p ON p.a = n.id AND p.b > 3",
        id="left_join_with_a_condition_on_the_recursive_side",
    ),
    q(
        REACH_CYCLE + "SELECT c.id FROM conf_node c WHERE NOT EXISTS (SELECT 1 FROM reach WHERE reach.n = c.id)",
        id="not_exists_over_a_recursive_result",
    ),
    q(
        REACH_CYCLE + "SELECT c.id FROM conf_node c WHERE c.id NOT IN (SELECT n FROM reach)",
        id="not_in_over_a_recursive_result",
    ),
    q(
        REACH_CYCLE + "SELECT c.label FROM conf_node c WHERE c.id IN (SELECT n FROM reach)",
        id="in_over_a_recursive_result",
    ),
    q(
        REACH_CYCLE + "SELECT c.label FROM conf_node c WHERE EXISTS (SELECT 1 FROM reach WHERE reach.n > c.id)",
        id="exists_correlated_by_an_inequality",
    ),
    q(
        PATHS_CYCLE + "SELECT c.id, (SELECT max(p.b) FROM p WHERE p.a = c.id) AS farthest FROM conf_node c",
        id="scalar_max_correlated_by_equality",
    ),
    q(
        PATHS_CYCLE + "SELECT c.id, (SELECT count(*) FROM p WHERE p.a = c.id) AS paths FROM conf_node c",
        id="scalar_count_correlated_by_equality_is_0_over_no_row",
    ),
    q(
        REACH_CYCLE + "SELECT c.id, (SELECT count(e.dst) + 1 FROM conf_cycle e JOIN reach ON reach.n = e.src "
        "WHERE e.src = c.id) AS k FROM conf_node c",
        id="scalar_count_plus_1_is_1_over_no_row",
    ),
    q(
        REACH_CYCLE + "SELECT c.id, c.id - (SELECT max(n) FROM reach) AS gap FROM conf_node c",
        id="uncorrelated_scalar_subquery",
    ),
    q(
        PATHS_CYCLE + "SELECT a, count(*) AS n, min(b) AS lo, max(b) AS hi FROM p GROUP BY a HAVING count(*) > 1",
        id="aggregation_of_a_recursive_result",
    ),
    q(
        PATHS_CYCLE + "SELECT count(DISTINCT a) AS sources, count(*) AS pairs FROM p",
        id="global_aggregates_of_a_recursive_result",
    ),
]


@pytest.mark.strategies(*IN_ONE_PROCESS_AND_ON_SPARK)
@pytest.mark.parametrize("case", AROUND)
def test_queries_around_a_recursion_match_duckdb(case, conf_tables, cur, duck, strategy):
    check_recursive(cur, duck, strategy, case)


# ---------------------------------------------------------------------------------------------------------------
# 9. Errors
# ---------------------------------------------------------------------------------------------------------------

AGGREGATION = "aggregation through recursion: a GROUP BY aggregate over r is inside the recursive cycle"
NEGATION = "negation through recursion: r depends on NOT"
R_REACHES = "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT e.dst FROM conf_cycle e "

ERRORS = [
    pytest.param(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT count(*) FROM r) SELECT n FROM r",
        recsql.ProgrammingError,
        AGGREGATION,
        id="count_in_recursion",
    ),
    pytest.param(
        R_REACHES + "JOIN r ON e.src = r.n WHERE e.dst > (SELECT max(n) FROM r)) SELECT n FROM r",
        recsql.ProgrammingError,
        AGGREGATION,
        id="scalar_max_in_recursion",
    ),
    pytest.param(
        R_REACHES + "WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.n = e.dst)) SELECT n FROM r",
        recsql.ProgrammingError,
        NEGATION,
        id="not_exists_in_recursion",
    ),
    pytest.param(
        R_REACHES + "WHERE e.dst NOT IN (SELECT n FROM r)) SELECT n FROM r",
        recsql.ProgrammingError,
        NEGATION,
        id="not_in_in_recursion",
    ),
    pytest.param(
        "WITH RECURSIVE r(d) AS (SELECT DATE '2020-01-01' UNION ALL SELECT 1 FROM r WHERE d IS NULL) SELECT d FROM r",
        recsql.ProgrammingError,
        "UNION can only be performed on tables with compatible column types",
        id="date_and_integer_branches",
    ),
]


@pytest.mark.spark
@pytest.mark.strategies(*IN_ONE_PROCESS_AND_ON_SPARK)
@pytest.mark.parametrize("sql, error, fragment", ERRORS)
def test_what_recursion_refuses(sql, error, fragment, conf_tables, cur, strategy):
    refused(cur, sql, error, fragment)


@pytest.mark.spark
@pytest.mark.strategies(*IN_ONE_PROCESS_AND_ON_SPARK)
def test_a_string_anchor_with_an_integer_recursive_branch_is_a_data_error(conf_tables, cur, duck, strategy):
    """DuckDB keeps the anchor's type (text, giving '1'); recsql widens to bigint, where 'a' is no number."""
    sql = "WITH RECURSIVE r(n) AS (SELECT 'a' UNION ALL SELECT 1 FROM r WHERE n = 'a') SELECT n FROM r"
    assert duck.execute(sql).fetchall() == [("a",), ("1",)]
    message = refused(cur, sql, recsql.DataError, "'a'")
    assert "BIGINT" in message or "INT64" in message, message
