"""JOIN ... USING, LEFT JOIN ... USING and Spark's LEFT SEMI / LEFT ANTI JOIN, compared with DuckDB.

Where SQL dialects differ, recsql follows PostgreSQL and Spark: `*` over a JOIN ... USING lists each USING column
once, first, then the other columns of the left side, then those of the right side. DuckDB keeps the USING column
where the left side has it, so those cases give DuckDB the same columns by name, in the standard's order. DuckDB
spells Spark's `LEFT SEMI JOIN` / `LEFT ANTI JOIN` as `SEMI JOIN` / `ANTI JOIN`.
"""

from __future__ import annotations

import duckdb_reference
import pandas as pd
import pytest
from duckdb_reference import check, q
from explain import explain
from strategies import EVERY_STRATEGY, EXPLAINED

import recsql

# ---------------------------------------------------------------------------------------------------------------
# Data (table names prefixed with jn_): NULL keys, and keys repeated on both sides of the joins
# ---------------------------------------------------------------------------------------------------------------

JN_L = pd.DataFrame(
    {
        "k": pd.array([1, 2, 2, 3, None], dtype="Int64"),
        "v": ["a", "b", "c", "d", "e"],
        "j": [10, 20, 21, 30, 40],
    }
)
JN_R = pd.DataFrame(
    {
        "j": pd.array([10, 20, 20, 99, None], dtype="Int64"),
        "k": pd.array([1, 2, 2, 4, None], dtype="Int64"),
        "w": ["p", "q", "r", "s", "t"],
    }
)
JN_EDGE = pd.DataFrame({"k": [1, 2, 3, 3, 2, 5], "nxt": [2, 3, 1, 4, 3, 6]})  # a cycle, a repeated edge
JN_NODE = pd.DataFrame({"k": [1, 2, 3, 4, 5, 6, 7], "label": ["a", "b", "c", "d", "e", "f", "g"]})

TABLES = {"jn_l": JN_L, "jn_r": JN_R, "jn_edge": JN_EDGE, "jn_node": JN_NODE}


duck, jn_tables = duckdb_reference.reference_fixtures(TABLES, "jn_tables")


# ---------------------------------------------------------------------------------------------------------------
# JOIN ... USING
# ---------------------------------------------------------------------------------------------------------------

USING = [
    q("SELECT * FROM (SELECT 1 AS i) a JOIN (SELECT 1 AS i) b USING (i)", names=True, id="using_star_one_column"),
    q(
        "SELECT * FROM jn_l JOIN jn_r USING (j)",
        "SELECT j, jn_l.k, v, jn_r.k, w FROM jn_l JOIN jn_r USING (j)",
        names=True,
        id="using_star_lists_the_column_first",
    ),
    q(
        "SELECT * FROM jn_l JOIN jn_r USING (k, j)",
        "SELECT k, j, v, w FROM jn_l JOIN jn_r USING (k, j)",
        names=True,
        id="using_star_two_columns",
    ),
    q("SELECT jn_r.*, jn_l.* FROM jn_l JOIN jn_r USING (k)", names=True, id="using_qualified_stars_keep_their_columns"),
    q(
        "SELECT * FROM jn_l a JOIN jn_r b USING (k) JOIN jn_node n USING (k)",
        "SELECT k, a.v, a.j, b.j, b.w, n.label FROM jn_l a JOIN jn_r b USING (k) JOIN jn_node n USING (k)",
        names=True,
        id="using_twice_lists_the_column_once",
    ),
    q(
        "SELECT * FROM jn_node JOIN jn_l USING (k) JOIN jn_r USING (j, k)",
        "SELECT j, k, label, v, w FROM jn_node JOIN jn_l USING (k) JOIN jn_r USING (j, k)",
        names=True,
        id="using_a_column_of_the_earlier_joins_right_side",
    ),
    q(
        "SELECT k, v, w FROM jn_l JOIN jn_r USING (k) WHERE k > 1 ORDER BY k, v, w",
        ordered=True,
        id="using_column_unqualified_in_where_and_order_by",
    ),
    q(
        "SELECT v, w FROM jn_l JOIN jn_r USING (k) ORDER BY k DESC, v, w",
        ordered=True,
        id="using_column_unqualified_order_by_not_selected",
    ),
    q("SELECT k, count(*) AS n FROM jn_l JOIN jn_r USING (k) GROUP BY k", id="using_column_grouped"),
    q("SELECT jn_l.k, jn_r.k, k FROM jn_l JOIN jn_r USING (k)", id="using_column_qualified_either_side"),
]

LEFT_USING = [
    q(
        "SELECT * FROM jn_l LEFT JOIN jn_r USING (k)",
        "SELECT k, v, jn_l.j, jn_r.j, w FROM jn_l LEFT JOIN jn_r USING (k)",
        names=True,
        id="left_using_star_null_rows",
    ),
    q(
        "SELECT * FROM jn_l LEFT OUTER JOIN jn_r USING (k, j)",
        "SELECT k, j, v, w FROM jn_l LEFT JOIN jn_r USING (k, j)",
        names=True,
        id="left_using_two_columns",
    ),
    q("SELECT k, v FROM jn_l LEFT JOIN jn_r USING (k, j) WHERE w IS NULL", id="left_using_rows_without_a_match"),
    q(
        "SELECT k, jn_r.k AS right_k, v FROM jn_l LEFT JOIN jn_r USING (k) ORDER BY k, v, right_k",
        ordered=True,
        id="left_using_column_is_the_left_sides",
    ),
    q(
        "SELECT * FROM jn_node LEFT JOIN (SELECT nxt AS k, count(*) AS fan_in FROM jn_edge GROUP BY nxt) i USING (k)",
        names=True,
        id="left_using_derived_table",
    ),
]


@pytest.mark.parametrize("case", USING + LEFT_USING)
def test_join_using_matches_duckdb(case, jn_tables, cur, duck):
    check(cur, duck, **case)


# ---------------------------------------------------------------------------------------------------------------
# LEFT SEMI JOIN and LEFT ANTI JOIN: EXISTS and NOT EXISTS
# ---------------------------------------------------------------------------------------------------------------


def semi(sql: str, **options):
    """A case in Spark's spelling, DuckDB's text without LEFT."""
    duck = sql.replace("LEFT SEMI JOIN", "SEMI JOIN").replace("LEFT ANTI JOIN", "ANTI JOIN")
    return q(sql, duck, **options)


SEMI_ANTI = [
    semi(
        "SELECT * FROM jn_l LEFT SEMI JOIN jn_r ON jn_l.k = jn_r.k",
        names=True,
        id="semi_join_does_not_repeat_left_rows",
    ),
    semi("SELECT * FROM jn_l LEFT ANTI JOIN jn_r ON jn_l.k = jn_r.k", names=True, id="anti_join_keeps_null_keys"),
    q("SELECT * FROM jn_l SEMI JOIN jn_r ON jn_l.k = jn_r.k", names=True, id="semi_join_without_left"),
    semi("SELECT l.v FROM jn_l l LEFT SEMI JOIN jn_r r ON l.k = r.k AND r.j >= l.j", id="semi_join_non_equality"),
    semi("SELECT l.v FROM jn_l l LEFT ANTI JOIN jn_r r ON r.j < l.j", id="anti_join_non_equality"),
    semi(
        "SELECT l.v, r.w FROM jn_l l LEFT SEMI JOIN jn_edge e ON e.k = l.k JOIN jn_r r ON r.j = l.j WHERE l.v <> 'z'",
        id="semi_join_then_inner_join",
    ),
    semi(
        "SELECT k, count(*) AS n FROM jn_edge LEFT SEMI JOIN jn_r ON jn_edge.k = jn_r.k GROUP BY k",
        id="semi_join_grouped",
    ),
    semi(
        "SELECT n.label FROM jn_node n LEFT SEMI JOIN jn_edge a ON a.k = n.k LEFT ANTI JOIN jn_edge b ON b.nxt = n.k",
        id="semi_and_anti_join_in_a_row",
    ),
]


@pytest.mark.parametrize("case", SEMI_ANTI)
def test_semi_and_anti_join_match_duckdb(case, jn_tables, cur, duck):
    check(cur, duck, **case)


# ---------------------------------------------------------------------------------------------------------------
# In recursion
# ---------------------------------------------------------------------------------------------------------------

REACH = "WITH RECURSIVE reach(k) AS (SELECT 1 UNION SELECT e.nxt FROM jn_edge e JOIN reach ON reach.k = e.k) "

RECURSIVE = [
    q(
        "WITH RECURSIVE t(k, nxt) AS (SELECT k, nxt FROM jn_edge WHERE k = 1 UNION "
        "SELECT * FROM (SELECT nxt AS k FROM t) moved JOIN jn_edge USING (k)) SELECT * FROM t",
        names=True,
        id="recursive_branch_star_over_join_using",
    ),
    q(
        "WITH RECURSIVE reach(k) AS (SELECT 1 UNION SELECT nxt FROM reach JOIN jn_edge USING (k)) SELECT k FROM reach",
        id="recursive_branch_join_using_unqualified",
    ),
    semi(
        "WITH RECURSIVE reach(k) AS (SELECT 1 UNION SELECT e.nxt FROM jn_edge e LEFT SEMI JOIN reach "
        "ON reach.k = e.k) SELECT k FROM reach",
        id="recursive_relation_on_the_right_of_a_semi_join",
    ),
    semi(
        "WITH RECURSIVE up(k) AS (SELECT 1 UNION SELECT up.k + 1 FROM up LEFT SEMI JOIN jn_edge e ON e.k = up.k) "
        "SELECT k FROM up",
        id="recursive_relation_on_the_left_of_a_semi_join",
    ),
    semi(
        REACH + "SELECT * FROM jn_node LEFT ANTI JOIN reach ON reach.k = jn_node.k",
        names=True,
        id="anti_join_of_a_recursive_result",
    ),
]


@pytest.mark.strategies(*EVERY_STRATEGY)
@pytest.mark.parametrize("case", RECURSIVE)
def test_joins_in_recursion_match_duckdb(case, jn_tables, cur, duck, strategy):
    """Each case under each strategy: the recursive strata EXPLAIN puts on the strategy ran with it."""
    plan = explain(cur, case["sql"])
    check(cur, duck, **case)
    assert len(strategy) + len(strategy.others) >= 1, "no recursive stratum ran"
    assert len(strategy) == plan.count(EXPLAINED[strategy.strategy])


def test_anti_join_of_the_recursive_relation_in_its_recursion_is_not_stratified(jn_tables, cur):
    sql = (
        "WITH RECURSIVE reach(k) AS (SELECT 1 UNION SELECT e.nxt FROM jn_edge e LEFT ANTI JOIN reach "
        "ON reach.k = e.k) SELECT k FROM reach"
    )
    with pytest.raises(
        recsql.ProgrammingError,
        match=r"negation through recursion: reach depends on NOT a "
        r"subquery reading reach within the recursive cycle \(reach\);",
    ):
        cur.execute(sql)


# ---------------------------------------------------------------------------------------------------------------
# What is refused, and where
# ---------------------------------------------------------------------------------------------------------------

REFUSED = [
    (
        "SELECT * FROM jn_l JOIN jn_node USING (j)",
        recsql.ProgrammingError,
        "USING column 'j' not found in 'jn_node' (line 1, column 40)",
    ),
    (
        "SELECT * FROM jn_node JOIN jn_l USING (v)",
        recsql.ProgrammingError,
        "USING column 'v' not found on the left of the join (line 1, column 40)",
    ),
    (
        "SELECT * FROM jn_l JOIN jn_r ON jn_l.j = jn_r.j JOIN jn_node USING (k)",
        recsql.ProgrammingError,
        "USING column 'k' is ambiguous on the left of the join (line 1, column 69)",
    ),
    (
        "SELECT * FROM jn_l JOIN jn_r USING (k, k)",
        recsql.ProgrammingError,
        "USING names column 'k' twice (line 1, column 40)",
    ),
    (
        "SELECT jn_r.w FROM jn_l LEFT SEMI JOIN jn_r ON jn_l.k = jn_r.k",
        recsql.ProgrammingError,
        "unknown table or alias 'jn_r' in 'jn_r.w' (line 1, column 8)",
    ),
]


@pytest.mark.parametrize("sql, error, message", REFUSED, ids=[message for _, _, message in REFUSED])
def test_what_is_refused_says_what_and_where(sql, error, message, jn_tables, cur):
    with pytest.raises(error) as raised:
        cur.execute(sql)
    assert str(raised.value).startswith(message), str(raised.value)
