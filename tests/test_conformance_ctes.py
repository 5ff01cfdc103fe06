"""CTE forms: an inner WITH in the recursive branch of a UNION ALL recursion, recursive CTEs whose columns
come from a `SELECT *` or VALUES anchor, a WITH RECURSIVE whose CTEs read one written after them, Spark's
CTEs without AS, and WITH RECURSIVE in a subquery.

Answers are compared with DuckDB (tests/duckdb_reference.py) or, where DuckDB has no such form (a forward
reference between CTEs, mutual recursion), with the answer written out. Tables carry a `cc_` prefix.
"""

from __future__ import annotations

import duckdb_reference
import pandas as pd
import pytest
from duckdb_reference import check
from helpers import sorted_rows
from strategies import EVERY_STRATEGY, under

import recsql
from translator.dialect import RecSQL, parse_one

CC_EDGE = pd.DataFrame({"a": pd.Series([1, 2, 3, 5], dtype="int64"), "b": pd.Series([2, 3, 4, 6], dtype="int64")})
TABLES = {"cc_edge": CC_EDGE}
ALL_STRATEGIES = EVERY_STRATEGY


duck, cc_tables = duckdb_reference.reference_fixtures(TABLES, "cc_tables", autouse=True)


# ------------------------------------------------------------------ an inner WITH in the recursive branch

INNER_WITH = (
    "WITH RECURSIVE t(n) AS (SELECT 1 {kind} (WITH u AS (SELECT n FROM t) SELECT n + 1 FROM u WHERE n < 3)) "
    "SELECT * FROM t"
)


@under(*ALL_STRATEGIES)
@pytest.mark.parametrize("kind", ["UNION ALL", "UNION"])
def test_inner_with_in_recursive_branch(cur, duck, kind):
    check(cur, duck, INNER_WITH.format(kind=kind))


@under(*ALL_STRATEGIES)
def test_inner_with_in_union_all_recursion_keeps_duplicates(cur, duck):
    check(
        cur,
        duck,
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT 1 UNION ALL "
        "(WITH u AS (SELECT n FROM t) SELECT n + 1 FROM u WHERE n < 3)) SELECT * FROM t",
    )


@under(*ALL_STRATEGIES)
def test_plain_cte_in_mutual_union_all_recursion(cur):
    sql = (
        "WITH RECURSIVE a(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM b WHERE n < 4), b(n) AS (SELECT n FROM a) "
        "SELECT * FROM a"
    )
    assert sorted_rows(cur, sql) == [(1,), (2,), (3,), (4,)]


def test_union_and_union_all_in_one_recursion_still_refused(cur):
    sql = (
        "WITH RECURSIVE a(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM b WHERE n < 4), "
        "b(n) AS (SELECT 0 UNION SELECT n FROM a) SELECT * FROM a"
    )
    with pytest.raises(recsql.ProgrammingError, match=r"mutually recursive CTEs \(a, b\) mix UNION and UNION ALL"):
        cur.execute(sql)


# ------------------------------------------------------------------ columns of a recursive CTE from its anchor


@under(*ALL_STRATEGIES)
def test_values_with_alias_as_anchor(cur, duck):
    check(
        cur,
        duck,
        "WITH RECURSIVE t AS (VALUES (0, 1) AS t(a, b) UNION ALL SELECT a + 1, b FROM t WHERE a < 3) SELECT * FROM t",
        duck_sql="WITH RECURSIVE t AS (SELECT * FROM (VALUES (0, 1)) AS v(a, b) UNION ALL "
        "SELECT a + 1, b FROM t WHERE a < 3) SELECT * FROM t",
        names=True,
    )


@under(*ALL_STRATEGIES)
def test_select_star_from_values_as_anchor(cur, duck):
    check(
        cur,
        duck,
        "WITH RECURSIVE t AS (SELECT * FROM (VALUES (0, 1)) AS v(a, b) UNION ALL "
        "SELECT a + 1, b FROM t WHERE a < 3) SELECT * FROM t",
        names=True,
    )


@under(*ALL_STRATEGIES)
def test_select_star_from_table_as_anchor(cur, duck):
    check(
        cur,
        duck,
        "WITH RECURSIVE t AS (SELECT * FROM cc_edge UNION SELECT t.a, cc_edge.b FROM t "
        "JOIN cc_edge ON t.b = cc_edge.a) SELECT * FROM t",
        names=True,
    )


STAR_CTE = "x AS (SELECT * FROM cc_edge)"
CLOSURE_OVER_X = "t(a, b) AS (SELECT a, b FROM x UNION SELECT t.a, x.b FROM t JOIN x ON t.b = x.a)"


@under(*ALL_STRATEGIES)
def test_select_star_in_plain_cte_before_recursion(cur, duck):
    check(cur, duck, f"WITH RECURSIVE {STAR_CTE}, {CLOSURE_OVER_X} SELECT * FROM t")


@under(*ALL_STRATEGIES)
def test_plain_cte_written_after_the_recursion_reading_it(cur, duck):
    check(
        cur,
        duck,
        f"WITH RECURSIVE {CLOSURE_OVER_X}, {STAR_CTE} SELECT * FROM t",
        duck_sql=f"WITH RECURSIVE {STAR_CTE}, {CLOSURE_OVER_X} SELECT * FROM t",
    )


@under(*ALL_STRATEGIES)
def test_select_star_over_the_recursive_cte(cur, duck):
    check(
        cur,
        duck,
        "WITH RECURSIVE t(a, b) AS (SELECT a, b FROM cc_edge UNION SELECT t.a, cc_edge.b FROM t "
        "JOIN cc_edge ON t.b = cc_edge.a), s AS (SELECT * FROM t WHERE a = 1) SELECT * FROM s",
    )


def test_anchor_reading_its_own_recursion_still_needs_a_column_list(cur):
    with pytest.raises(recsql.ProgrammingError, match=r"SELECT \* needs a column list \(line 1, column 29\)"):
        cur.execute("WITH RECURSIVE t AS (SELECT * FROM t UNION SELECT 1) SELECT * FROM t")


def test_cte_name_twice_in_one_with(cur):
    with pytest.raises(recsql.ProgrammingError, match=r"CTE name 't' is used twice in one WITH \(line 1, column 23\)"):
        cur.execute("WITH t AS (SELECT 1), t AS (SELECT 2) SELECT * FROM t")


# ------------------------------------------------------------------ Spark's CTE without AS


@under(*ALL_STRATEGIES)
def test_recursive_cte_without_as(cur, duck):
    check(
        cur,
        duck,
        "WITH RECURSIVE t(n) (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) SELECT * FROM t",
        duck_sql="WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) SELECT * FROM t",
    )


def test_cte_without_as_nor_column_list(cur, duck):
    check(
        cur,
        duck,
        "WITH t (SELECT 1 AS x), u(y) (VALUES (2)) SELECT * FROM t, u",
        duck_sql="WITH t AS (SELECT 1 AS x), u(y) AS (VALUES (2)) SELECT * FROM t, u",
        names=True,
    )


@under(*ALL_STRATEGIES)
def test_rasql_header_aggregate_without_as(cur):
    sql = (
        "WITH RECURSIVE sp(node, min() AS dist) MAX RECURSION LEVEL 9 (SELECT 1, 0) UNION "
        "(SELECT cc_edge.b, sp.dist + 1 FROM sp JOIN cc_edge ON sp.node = cc_edge.a) SELECT * FROM sp"
    )
    assert sorted_rows(cur, sql) == [(1, 0), (2, 1), (3, 2), (4, 3)]


def test_cte_without_as_prints_with_as():
    statement = parse_one("WITH t(a) (SELECT 1) SELECT a FROM t")
    assert statement.sql(dialect=RecSQL) == "WITH t(a) AS (SELECT 1) SELECT a FROM t"


def test_cte_without_body_is_a_syntax_error(cur):
    with pytest.raises(recsql.ProgrammingError, match="syntax error: Expected AS after the CTE name"):
        cur.execute("WITH t SELECT 1")


# ------------------------------------------------------------------ WITH RECURSIVE in a subquery


@under(*ALL_STRATEGIES)
def test_uncorrelated_with_recursive_in_scalar_subquery(cur, duck):
    check(
        cur,
        duck,
        "SELECT a, (WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT n + 1 FROM r WHERE n < 5) "
        "SELECT max(n) FROM r) FROM cc_edge",
    )


CORRELATED_WITH = [
    # the recursion starts at the outer row's value
    "SELECT a, (WITH RECURSIVE r(n) AS (SELECT e.a UNION SELECT n + 1 FROM r WHERE n < 5) SELECT max(n) FROM r) "
    "FROM cc_edge e",
    # the outer row's value bounds the recursion
    "SELECT a, b, (WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT n + 1 FROM r WHERE n < e.b) SELECT count(*) FROM r) "
    "FROM cc_edge e",
    # what each outer row reaches, counted
    "SELECT a, (WITH RECURSIVE reach(x) AS (SELECT b FROM cc_edge WHERE a = e.a UNION SELECT cc_edge.b FROM reach "
    "JOIN cc_edge ON reach.x = cc_edge.a) SELECT count(*) FROM reach) FROM cc_edge e",
    # in EXISTS and IN
    "SELECT a, b FROM cc_edge e WHERE EXISTS (WITH RECURSIVE r(n) AS (SELECT e.a UNION SELECT n + 1 FROM r "
    "WHERE n < 4) SELECT 1 FROM r WHERE n = e.b + 1)",
    "SELECT a FROM cc_edge e WHERE b IN (WITH RECURSIVE r(n) AS (SELECT e.a UNION SELECT n + 1 FROM r WHERE n < 6) "
    "SELECT n FROM r)",
    # EXISTS reads no column: its * is none
    "SELECT a FROM cc_edge e WHERE EXISTS (WITH c AS (SELECT b FROM cc_edge WHERE b = e.a) SELECT * FROM c)",
    # plain CTEs, one reading the other
    "SELECT a, (WITH k AS (SELECT e.a * 10 AS v), m AS (SELECT v + 1 AS w FROM k) SELECT w FROM m) FROM cc_edge e",
]


@pytest.mark.parametrize("sql", CORRELATED_WITH)
@under(*EVERY_STRATEGY)
def test_with_reading_the_outer_query(cur, duck, sql):
    check(cur, duck, sql)


def test_with_reading_the_outer_query_through_star_is_refused(cur):
    sql = "SELECT a, (WITH c AS (SELECT b FROM cc_edge WHERE b = e.a) SELECT * FROM c) FROM cc_edge e"
    with pytest.raises(
        recsql.NotSupportedError,
        match=r"a query of a WITH reading columns of the outer query lists "
        r"its columns, not \*",
    ):
        cur.execute(sql)


@pytest.mark.parametrize(
    "inner",
    [
        "(WITH u AS (SELECT DISTINCT n FROM t) SELECT n + 1 FROM u WHERE n < 3)",
        "SELECT n + 1 FROM (SELECT n FROM t UNION SELECT n FROM t) x WHERE n < 3",
        "SELECT n + 1 FROM t WHERE n < 3 GROUP BY n",
    ],
)
def test_duplicates_removed_inside_union_all_recursion_are_refused(cur, inner):
    with pytest.raises(
        recsql.NotSupportedError,
        match=r"removes duplicates \(DISTINCT, GROUP BY or UNION.*\) inside "
        r"the UNION ALL recursion of 't'.* \(line 1, column 16\)",
    ):
        cur.execute(f"WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL {inner}) SELECT * FROM t")
