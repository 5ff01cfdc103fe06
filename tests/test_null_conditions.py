"""Conditions that compare a value with itself, which SQL's three-valued logic makes UNKNOWN where the value is
NULL: `x.a = x.a` keeps only the rows whose a is not NULL, `NOT (x.a = x.a)` none, in WHERE, in an inner or outer
join's ON, in a subquery, in a recursive branch and in the query reading a recursion. Equalities between columns
join by sharing one variable, so an equality whose sides are one variable already (the same column, two columns
equated before, two columns of one table) is the case to hold recsql to. INTERSECT and EXCEPT match NULL with
NULL, and still do around such conditions.

Answers are compared with DuckDB (tests/duckdb_reference.py). Tables carry an `nc_` prefix.
"""

from __future__ import annotations

import duckdb_reference
import pandas as pd
import pytest
from duckdb_reference import check, q
from strategies import EVERY_STRATEGY, under

# NULL in every column, both columns of one row NULL, a row whose two columns are equal
NC_T = pd.DataFrame(
    {
        "a": pd.array([1, None, 2, 2, -3, None, 7], dtype="Int32"),
        "b": pd.array([3, 20, None, 20, 5, None, 7], dtype="Int64"),
        "s": ["x", None, "y", "y", "ab", "z", None],
    }
)
# a cycle, a self-loop, parallel edges, NULL ends; dst 5 only on an edge from NULL
NC_E = pd.DataFrame(
    {
        "src": pd.array([1, 2, 3, 3, 1, None, 4, None, 3], dtype="Int32"),
        "dst": pd.array([2, 3, 1, 3, 2, 5, None, None, 4], dtype="Int32"),
        "w": pd.array([1, 2, 3, 0, 5, 1, 2, 4, 1], dtype="Int64"),
    }
)
TABLES = {"nc_t": NC_T, "nc_e": NC_E}

duck, nc_tables = duckdb_reference.reference_fixtures(TABLES, "nc_tables", autouse=True)

EQUALITIES = [
    q("SELECT x.a FROM nc_t x WHERE x.a = x.a", id="column_with_itself"),
    q("SELECT x.a, x.b FROM nc_t x WHERE x.a = x.b", id="two_columns_of_one_table"),
    q("SELECT y.src FROM nc_e y WHERE y.src = y.dst AND y.dst = y.src", id="two_columns_equated_twice"),
    q("SELECT y.src FROM nc_e y WHERE y.src = y.dst AND y.dst = y.dst", id="equated_then_with_itself"),
    q("SELECT x.a, y.src FROM nc_t x, nc_e y WHERE x.a = y.src AND y.src = x.a", id="join_equality_reversed"),
    q("SELECT x.a, y.dst FROM nc_t x JOIN nc_e y ON x.a = y.src AND x.a = y.src", id="join_equality_repeated"),
    q("SELECT x.a, y.dst FROM nc_t x JOIN nc_e y ON x.b = x.b AND y.src = x.a", id="inner_join_on"),
    q("SELECT x.a, y.dst FROM nc_t x JOIN nc_e y ON y.src = y.src", id="inner_join_on_the_right_side"),
    q("SELECT x.a, y.src FROM nc_t x LEFT JOIN nc_e y ON y.src = y.src AND y.dst = x.a", id="left_join_on_right"),
    q("SELECT x.a, y.src FROM nc_t x LEFT JOIN nc_e y ON x.b = x.b AND y.dst = x.a", id="left_join_on_left"),
    q("SELECT x.a, y.src FROM nc_t x LEFT JOIN nc_e y ON y.dst = x.a WHERE y.src = y.src", id="where_after_left_join"),
    q("SELECT a, x.b, y.b FROM nc_t x JOIN nc_t y USING (a) WHERE a = a", id="using_column_with_itself"),
    q("SELECT x.a, x.b FROM nc_t x WHERE x.b = x.a AND x.a = x.a", id="two_columns_then_with_itself"),
]

SUBQUERIES = [
    q(
        "SELECT x.a, x.b FROM nc_t x WHERE NOT EXISTS (SELECT 1 FROM nc_e y WHERE y.src = y.src AND y.dst = x.b)",
        id="not_exists_correlated",
    ),
    q(
        "SELECT x.a, x.b FROM nc_t x WHERE EXISTS (SELECT 1 FROM nc_e y WHERE y.src = y.src AND y.dst IN (x.a, x.b))",
        id="exists_correlated",
    ),
    q(
        "SELECT x.a FROM nc_t x WHERE NOT EXISTS (SELECT 1 FROM nc_e y WHERE y.src = y.src AND y.dst = 5)",
        id="not_exists_uncorrelated",
    ),
    q(
        "SELECT x.a FROM nc_t x WHERE EXISTS (SELECT 1 FROM nc_e y WHERE y.src = x.a AND y.dst = y.dst)",
        id="exists_correlation_and_itself",
    ),
    q("SELECT x.b FROM nc_t x WHERE x.b IN (SELECT y.dst FROM nc_e y WHERE y.src = y.src)", id="in"),
    q(
        "SELECT x.b FROM nc_t x WHERE x.b NOT IN (SELECT y.dst FROM nc_e y WHERE y.src = y.src AND y.dst = y.dst)",
        id="not_in",
    ),
    q("SELECT x.b, (SELECT count(*) FROM nc_e y WHERE y.src = y.src AND y.dst = x.b) FROM nc_t x", id="scalar_count"),
    q("SELECT q.a FROM (SELECT a FROM nc_t WHERE a = a) q", id="derived_table"),
    q("WITH c AS (SELECT src, dst FROM nc_e WHERE dst = dst) SELECT c.src FROM c WHERE c.src = c.src", id="cte"),
]

OTHER_COMPARISONS = [
    q("SELECT x.a FROM nc_t x WHERE x.a <= x.a", id="less_or_equal"),
    q("SELECT x.a FROM nc_t x WHERE x.a <> x.a", allow_empty=True, id="not_equal"),
    q("SELECT x.a FROM nc_t x WHERE NOT (x.a <> x.a)", id="not_of_not_equal"),
    q("SELECT x.a FROM nc_t x WHERE NOT (x.a = x.a)", allow_empty=True, id="not_of_equal"),
    q("SELECT x.a FROM nc_t x WHERE x.a NOT IN (x.a, x.a)", allow_empty=True, id="not_in_itself"),
    q("SELECT x.a FROM nc_t x WHERE NOT (x.a NOT IN (x.a, x.a))", id="not_of_not_in_itself"),
    q("SELECT x.a FROM nc_t x WHERE x.a BETWEEN x.a AND x.a", id="between_itself"),
    q("SELECT x.a FROM nc_t x WHERE coalesce(x.a, x.a) = x.a", id="coalesce_of_itself"),
    q("SELECT x.s FROM nc_t x WHERE x.s = x.s OR x.a IS NULL", id="or"),
    q("SELECT x.a, x.a = x.a, x.a <> x.a FROM nc_t x", id="in_the_select_list"),
]

SET_OPERATIONS = [  # NULL matches NULL, whatever the branches' conditions
    q("SELECT a FROM nc_t WHERE a = a INTERSECT SELECT a FROM nc_t", id="intersect_left"),
    q("SELECT a, s FROM nc_t INTERSECT SELECT a, s FROM nc_t WHERE b = b", id="intersect_right"),
    q("SELECT a FROM nc_t EXCEPT SELECT a FROM nc_t WHERE a = a", id="except"),
    q("SELECT a FROM nc_t WHERE b = b EXCEPT SELECT a FROM nc_t WHERE s = s", id="except_both"),
]

CASES = EQUALITIES + SUBQUERIES + OTHER_COMPARISONS + SET_OPERATIONS


@under("local", "distributed")
@pytest.mark.parametrize("case", CASES)
def test_self_comparisons_match_duckdb(cur, duck, case):
    check(cur, duck, **case)


TC = (
    "WITH RECURSIVE tc(s, d) AS (SELECT src, dst FROM nc_e WHERE src = src UNION "
    "SELECT tc.s, y.dst FROM tc JOIN nc_e y ON tc.d = y.src AND y.dst = y.dst) "
)
RECURSIONS = [
    q(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT r.n + 1 FROM r JOIN nc_t x ON x.b = x.b WHERE r.n < 2) "
        "SELECT * FROM r",
        id="union_all_branch",
    ),
    q(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT y.dst FROM r JOIN nc_e y ON r.n = y.src AND y.dst = y.dst) "
        "SELECT * FROM r",
        id="union_branch",
    ),
    q(TC + "SELECT * FROM tc", id="pivoted_closure"),
    q(TC + "SELECT t.s, t.d FROM tc t WHERE t.s = 1 AND t.d = t.d", id="bound_closure"),
    q(
        "WITH RECURSIVE p(s, d, k) AS (SELECT src, dst, 0 FROM nc_e WHERE src = src UNION ALL "
        "SELECT p.s, y.dst, p.k + 1 FROM p JOIN nc_e y ON p.d = y.src AND y.dst = y.dst WHERE p.k < 2) "
        "SELECT * FROM p",
        id="pivoted_union_all",
    ),
    q(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT y.dst FROM r JOIN nc_e y ON r.n = y.src "
        "WHERE NOT EXISTS (SELECT 1 FROM nc_e z WHERE z.src = z.src AND z.dst = y.dst AND z.w > 3)) SELECT * FROM r",
        id="not_exists_in_branch",
    ),
]


@under(*EVERY_STRATEGY)
@pytest.mark.parametrize("case", RECURSIONS)
def test_self_comparisons_in_recursion_match_duckdb(cur, duck, case):
    check(cur, duck, **case)


@under("local", "distributed")
@pytest.mark.parametrize("magic", ["on", "off"])
def test_bound_recursion_with_self_comparison_under_magic_sets(cur, duck, magic):
    cur.execute(f"SET recsql.magic = {magic}")
    try:
        check(cur, duck, TC + "SELECT t.d FROM tc t WHERE t.s = 3 AND t.d = t.d")
    finally:
        cur.execute("SET recsql.magic = auto")
