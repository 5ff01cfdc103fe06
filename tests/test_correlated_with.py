"""A WITH [RECURSIVE] inside a subquery that reads the outer query's columns (translator/correlated_with.py),
wherever a subquery may stand: IN / NOT IN with a literal or an expression on the left, EXISTS / NOT EXISTS, a
scalar subquery in the select list or a WHERE comparison, a join condition, nested in one another, reading several
outer columns of several tables, named with or without their table's alias; the forms the IR does not model,
which run as Spark SQL.

Answers are compared with DuckDB (tests/duckdb_reference.py), which runs the subquery row by row. Where an outer
value is NULL, recsql's answer is the one its README documents (the CTEs hold no row for that outer row), which
the DuckDB text states by reading the CTEs only where the outer value is not NULL. Tables carry a `cw_` prefix.
"""

from __future__ import annotations

import re

import duckdb_reference
import pandas as pd
import pytest
from duckdb_reference import check, q, register_both
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import EVERY_STRATEGY, under

import recsql

ALL_STRATEGIES = EVERY_STRATEGY

CW_E = pd.DataFrame({"src": pd.Series([0, 1, 5], dtype="int64")})
CW_EDGE = pd.DataFrame({"a": pd.Series([0, 1, 2, 3, 5], dtype="int64"), "b": pd.Series([1, 2, 3, 1, 6], dtype="int64")})
# duplicate rows, NULL values
CW_T = pd.DataFrame(
    {"k": pd.Series([1, 2, 2, 3, 4, 5], dtype="int64"), "v": pd.array([0, 1, 1, None, 3, None], dtype="Int64")}
)
TABLES = {"cw_e": CW_E, "cw_edge": CW_EDGE, "cw_t": CW_T}

duck, cw_tables = duckdb_reference.reference_fixtures(TABLES, "cw_tables", autouse=True)

REACH = "WITH RECURSIVE r(x) AS (SELECT e.src UNION SELECT g.b FROM r JOIN cw_edge g ON g.a = r.x) "
COUNTER = "WITH RECURSIVE c(n) AS (SELECT e.src UNION SELECT n + 1 FROM c WHERE n < e.src + 2) "


def null_guarded(sql: str, guard: str, **kwargs):
    """A case whose subquery reads an outer value that may be NULL: DuckDB's text has `guard` (a condition that the
    outer values are not NULL, with its WHERE or AND) where `sql` has `{guard}`."""
    return q(sql.format(guard=""), sql.format(guard=guard), **kwargs)


CASES = [
    # IN with a literal or an expression on the left
    q(
        "SELECT e.src FROM cw_e e WHERE 2 IN (WITH c(n) AS (SELECT e.src UNION SELECT e.src + 1) SELECT n FROM c)",
        id="in_literal",
    ),
    q(
        "SELECT e.src FROM cw_e e WHERE 2 IN (WITH RECURSIVE c(n) AS (SELECT e.src UNION SELECT n + 1 FROM c "
        "WHERE n < e.src + 1) SELECT n FROM c)",
        id="in_literal_recursive",
    ),
    q(
        "SELECT e.src FROM cw_e e WHERE e.src * 2 IN (WITH c(n) AS (SELECT e.src UNION ALL SELECT e.src + 1) "
        "SELECT n FROM c)",
        id="in_expression",
    ),
    q(
        "SELECT e.src FROM cw_e e WHERE 2 NOT IN (WITH RECURSIVE c(n) AS (SELECT e.src UNION SELECT n + 1 FROM c "
        "WHERE n < e.src + 1) SELECT n FROM c)",
        id="not_in_literal",
    ),
    # EXISTS and NOT EXISTS
    q("SELECT e.src FROM cw_e e WHERE EXISTS (" + COUNTER + "SELECT 1 FROM c WHERE n = 2)", id="exists"),
    q("SELECT e.src FROM cw_e e WHERE NOT EXISTS (" + COUNTER + "SELECT 1 FROM c WHERE n = 2)", id="not_exists"),
    # scalar subqueries in the select list and in WHERE
    q(
        "SELECT x, y, (WITH RECURSIVE t(z) AS (SELECT x + y UNION ALL SELECT z + 1 FROM t WHERE z < 3) "
        "SELECT sum(z) FROM t) FROM range(1, 3) AS _(x), range(1, 3) AS __(y)",
        id="scalar_unqualified_range",
    ),
    q(
        "SELECT e.src, (WITH c(n) AS (SELECT e.src) SELECT count(*) FROM c) AS k FROM cw_e e ORDER BY e.src",
        ordered=True,
        id="scalar_ordered",
    ),
    q(
        "SELECT e.src FROM cw_e e WHERE 2 <= (WITH c(n) AS (SELECT g.b FROM cw_edge g WHERE g.a >= e.src) "
        "SELECT count(*) FROM c)",
        id="where_comparison",
    ),
    # a join condition
    q(
        "SELECT a.src, b.src FROM cw_e a JOIN cw_e b ON b.src IN (WITH c(n) AS (SELECT a.src UNION SELECT a.src + 1) "
        "SELECT n FROM c)",
        id="join_condition",
    ),
    # NULL outer values and duplicate outer rows
    null_guarded(
        "SELECT t.k FROM cw_t t WHERE 2 NOT IN (WITH RECURSIVE c(n) AS (SELECT t.v UNION SELECT n + 1 "
        "FROM c WHERE n < t.v + 1) SELECT n FROM c{guard})",
        " WHERE t.v IS NOT NULL",
        id="null_not_in",
    ),
    null_guarded(
        "SELECT t.k, t.v, (WITH c(n) AS (SELECT t.v UNION ALL SELECT t.k) SELECT count(*) FROM c{guard}) FROM cw_t t",
        " WHERE t.v IS NOT NULL",
        id="null_scalar_count",
    ),
]

# forms whose translation is the question: under one Spark strategy besides local, for the module's time
FORMS = [
    q(
        "SELECT e.src, (" + REACH + "SELECT count(*) FROM r) AS k FROM cw_e e ORDER BY k DESC, e.src",
        ordered=True,
        id="scalar_ordered_by_it",
    ),
    q("SELECT count((WITH c(n) AS (SELECT e.src) SELECT n FROM c)) FROM cw_e e", id="aggregate_of_it"),
    q(
        "SELECT e.src % 2 AS p, sum((WITH c(n) AS (SELECT e.src UNION SELECT e.src + 1) SELECT count(*) FROM c)) "
        "FROM cw_e e GROUP BY e.src % 2",
        id="aggregate_of_an_aggregating_one",
    ),
    q(
        "SELECT e.src FROM cw_e e WHERE e.src = (WITH c(n) AS (SELECT e.src) SELECT n FROM c)",
        id="where_equality_not_aggregating",
    ),
    # several outer columns, of several tables, in any order
    q(
        "SELECT a.src, b.src, (WITH c(n) AS (SELECT b.src * 10 + a.src * 100 + a.next) SELECT max(n) FROM c) "
        "FROM (SELECT src, src + 1 AS next FROM cw_e) a, cw_e b",
        id="columns_of_two_tables",
    ),
    # names: unqualified outer columns; unqualified names of a FROM item inside the WITH that the outer query has too;
    # a CTE without a column list, whose column an outer one is
    q(
        "SELECT e.src, (WITH c(n) AS (SELECT src UNION SELECT src + 1) SELECT count(*) FROM c) FROM cw_e e",
        id="unqualified_outer_column",
    ),
    q(
        "SELECT e.src, (WITH c AS (SELECT e.src, 1 AS one) SELECT max(src) FROM c) FROM cw_e e",
        id="outer_column_named_by_the_cte",
    ),
    q(
        "SELECT g.a, (WITH c(n) AS (SELECT b FROM cw_edge WHERE a = g.b) SELECT count(*) FROM c) FROM cw_edge g",
        id="inner_names_shadow_outer_ones",
    ),
    # CTEs reading each other, in joins of every kind
    q(
        "SELECT a.src, (WITH c(n) AS (SELECT a.src), d(m) AS (SELECT n + f.src FROM c JOIN cw_e f ON f.src >= c.n) "
        "SELECT count(*) FROM d) FROM cw_e a",
        id="cte_joining_another",
    ),
    q(
        "SELECT a.src, (WITH c(n) AS (SELECT a.src), d(m) AS (SELECT f.src FROM cw_e f LEFT JOIN c ON f.src = c.n "
        "WHERE c.n IS NULL) SELECT count(*) FROM d) FROM cw_e a",
        id="cte_left_joining_another",
    ),
    # the subquery's query a set operation, with or without a WITH
    q(
        "SELECT e.src FROM cw_e e WHERE 2 IN (WITH c(n) AS (SELECT e.src) SELECT n FROM c UNION SELECT n + 1 FROM c)",
        id="union_over_the_with",
    ),
    q("SELECT e.src FROM cw_e e WHERE 2 IN (SELECT e.src UNION SELECT e.src + 1)", id="union_without_with"),
    q(
        "SELECT e.src FROM cw_e e WHERE EXISTS (SELECT e.src, 1 WHERE e.src > 0 UNION SELECT 2, 3 WHERE e.src > 3)",
        id="exists_over_a_union_of_two_columns",
    ),
    # nested correlated WITHs
    q(
        "SELECT a.src FROM cw_e a WHERE EXISTS (WITH c(n) AS (SELECT a.src) SELECT 1 FROM c WHERE n IN "
        "(WITH d(m) AS (SELECT c.n + 1) SELECT m - 1 FROM d))",
        id="nested_in_the_query",
    ),
    q(
        "SELECT e.src, (WITH c(n) AS (SELECT g.src FROM cw_e g WHERE EXISTS (WITH d(m) AS (SELECT g.src + e.src) "
        "SELECT 1 FROM d WHERE m = 2 * e.src)) SELECT count(*) FROM c) FROM cw_e e",
        id="nested_in_a_cte",
    ),
    null_guarded(
        "SELECT t.k FROM cw_t t WHERE NOT EXISTS (WITH c(n) AS (SELECT t.v) SELECT 1 FROM c{guard})",
        " WHERE t.v IS NOT NULL",
        id="null_not_exists",
    ),
]


@under(*ALL_STRATEGIES)
@pytest.mark.parametrize("case", CASES)
def test_correlated_with_matches_duckdb(cur, duck, case):
    check(cur, duck, **case)


@under("local", "distributed")
@pytest.mark.parametrize("case", FORMS)
def test_forms_of_correlated_with_match_duckdb(cur, duck, case):
    check(cur, duck, **case)


@under(*ALL_STRATEGIES)
def test_in_probe_joined_after_the_subquery(cur, duck):
    """The relation of an IN subquery joined before the probe's value is computed (the cheaper order): the
    probe is then compared with it, not bound anew."""
    check(cur, duck, "SELECT e.src FROM cw_e e WHERE 1 IN (SELECT g.b - 1 FROM cw_edge g WHERE g.a = e.src)")


def test_nested_aggregate_calls_are_refused(cur):
    with pytest.raises(recsql.ProgrammingError, match=r"aggregate calls cannot be nested \(line 1, column 12\)"):
        cur.execute("SELECT sum(max(src)) FROM cw_e")


@pytest.mark.parametrize("query", ["SELECT 1, 2 FROM cw_e f UNION SELECT 2, 3", "VALUES (1, 2), (3, 4)"])
def test_exists_over_rows_of_two_columns(cur, duck, query):
    """EXISTS finds a row or not, whatever the columns of the rows its query gives."""
    check(cur, duck, f"SELECT e.src FROM cw_e e WHERE EXISTS ({query})")


REFUSED = [  # neither the IR nor Spark SQL evaluates them: refused with what to write instead
    pytest.param(
        "SELECT a.src, (WITH c(n) AS (SELECT v FROM (SELECT a.src AS v) d) SELECT max(n) FROM c) FROM cw_e a",
        r"a derived table in a WITH cannot read the outer query's column 'a.src'; make it a CTE of that WITH",
        id="derived_table",
    ),
    pytest.param(
        "SELECT a.src, (WITH c(n) AS (SELECT count(*) FROM cw_e f WHERE f.src < a.src) SELECT max(n) FROM c) "
        "FROM cw_e a",
        r"a CTE reading columns of the outer query aggregates only with GROUP BY",
        id="aggregate_without_group_by",
    ),
    pytest.param(
        "SELECT a.src, (WITH c(n) AS (SELECT f.src FROM cw_e f WHERE f.src < a.src LIMIT 1) SELECT max(n) "
        "FROM c) FROM cw_e a",
        r"LIMIT / OFFSET in a CTE reading columns of the outer query are not supported",
        id="limit",
    ),
    pytest.param(
        "SELECT a.src, (WITH c(n) AS (SELECT a.src) SELECT count(*) FROM cw_e f LEFT JOIN c ON c.n = f.src) "
        "FROM cw_e a",
        r"'c' reads columns of the outer query: read it in the FROM clause or an inner join, "
        r"not a LEFT JOIN",
        id="left_join_in_the_query",
    ),
    pytest.param(
        "SELECT a.src FROM cw_e a WHERE EXISTS (WITH c(n) AS (SELECT a.src) SELECT 1 FROM cw_e f "
        "WHERE f.src IN (SELECT n FROM c))",
        r"'c' reads columns of the outer query: read it in the FROM clause",
        id="read_in_a_nested_subquery",
    ),
    pytest.param(
        "SELECT a.src FROM cw_e a WHERE 1 IN (WITH c(n) AS (SELECT a.src) SELECT n FROM c EXCEPT SELECT 5)",
        r"a CTE reading columns of the outer query must be made of SELECTs",
        id="except",
    ),
    pytest.param(
        "SELECT a.src FROM cw_e a WHERE EXISTS (SELECT 1 FROM cw_e b WHERE b.src IN "
        "(WITH c(n) AS (SELECT a.src) SELECT n FROM c))",
        r"subqueries correlated across two levels are not "
        r"supported",
        id="two_levels_out",
    ),
]


@pytest.mark.parametrize("sql, message", REFUSED)
def test_forms_refused(cur, sql, message):
    with pytest.raises(recsql.NotSupportedError, match=message):
        cur.execute(sql)


LEFT_TO_SPARK = [  # (query, why the IR does not model it, as EXPLAIN says)
    pytest.param(
        "SELECT a.src FROM cw_e a WHERE 1 IN (SELECT * FROM cw_e WHERE src > 1 UNION SELECT a.src)",
        r"a set operation reading columns of the outer query lists its columns, not \*",
        id="union_of_star",
    ),
]


@pytest.mark.parametrize("sql, message", LEFT_TO_SPARK)
@pytest.mark.spark
def test_forms_outside_the_ir_run_as_spark_sql(cur, duck, sql, message):
    """Forms the IR does not model (the message says why) run as Spark SQL, with DuckDB's answers."""
    check(cur, duck, sql)
    cur.execute(f"EXPLAIN {sql}")
    plan = "\n".join(row[0] for row in cur.fetchall())
    why = re.split(r" (?:is|are) not supported", message.replace("\\", ""))[0][:40]
    assert "spark sql[" in plan and why in plan, plan


# ------------------------------------------------------------------ random tables

RANDOM = [  # (query, the guard DuckDB's text has for NULL outer values)
    (
        "SELECT h.k, h.v FROM cw_h h WHERE h.k IN (WITH RECURSIVE c(n) AS (SELECT h.v UNION SELECT n + 1 FROM c "
        "WHERE n < h.v + 2) SELECT n FROM c{guard})",
        " WHERE h.v IS NOT NULL",
    ),
    (
        "SELECT h.k FROM cw_h h WHERE NOT EXISTS (WITH c(n) AS (SELECT g.k FROM cw_h g WHERE g.v = h.v) "
        "SELECT 1 FROM c WHERE n > h.k{guard})",
        " AND h.v IS NOT NULL",
    ),
    (
        "SELECT h.k, h.v, (WITH RECURSIVE c(n) AS (SELECT h.v UNION ALL SELECT n + 1 FROM c WHERE n < h.k) "
        "SELECT count(*) FROM c{guard}) FROM cw_h h",
        " WHERE h.v IS NOT NULL",
    ),
    (
        "SELECT h.k, h.v FROM cw_h h WHERE h.k <= (WITH c(n) AS (SELECT g.v FROM cw_h g WHERE g.k = h.v UNION "
        "SELECT k) SELECT count(*) FROM c{guard})",
        " WHERE h.v IS NOT NULL",
    ),
]


@st.composite
def tables(draw) -> pd.DataFrame:
    """A few rows of small values, NULLs and duplicate rows among them."""
    rows = draw(st.lists(st.tuples(st.integers(0, 4), st.none() | st.integers(0, 4)), min_size=1, max_size=8))
    return pd.DataFrame(
        {"k": pd.Series([k for k, _ in rows], dtype="int64"), "v": pd.array([v for _, v in rows], dtype="Int64")}
    )


@under("local")
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=tables())
def test_random_tables_match_duckdb(conn, cur, duck, table):
    register_both(conn, duck, "cw_h", table)
    for sql, guard in RANDOM:
        check(cur, duck, sql.format(guard=""), sql.format(guard=guard), allow_empty=True)
