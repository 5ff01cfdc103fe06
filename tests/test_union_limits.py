"""Mixed UNION / UNION ALL, LIMIT and OFFSET around a recursion, and a LIMIT stopping a recursion early.

1. Set operations are left-associative: `A UNION B UNION ALL C` is `(A UNION B) UNION ALL C` and keeps C's
   duplicates, `A UNION ALL B UNION C` is a set; the same in a subquery, a CTE, and a recursive CTE, whose
   outermost operator says whether it iterates as a set or as a bag. Answers are DuckDB's.
2. LIMIT, FETCH FIRST or OFFSET on a recursive CTE's body or on one of its recursive branches is refused, as
   DuckDB and PostgreSQL refuse the former; on a branch or a CTE outside the recursion they keep their rows.
3. A LIMIT with no ORDER BY reading a UNION ALL recursion through subqueries, CTEs, filters, computed columns
   and UNION ALLs stops a recursion that never ends alone: its rows are rows of the recursion (checked in plain
   Python) and as many as the LIMIT says. A LIMIT over an aggregate, DISTINCT, ORDER BY, a join or a negation of
   the recursion needs all of it: on a recursion that ends, the answer is DuckDB's.
"""

from __future__ import annotations

from collections import Counter

import duckdb
import pandas as pd
import pytest
from duckdb_reference import check, q, reference_fixtures
from strategies import EVERY_STRATEGY, under

import recsql

ALL_STRATEGIES = EVERY_STRATEGY
IN_ONE_PROCESS_AND_ON_SPARK = ("local", "distributed")  # a query without recursion: DuckDB, or Spark SQL

TABLES = {
    "ul_t": pd.DataFrame({"x": [1, 1, 2, 3, 3]}),
    "ul_seed": pd.DataFrame({"s": [1, 2, 3]}),
}
duck, ul_tables = reference_fixtures(TABLES, "ul_tables", autouse=True)

# ---------------------------------------------------------------------------------------------------------------
# 1. Mixed set operations
# ---------------------------------------------------------------------------------------------------------------

T = "SELECT x FROM ul_t"
MIXED = [
    q(f"{T} UNION {T} UNION ALL {T}", id="union_then_union_all"),
    q(f"{T} UNION ALL {T} UNION {T}", id="union_all_then_union"),
    q(f"{T} UNION ALL ({T} UNION {T})", id="parenthesized_union"),
    q(f"({T} UNION ALL {T}) UNION ALL {T} UNION {T} UNION ALL {T}", id="four_operators"),
    q(f"SELECT x, count(*) FROM ({T} UNION {T} UNION ALL {T}) s GROUP BY x", id="in_a_subquery"),
    q(f"WITH c AS ({T} UNION {T} UNION ALL SELECT x + 1 FROM ul_t) SELECT x FROM c", id="in_a_cte"),
    q(f"({T} ORDER BY x LIMIT 2) UNION ALL ({T} ORDER BY x OFFSET 3) UNION ALL {T}", id="windowed_branches"),
    q(f"WITH c(x) AS (({T} UNION ALL {T}) ORDER BY x LIMIT 5 OFFSET 2) SELECT x FROM c", id="windowed_cte"),
    q(f"SELECT x FROM (({T} UNION {T}) ORDER BY x OFFSET 1) s UNION ALL {T}", id="windowed_union_subquery"),
]

RECURSIVE_MIXED = [  # DuckDB accepts the recursion only in the last branch
    q(
        f"WITH RECURSIVE r(n) AS ({T} UNION {T} UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r",
        id="set_base_bag_iteration",
    ),
    q(
        f"WITH RECURSIVE r(n) AS ({T} UNION ALL {T} UNION SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r",
        id="bag_base_set_iteration",
    ),
    q(
        f"WITH RECURSIVE r(n) AS ({T} UNION ALL {T} UNION ALL SELECT n + 1 FROM r WHERE n < 4) SELECT n FROM r",
        id="bag_base_bag_iteration",
    ),
    q(
        "WITH RECURSIVE r(s, n) AS (SELECT s, 1 FROM ul_seed UNION SELECT s, 1 FROM ul_seed UNION ALL "
        "SELECT s, n + 1 FROM r WHERE n < 4) SELECT s, n FROM r",
        id="pivoted_set_base_bag_iteration",
    ),
]


@pytest.mark.parametrize("case", MIXED)
@under(*IN_ONE_PROCESS_AND_ON_SPARK)
def test_mixed_set_operations_are_left_associative(cur, duck, case):
    check(cur, duck, **case)


@pytest.mark.parametrize("case", RECURSIVE_MIXED)
@under(*ALL_STRATEGIES)
def test_recursive_cte_iterates_as_its_last_operator_says(cur, duck, case):
    check(cur, duck, **case)


def test_a_union_inside_a_union_all_recursion_is_refused(cur):
    """The recursion in a UNION below the UNION ALL would remove duplicates per iteration (DuckDB refuses a
    recursive reference outside the last branch)."""
    with pytest.raises(recsql.NotSupportedError, match="removes duplicates .* inside the UNION ALL recursion"):
        cur.execute(
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT n + 1 FROM r WHERE n < 3 "
            "UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r"
        )


# ---------------------------------------------------------------------------------------------------------------
# 2. LIMIT / OFFSET inside a recursion
# ---------------------------------------------------------------------------------------------------------------

RECURSION = "SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5"
DUCKDB_REFUSES = [
    f"WITH RECURSIVE r(n) AS ({RECURSION} OFFSET 1) SELECT n FROM r",
    f"WITH RECURSIVE r(n) AS (({RECURSION}) OFFSET 2) SELECT n FROM r",
    f"WITH RECURSIVE r(n) AS (({RECURSION}) LIMIT 3) SELECT n FROM r",
    f"WITH RECURSIVE r(n) AS (({RECURSION}) LIMIT 3 OFFSET 1) SELECT n FROM r",
    f"WITH RECURSIVE r(n) AS ({RECURSION} FETCH FIRST 2 ROWS ONLY) SELECT n FROM r",
]
PER_ITERATION = [  # DuckDB applies these to each iteration's rows
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL (SELECT n + 1 FROM r WHERE n < 5 OFFSET 1)) SELECT n FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION (SELECT n + 1 FROM r WHERE n < 5 LIMIT 1)) SELECT n FROM r",
]


@pytest.mark.parametrize("sql", DUCKDB_REFUSES + PER_ITERATION)
def test_a_window_inside_the_recursion_is_refused(cur, sql):
    if sql in DUCKDB_REFUSES:
        with pytest.raises(duckdb.Error, match="LIMIT or OFFSET in a recursive query"):
            duckdb.sql(sql)
    with pytest.raises(recsql.NotSupportedError, match="LIMIT / OFFSET through recursion: .* inside the recursive"):
        cur.execute(sql)


@pytest.mark.parametrize(
    "case",
    [
        q(
            "WITH RECURSIVE r(n) AS ((SELECT x FROM ul_t ORDER BY x OFFSET 3) UNION ALL SELECT n + 1 FROM r "
            "WHERE n < 5) SELECT n FROM r",
            id="windowed_base_branch",
        ),
        q(
            "WITH RECURSIVE b(n) AS ((SELECT x FROM ul_t UNION ALL SELECT 7) ORDER BY x DESC LIMIT 2), "
            "r(n) AS (SELECT n FROM b UNION SELECT n + 1 FROM r WHERE n < 9) SELECT n FROM r",
            id="windowed_cte_before",
            duck="WITH RECURSIVE r(n) AS (SELECT n FROM ((SELECT x FROM ul_t UNION ALL SELECT 7) ORDER BY x "
            "DESC LIMIT 2) "
            "b(n) UNION SELECT n + 1 FROM r WHERE n < 9) SELECT n FROM r",
        ),  # DuckDB: every CTE there is recursive
    ],
)
@under(*ALL_STRATEGIES)
def test_a_window_before_the_recursion_keeps_its_rows(cur, duck, case):
    check(cur, duck, **case)


# ---------------------------------------------------------------------------------------------------------------
# 3. A LIMIT stopping a recursion
# ---------------------------------------------------------------------------------------------------------------

ENDLESS = "WITH RECURSIVE r(s, n) AS (SELECT s, 1 FROM ul_seed UNION ALL SELECT s, n + 1 FROM r)"
SEEDS = {1, 2, 3}


def each_once(rows, valid):
    """Each row of (s, n) a row of the recursion (one per seed and n >= 1) satisfying `valid`, none twice."""
    return all(s in SEEDS and n >= 1 and valid(s, n) for s, n in rows) and len(set(rows)) == len(rows)


@pytest.mark.parametrize(
    "sql, limit, valid",
    [
        pytest.param(
            f"{ENDLESS} SELECT s, n FROM (SELECT s, n FROM r WHERE n % 2 = 0) q LIMIT 5",
            5,
            lambda rows: each_once(rows, lambda s, n: n % 2 == 0),
            id="filtered_subquery",
        ),
        pytest.param(
            f"{ENDLESS}, e AS (SELECT s, n * 10 AS m FROM r WHERE n > 3) SELECT s, m FROM e LIMIT 4",
            4,
            lambda rows: each_once(rows, lambda s, m: m % 10 == 0 and m > 30),
            id="computed_cte",
        ),
        pytest.param(
            f"{ENDLESS} SELECT n FROM r WHERE s = 2 LIMIT 3 OFFSET 2",
            3,
            lambda rows: len(set(rows)) == len(rows) and all(n >= 1 for (n,) in rows),
            id="filter_offset",
        ),
        pytest.param(
            f"{ENDLESS} SELECT s, n FROM r WHERE n % 3 = 0 UNION ALL SELECT s, n FROM r WHERE n % 5 = 0 LIMIT 6",
            6,
            lambda rows: (
                all(n % 3 == 0 or n % 5 == 0 for _, n in rows) and all(count <= 2 for count in Counter(rows).values())
            ),
            id="union_all_of_filters",
        ),
        pytest.param(
            "WITH RECURSIVE a(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM b), b(n) AS (SELECT n + 1 FROM a) "
            "SELECT n FROM a WHERE n % 4 = 1 LIMIT 3",
            3,  # a holds the odd numbers; Spark: a job an iteration
            lambda rows: all(n % 4 == 1 for (n,) in rows) and len(set(rows)) == 3,
            id="mutual_recursion",
        ),
        pytest.param(
            f"{ENDLESS} SELECT count(*) FROM (SELECT n FROM r WHERE s <> 2 LIMIT 7) q",
            1,
            lambda rows: rows == [(7,)],
            id="aggregate_over_a_limited_subquery",
        ),
        pytest.param(
            f"{ENDLESS}, w AS (SELECT n FROM r WHERE n > 2 LIMIT 4) SELECT n FROM w ORDER BY n",
            4,
            lambda rows: all(n > 2 for (n,) in rows) and rows == sorted(rows),
            id="limited_cte",
        ),
    ],
)
@under(*ALL_STRATEGIES)
def test_a_limit_stops_an_endless_recursion_through_its_readers(cur, sql, limit, valid):
    cur.execute("SET recsql.max_iterations = 60")
    try:
        cur.execute(sql)
        rows = cur.fetchall()
    finally:
        cur.execute("SET recsql.max_iterations = 10000")
    assert len(rows) == limit, rows
    assert valid(rows), rows


ENDS = "WITH RECURSIVE r(s, n) AS (SELECT s, 1 FROM ul_seed UNION ALL SELECT s, n + 1 FROM r WHERE n < 8)"


@pytest.mark.parametrize(
    "case",
    [
        q(f"{ENDS} SELECT count(*), max(n) FROM r LIMIT 1", id="aggregate"),
        q(f"{ENDS} SELECT s, count(*) FROM r WHERE n > 2 GROUP BY s LIMIT 5", id="grouped"),
        q(f"{ENDS} SELECT DISTINCT n FROM r LIMIT 20", id="distinct"),
        q(f"{ENDS} SELECT s, n FROM r ORDER BY n DESC, s LIMIT 2", id="order_by", ordered=True),
        q(f"{ENDS} SELECT * FROM (SELECT s, n FROM r ORDER BY n DESC, s LIMIT 2) q LIMIT 5", id="ordered_subquery"),
        q(f"{ENDS} SELECT a.s, a.n FROM r a JOIN r b ON a.s = b.s AND a.n = b.n + 7 LIMIT 5", id="join"),
        q(
            f"{ENDS} SELECT s, n FROM r a WHERE NOT EXISTS (SELECT 1 FROM r b WHERE b.s = a.s AND b.n = a.n + 1) "
            "LIMIT 5",
            id="negation",
        ),
    ],
)
@under(*ALL_STRATEGIES)
def test_a_limit_needing_the_whole_recursion_does_not_stop_it(cur, duck, case):
    """Each answer differs from what the first rows of the recursion would give."""
    check(cur, duck, **case)
