"""[NOT] EXISTS and [NOT] IN over a subquery that aggregates without GROUP BY: SQL gives it one row for every
outer row, a count of 0 or a NULL where no input row matches the correlation, so `x IN (SELECT count(*) ...)`
holds for x = 0 there, `x NOT IN (...)` is unknown for a NULL x, and EXISTS always holds. An aggregate whose
group key a condition binds to a literal (`WHERE o.src = 0` beside the correlation) groups by that constant, one
group where there are rows and none over no row. Answers are compared with DuckDB (tests/duckdb_reference.py).
Tables carry an `ap_` prefix.
"""

from __future__ import annotations

import duckdb_reference
import pandas as pd
import pytest
from duckdb_reference import check, q
from strategies import EVERY_STRATEGY, under

# src 0 matches no row of ap_t; dst NULL, 0 (the count over no row) and another value
AP_E = pd.DataFrame(
    {
        "src": pd.array([0, 0, 0, 1, 2, None, 1], dtype="Int32"),
        "dst": pd.array([None, 0, 5, 1, 2, 0, 3], dtype="Int32"),
        "w": pd.array([3, 4, 6, 1, 2, 7, 8], dtype="Int64"),
    }
)
AP_T = pd.DataFrame({"a": pd.array([1, 2, 2, None], dtype="Int32"), "b": pd.array([1, 2, 2, 2], dtype="Int64")})

duck, ap_tables = duckdb_reference.reference_fixtures({"ap_e": AP_E, "ap_t": AP_T}, "ap_tables", autouse=True)

COUNT = "(SELECT count(*) FROM ap_t t WHERE t.b = e.src)"
CASES = [
    q(f"SELECT e.w FROM ap_e e WHERE e.dst IN {COUNT}", id="in_count"),
    q(f"SELECT e.w FROM ap_e e WHERE e.dst NOT IN {COUNT}", id="not_in_count"),
    q(f"SELECT e.w FROM ap_e e WHERE NOT e.dst IN ({COUNT})", id="not_in_count_parenthesized"),
    q("SELECT e.w FROM ap_e e WHERE e.dst IN (SELECT max(t.a) FROM ap_t t WHERE t.b = e.src)", id="in_max"),
    q("SELECT e.w FROM ap_e e WHERE e.dst NOT IN (SELECT max(t.a) FROM ap_t t WHERE t.b = e.src)", id="not_in_max"),
    q(
        "SELECT e.w FROM ap_e e WHERE e.src IN (SELECT count(t.a) FROM ap_t t WHERE t.b = e.dst)",
        id="in_count_of_a_column",
    ),
    q(f"SELECT e.w FROM ap_e e WHERE EXISTS {COUNT}", id="exists_count"),
    q(
        "SELECT e.w FROM ap_e e WHERE NOT EXISTS (SELECT max(t.a) FROM ap_t t WHERE t.b = e.src)",
        allow_empty=True,
        id="not_exists_max",
    ),
    q(
        "SELECT e.w FROM ap_e e WHERE e.dst IN (SELECT count(*) FROM ap_t t WHERE t.b = e.src HAVING count(*) > 0)",
        id="in_count_having",
    ),
    q("SELECT e.w FROM ap_e e WHERE e.dst IN (SELECT count(*) FROM ap_t t WHERE t.a = 2)", id="in_count_uncorrelated"),
    q(
        "SELECT e.w FROM ap_e e LEFT JOIN ap_t t ON t.a = e.dst WHERE t.b IN (SELECT count(*) FROM ap_t u "
        "WHERE u.a = e.src)",
        id="in_count_after_left_join",
    ),
]


@under("local", "distributed")
@pytest.mark.parametrize("case", CASES)
def test_predicates_over_one_aggregate_row_match_duckdb(cur, duck, case):
    check(cur, duck, **case)


@under(*EVERY_STRATEGY)
def test_in_count_inside_a_recursive_branch_matches_duckdb(cur, duck, strategy):
    check(
        cur,
        duck,
        "WITH RECURSIVE r(n) AS (SELECT 0 UNION SELECT e.dst FROM r JOIN ap_e e ON e.src = r.n "
        "WHERE e.dst NOT IN (SELECT count(*) FROM ap_t t WHERE t.b = e.dst)) SELECT n FROM r",
    )


CONSTANT_KEYS = [
    q(
        "SELECT e.src, (SELECT count(*) FROM ap_t t WHERE t.b = e.src AND e.src = 2) AS k FROM ap_e e",
        id="correlation_bound_to_a_literal",
    ),
    q(
        "SELECT e.src, (WITH w(c) AS (SELECT t.a FROM ap_t t WHERE t.b = e.src) SELECT count(*) FROM w "
        "WHERE e.src = 0) AS k FROM ap_e e",
        id="correlated_with_bound_to_a_literal",
    ),
    q("SELECT 0 AS k, -1 AS j, count(*) FROM ap_t GROUP BY 1, 2", id="grouped_by_literals"),
    q(
        "SELECT 0 AS k, count(*) FROM ap_t WHERE ap_t.a > 5 GROUP BY 1",
        allow_empty=True,
        id="grouped_by_a_literal_over_no_row",
    ),
]


@under("local", "distributed")
@pytest.mark.parametrize("case", CONSTANT_KEYS)
def test_aggregates_grouped_by_constants_match_duckdb(cur, duck, case):
    check(cur, duck, **case)
