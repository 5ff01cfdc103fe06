"""A WITH [RECURSIVE] inside a subquery that reads the outer query's columns (translator/correlated_with.py),
wherever a subquery may stand, compared with DuckDB (tests/duckdb_reference.py), which runs the subquery row by
row. Tables carry a `cw_` prefix.
"""

from __future__ import annotations

import pandas as pd
import pytest

pytest.register_assert_rewrite("duckdb_reference")

import duckdb_reference
import recsql
from duckdb_reference import check, q
from strategies import under

ALL_STRATEGIES = ("local", "decomposed", "distributed")

CW_E = pd.DataFrame({"src": pd.Series([0, 1, 5], dtype="int64")})
CW_EDGE = pd.DataFrame({"a": pd.Series([0, 1, 2, 3, 5], dtype="int64"), "b": pd.Series([1, 2, 3, 1, 6], dtype="int64")})
TABLES = {"cw_e": CW_E, "cw_edge": CW_EDGE}

duck, cw_tables = duckdb_reference.reference_fixtures(TABLES, "cw_tables", autouse=True)

REACH = "WITH RECURSIVE r(x) AS (SELECT e.src UNION SELECT g.b FROM r JOIN cw_edge g ON g.a = r.x) "

CASES = [
    # IN with a literal or an expression on the left
    q("SELECT e.src FROM cw_e e WHERE 2 IN (WITH c(n) AS (SELECT e.src UNION SELECT e.src + 1) SELECT n FROM c)",
      id="in_literal"),
    q("SELECT e.src FROM cw_e e WHERE 2 IN (WITH RECURSIVE c(n) AS (SELECT e.src UNION SELECT n + 1 FROM c "
      "WHERE n < e.src + 1) SELECT n FROM c)", id="in_literal_recursive"),
    q("SELECT e.src FROM cw_e e WHERE e.src * 2 IN (WITH c(n) AS (SELECT e.src UNION ALL SELECT e.src + 1) "
      "SELECT n FROM c)", id="in_expression"),
    q("SELECT e.src FROM cw_e e WHERE 2 NOT IN (WITH RECURSIVE c(n) AS (SELECT e.src UNION SELECT n + 1 FROM c "
      "WHERE n < e.src + 1) SELECT n FROM c)", id="not_in_literal"),
    # a scalar subquery in the select list
    q("SELECT e.src, (WITH c(n) AS (SELECT e.src) SELECT count(*) FROM c) AS k FROM cw_e e ORDER BY e.src",
      ordered=True, id="scalar_ordered"),
    # a join condition
    q("SELECT a.src, b.src FROM cw_e a JOIN cw_e b ON b.src IN (WITH c(n) AS (SELECT a.src UNION SELECT a.src + 1) "
      "SELECT n FROM c)", id="join_condition"),
]


@under(*ALL_STRATEGIES)
@pytest.mark.parametrize("case", CASES)
def test_correlated_with_matches_duckdb(cur, duck, case):
    check(cur, duck, **case)


# forms whose translation is the question: under one Spark strategy besides local, for the module's time
FORMS = [
    q("SELECT e.src, (" + REACH + "SELECT count(*) FROM r) AS k FROM cw_e e ORDER BY k DESC, e.src", ordered=True,
      id="scalar_ordered_by_it"),
    q("SELECT count((WITH c(n) AS (SELECT e.src) SELECT n FROM c)) FROM cw_e e", id="aggregate_of_it"),
    q("SELECT e.src % 2 AS p, sum((WITH c(n) AS (SELECT e.src UNION SELECT e.src + 1) SELECT count(*) FROM c)) "
      "FROM cw_e e GROUP BY e.src % 2", id="aggregate_of_an_aggregating_one"),
]


@under("local", "distributed")
@pytest.mark.parametrize("case", FORMS)
def test_forms_of_correlated_with_match_duckdb(cur, duck, case):
    check(cur, duck, **case)


@under(*ALL_STRATEGIES)
def test_in_probe_joined_after_the_subquery(cur, duck):
    """The relation of an IN subquery joined before the probe's value is computed (the cheaper order): the
    probe is then compared with it, not bound anew."""
    check(cur, duck, "SELECT e.src FROM cw_e e WHERE 1 IN (SELECT g.b - 1 FROM cw_edge g WHERE g.a = e.src)")


@pytest.mark.parametrize("query", ["SELECT 1, 2 FROM cw_e f UNION SELECT 2, 3", "VALUES (1, 2), (3, 4)"])
def test_exists_over_rows_of_two_columns(cur, duck, query):
    """EXISTS finds a row or not, whatever the columns of the rows its query gives."""
    check(cur, duck, f"SELECT e.src FROM cw_e e WHERE EXISTS ({query})")


def test_nested_aggregate_calls_are_refused(cur):
    with pytest.raises(recsql.ProgrammingError, match=r"aggregate calls cannot be nested \(line 1, column 12\)"):
        cur.execute("SELECT sum(max(src)) FROM cw_e")
