"""A scalar subquery returns at most one row for a row of the query: none gives NULL, one its value, more an
error (a DataError saying so and where), as in DuckDB, Spark and PostgreSQL; never the query's row repeated
once per row of the subquery. Uncorrelated and correlated, in the SELECT list, WHERE, HAVING and a recursive
branch, under every strategy. A subquery that is at most one row per correlation key by construction (an
aggregate without GROUP BY or grouped by the correlation, a LIMIT 1, a single row) carries no check.

Answers and errors are compared with DuckDB's (tests/duckdb_reference.py). Tables carry an `sr_` prefix.
"""

from __future__ import annotations

import duckdb
import duckdb_reference
import pandas as pd
import pytest
from duckdb_reference import check, q
from strategies import EVERY_STRATEGY, under

import recsql

# key 2 has two rows (of different values), key 5 two rows of one value; 4 a NULL value
SR_T = pd.DataFrame(
    {
        "a": pd.array([1, 2, 2, 3, 4, 5, 5], dtype="Int32"),
        "b": pd.array([10, 20, 21, 30, None, 50, 50], dtype="Int64"),
    }
)
SR_ONE = pd.DataFrame({"a": pd.array([4], dtype="Int32")})
# outer keys with one row of sr_t each (1, 3, 4) or none (9)
SR_O = pd.DataFrame({"k": pd.array([1, 3, 4, 9], dtype="Int32")})
TABLES = {"sr_t": SR_T, "sr_one": SR_ONE, "sr_o": SR_O}

duck, sr_tables = duckdb_reference.reference_fixtures(TABLES, "sr_tables", autouse=True)

ONE_ROW_OR_NONE = [
    q("SELECT o.k, (SELECT a FROM sr_one) FROM sr_o o", id="uncorrelated_select_list"),
    q("SELECT o.k, (SELECT a FROM sr_t WHERE a > 100) AS x FROM sr_o o", id="uncorrelated_no_row_is_null"),
    q("SELECT o.k FROM sr_o o WHERE o.k < (SELECT a FROM sr_one)", id="uncorrelated_where"),
    q("SELECT o.k, (SELECT t.b FROM sr_t t WHERE t.a = o.k) AS b FROM sr_o o", id="correlated_select_list"),
    q("SELECT o.k FROM sr_o o WHERE (SELECT t.b FROM sr_t t WHERE t.a = o.k) > 15", id="correlated_where"),
    q("SELECT o.k FROM sr_o o WHERE (SELECT t.b FROM sr_t t WHERE t.a = o.k) IS NULL", id="correlated_null"),
    q(
        "SELECT a, count(*) FROM sr_t GROUP BY a HAVING count(*) < (SELECT a FROM sr_one WHERE a = 4)",
        id="uncorrelated_having",
    ),
    q(
        "SELECT o.k, (SELECT t.b FROM sr_t t WHERE t.a = o.k GROUP BY t.a, t.b) FROM sr_o o",
        id="correlated_grouped_by_more_than_the_key",
    ),
    q("SELECT (SELECT a FROM sr_t WHERE a = 1 UNION ALL SELECT a FROM sr_one WHERE a > 10)", id="union_of_one_row"),
    q(
        "WITH RECURSIVE r(n, v) AS (SELECT 1, 0 UNION ALL SELECT r.n + 2, (SELECT t.b FROM sr_t t WHERE t.a = r.n) "
        "FROM r WHERE r.n < 5) SELECT * FROM r",
        id="correlated_in_recursive_branch",
    ),
    q(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT r.n + 1 FROM r WHERE r.n < (SELECT a FROM sr_one)) "
        "SELECT * FROM r",
        id="uncorrelated_in_recursive_branch",
    ),
]


@under(*EVERY_STRATEGY)
@pytest.mark.parametrize("case", ONE_ROW_OR_NONE)
def test_a_scalar_subquery_of_one_row_or_none_matches_duckdb(cur, duck, case):
    check(cur, duck, **case)


SUBQUERY = "(SELECT u.b FROM sr_t u WHERE u.a = t.a)"
TOO_MANY_ROWS = [
    pytest.param("SELECT (SELECT a FROM sr_t) AS x", "(SELECT a FROM sr_t)", id="uncorrelated_select_list"),
    pytest.param(
        "SELECT (SELECT b FROM sr_t WHERE a = 5)", "(SELECT b FROM sr_t WHERE a = 5)", id="uncorrelated_equal_values"
    ),
    pytest.param(
        "SELECT o.k FROM sr_o o WHERE o.k = (SELECT a FROM sr_t WHERE a < 3)",
        "(SELECT a FROM sr_t WHERE a < 3)",
        id="uncorrelated_where",
    ),
    pytest.param(f"SELECT t.a, {SUBQUERY} FROM sr_t t", SUBQUERY, id="correlated_select_list"),
    pytest.param(f"SELECT t.a FROM sr_t t WHERE t.b >= {SUBQUERY}", SUBQUERY, id="correlated_where"),
    pytest.param(
        "SELECT o.k, (SELECT max(t.b) FROM sr_t t GROUP BY t.a) FROM sr_o o",
        "(SELECT max(t.b) FROM sr_t t GROUP BY t.a)",
        id="uncorrelated_grouped",
    ),
    pytest.param(
        "SELECT a, count(*) FROM sr_t GROUP BY a HAVING count(*) < (SELECT a FROM sr_t WHERE a > 3)",
        "(SELECT a FROM sr_t WHERE a > 3)",
        id="uncorrelated_having",
    ),
    pytest.param(
        "WITH RECURSIVE r(n, v) AS (SELECT 0, 0 UNION ALL SELECT r.n + 2, "
        "(SELECT t.b FROM sr_t t WHERE t.a = r.n) FROM r WHERE r.n < 5) SELECT * FROM r",
        "(SELECT t.b FROM sr_t t WHERE t.a = r.n)",
        id="correlated_in_recursive_branch",
    ),
    pytest.param(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT r.n + 1 FROM r WHERE r.n < (SELECT a FROM sr_t)) "
        "SELECT * FROM r",
        "(SELECT a FROM sr_t)",
        id="uncorrelated_in_recursive_branch",
    ),
]


@under(*EVERY_STRATEGY)
@pytest.mark.parametrize("sql, subquery", TOO_MANY_ROWS)
def test_a_scalar_subquery_of_more_than_one_row_is_an_error(cur, duck, sql, subquery):
    with pytest.raises(duckdb.InvalidInputException, match="More than one row returned by a subquery"):
        duck.execute(sql).fetchall()
    with pytest.raises(recsql.DataError) as raised:
        cur.execute(sql)
        cur.fetchall()
    start = sql.index(subquery) + 1
    assert raised.value.message.startswith("a scalar subquery returned more than one row (line 1, column ")
    column = int(raised.value.message.rpartition("column ")[2].rstrip(")"))
    assert start <= column < start + len(subquery), (raised.value.message, start)


NO_CHECK = [
    "SELECT o.k, (SELECT max(t.b) FROM sr_t t WHERE t.a = o.k) FROM sr_o o",
    "SELECT o.k, (SELECT count(*) FROM sr_t t WHERE t.a = o.k) FROM sr_o o",
    "SELECT o.k, (SELECT max(t.b) FROM sr_t t WHERE t.a = o.k GROUP BY t.a) FROM sr_o o",
    "SELECT o.k, (SELECT max(t.b) FROM sr_t t WHERE t.a = o.k HAVING count(*) > 1) FROM sr_o o",
    "SELECT o.k FROM sr_o o WHERE o.k < (SELECT avg(a) FROM sr_t)",
    "SELECT o.k, (SELECT a FROM sr_t ORDER BY a LIMIT 1) FROM sr_o o",
    "SELECT o.k, (SELECT 7) FROM sr_o o",
]


@under("local")
@pytest.mark.parametrize("sql", NO_CHECK)
def test_a_scalar_subquery_of_one_row_per_key_by_construction_carries_no_check(cur, duck, sql):
    cur.execute("EXPLAIN " + sql)
    assert "RAISE_ERROR" not in "\n".join(row[0] for row in cur.fetchall())
    check(cur, duck, sql)


@under("local", "distributed")
def test_raise_error_is_a_data_error(cur, duck):
    """Spark's raise_error (DuckDB's error), which the check prints, fails the query with its message alone."""
    with pytest.raises(duckdb.InvalidInputException, match="too large"):
        duck.execute("SELECT CASE WHEN a > 4 THEN error('too large') ELSE a END FROM sr_t").fetchall()
    with pytest.raises(recsql.DataError) as raised:
        cur.execute("SELECT CASE WHEN a > 4 THEN raise_error('too large') ELSE a END FROM sr_t")
        cur.fetchall()
    assert raised.value.message == "too large"
