"""Subqueries inside a recursive CTE's branch, and what recsql says when it refuses one.

A subquery's own WITH may read the columns of the recursive CTE around it (`NOT EXISTS (WITH w(c) AS (SELECT
y.a FROM t y WHERE y.a = r.n) SELECT c FROM w)`): when each column it reads is equated with an expression of its
own tables, its CTEs are computed from those tables alone, before the recursion, so that the recursion may negate
or aggregate them. Answers are compared with DuckDB (tests/duckdb_reference.py), which runs the subquery row by
row. A subquery that does read the recursion (or a WITH that reads its columns otherwise) is refused, with a
message that names the CTEs the query wrote, never a relation recsql made for a part of it. Tables carry an `sr_`
prefix.
"""

from __future__ import annotations

import re

import duckdb_reference
import pyarrow as pa
import pytest
from duckdb_reference import check, q
from strategies import under

import recsql

INT, BIGINT = pa.int32(), pa.int64()


def table(columns: dict[str, pa.DataType], rows: list[tuple]) -> pa.Table:
    return pa.table({name: pa.array([row[i] for row in rows], kind) for i, (name, kind) in enumerate(columns.items())})


EDGE, ROW = {"src": INT, "dst": INT, "w": BIGINT}, {"a": INT, "b": BIGINT, "s": pa.string()}
TABLES = {  # cycles, a self-loop, parallel edges, NULLs on both sides of the correlation
    "sr_t": table(ROW, [(1, 10, "x"), (None, 20, None), (2, None, "y"), (2, 20, "y"), (3, 5, "ab"), (5, 12, "x")]),
    "sr_e": table(
        EDGE,
        [
            (1, 2, 1),
            (2, 3, 2),
            (3, 1, 3),
            (3, 3, 0),
            (1, 2, 5),
            (None, 1, 1),
            (4, None, 2),
            (3, 4, 1),
            (4, 5, 1),
            (5, 6, 1),
        ],
    ),
    # the tables of the random query that found Spark's "Reference `l`.`E` is ambiguous" (tests/test_differential.py)
    "sr_e1": table(EDGE, [(1, 2, 3)]),
    "sr_t2": table(ROW, [(1, 5, "b")]),
}

duck, sr_tables = duckdb_reference.reference_fixtures(TABLES, "sr_tables", autouse=True)

STEP = "SELECT e.dst FROM r JOIN sr_e e ON r.n = e.src WHERE"
REACH = "WITH RECURSIVE r(n) AS (SELECT 1 UNION " + STEP + " {}) SELECT * FROM r"

# a WITH inside a subquery of the recursive branch, reading r.n through an equality with its own tables' columns
CORRELATED_WITH = [
    q(
        REACH.format("NOT EXISTS (WITH w(c) AS (SELECT y.a FROM sr_t y WHERE y.a = r.n AND y.b > 10) SELECT c FROM w)"),
        id="not_exists",
    ),
    q(
        REACH.format(
            "NOT EXISTS (WITH w(c) AS (SELECT y.a FROM sr_t y JOIN sr_e z ON z.src = y.a AND z.dst = r.n "
            "WHERE y.b > 10) SELECT c FROM w)"
        ),
        id="not_exists_equality_in_a_join",
    ),
    q(
        REACH.format(
            "NOT EXISTS (WITH w(c) AS (SELECT y.a FROM sr_t y WHERE r.n = y.a GROUP BY y.a "
            "HAVING count(*) > 1) SELECT c FROM w)"
        ),
        id="not_exists_grouped",
    ),
    q(
        REACH.format("e.w NOT IN (WITH w(c) AS (SELECT y.b - 9 FROM sr_t y WHERE y.a = r.n) SELECT c FROM w)"),
        id="not_in",
    ),
    q(
        REACH.format("2 > (WITH w(c) AS (SELECT y.b FROM sr_t y WHERE y.a = r.n) SELECT count(*) FROM w)"),
        id="scalar_count",
    ),
    q(
        REACH.format(
            "e.w IN (WITH w14(c) AS (SELECT y.b FROM sr_t y WHERE y.b > 9 * (WITH w17(d) AS "
            "(SELECT z.b FROM sr_t z WHERE z.a = r.n) SELECT count(*) FROM w17)) SELECT c - 9 FROM w14)"
        ),
        id="scalar_count_inside_an_in",
    ),
    q(
        REACH.format(
            "NOT EXISTS (WITH RECURSIVE c(m) AS (SELECT y.b FROM sr_t y WHERE y.a = r.n "
            "UNION SELECT m + 1 FROM c WHERE m < 13) SELECT 1 FROM c WHERE m = 13)"
        ),
        id="recursive_with",
    ),
    q(
        "WITH RECURSIVE r(n, k) AS (SELECT 1, 0 UNION SELECT e.dst, (WITH w(c) AS (SELECT y.b FROM sr_t y "
        "WHERE y.a = r.n) SELECT count(*) FROM w) FROM r JOIN sr_e e ON r.n = e.src) SELECT * FROM r",
        id="scalar_count_selected",
    ),
    q(
        "WITH RECURSIVE r(n, k) AS (SELECT 1, 0 UNION ALL SELECT e.dst, k + 1 FROM r JOIN sr_e e ON r.n = e.src "
        "WHERE k < 4 AND NOT EXISTS (WITH w(c) AS (SELECT y.a FROM sr_t y WHERE y.a = r.n AND y.b > 10) "
        "SELECT c FROM w)) SELECT * FROM r",
        id="union_all",
    ),
]
# a recursion with a pivot (r.s passes through unchanged), which the decomposed strategy runs as one job
PIVOTED = q(
    "WITH RECURSIVE r(s, n) AS (SELECT src, dst FROM sr_e UNION SELECT r.s, e.dst FROM r JOIN sr_e e "
    "ON r.n = e.src WHERE NOT EXISTS (WITH w(c) AS (SELECT y.b FROM sr_t y WHERE y.a = r.n AND y.b > 10) "
    "SELECT c FROM w)) SELECT * FROM r",
    id="pivoted",
)


@under("local", "distributed")
@pytest.mark.parametrize("case", CORRELATED_WITH)
def test_a_with_reading_the_recursions_columns_through_equalities(cur, duck, case):
    check(cur, duck, **case)


@under("local", "decomposed", "distributed")
def test_a_with_reading_the_recursions_columns_in_a_pivoted_recursion(cur, duck, strategy):
    check(cur, duck, **PIVOTED.values[0])
    assert strategy and not strategy.others, f"the recursion ran with {strategy.others}, not {strategy.strategy}"


INTERNAL = re.compile(
    r"\b(exists_sub|in_sub|outer_values|scalar|agg|anti_join|semi_join|derived|answer)(_\d+)?\b"
    r"|_(branch|left|right|anchor)\b"
)

REFUSED = [
    # the WITH reads the recursive CTE itself: a negation through the recursion
    pytest.param(
        REACH.format("NOT EXISTS (WITH w(c) AS (SELECT x.n FROM r x WHERE x.n = r.n) SELECT c FROM w)"),
        recsql.ProgrammingError,
        "negation through recursion: r depends on NOT a subquery reading w within "
        "the recursive cycle (r, w); negation (NOT EXISTS",
        id="with_reading_the_recursion",
    ),
    # the WITH reads r.n other than through an equality with its own columns: computed from r's rows
    pytest.param(
        REACH.format("NOT EXISTS (WITH c(m) AS (SELECT r.n + 1) SELECT 1 FROM c WHERE m > 3)"),
        recsql.ProgrammingError,
        "r depends on NOT a subquery reading c within the recursive cycle (r, c) (a WITH inside a subquery "
        "reads r.n of the recursion other than through an equality with a column of its own tables, as in "
        "WHERE x.c = r.n, so its CTEs are computed from the recursion's rows)",
        id="with_without_from",
    ),
    pytest.param(
        REACH.format("NOT EXISTS (WITH w(c) AS (SELECT y.a FROM sr_t y WHERE y.a = r.n + 1) SELECT c FROM w)"),
        recsql.ProgrammingError,
        "within the recursive cycle (r, w) (a WITH inside a subquery reads r.n of "
        "the recursion other than through an equality",
        id="with_equating_an_expression_of_the_outer_column",
    ),
    pytest.param(
        REACH.format("3 > (WITH w(c) AS (SELECT y.b FROM sr_t y WHERE y.a > r.n) SELECT count(*) FROM w)"),
        recsql.ProgrammingError,
        "aggregation through recursion: a GROUP BY aggregate over w is inside the "
        "recursive cycle (r, w) (a WITH inside a subquery reads r.n",
        id="with_correlated_by_a_comparison_under_an_aggregate",
    ),
    pytest.param(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5 AND EXISTS (WITH c(m) AS "
        "(SELECT r.n) SELECT 1 FROM c WHERE m > 0)) SELECT * FROM r",
        recsql.NotSupportedError,
        "a subquery removes duplicates (DISTINCT, GROUP BY or UNION, or the matches of EXISTS / IN, kept "
        "once) inside the UNION ALL recursion of 'r'",
        id="with_without_from_in_union_all",
    ),
    # subqueries and set operations over the recursive CTE in its own recursive branch
    pytest.param(
        REACH.format("NOT EXISTS (SELECT 1 FROM r r2 WHERE r2.n = e.src + 1)"),
        recsql.ProgrammingError,
        "negation through recursion: r depends on NOT a subquery reading r within the recursive cycle (r);",
        id="not_exists_over_the_recursion",
    ),
    pytest.param(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION (SELECT e.dst FROM r JOIN sr_e e ON r.n = e.src EXCEPT "
        "SELECT n FROM r)) SELECT * FROM r",
        recsql.ProgrammingError,
        "negation through recursion: r depends on NOT a subquery reading r within the recursive cycle (r);",
        id="except_over_the_recursion",
    ),
    pytest.param(
        REACH.format("EXISTS (SELECT 1 FROM r r2 WHERE r2.n < e.src)"),
        recsql.NotSupportedError,
        "r reads r within the recursive cycle (r) through an EXISTS or IN subquery that reads columns of "
        "a LEFT JOIN or is correlated by a condition other than equalities",
        id="exists_by_a_comparison_over_the_recursion",
    ),
    pytest.param(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT (SELECT max(r2.n) FROM r r2 WHERE r2.n = r.n) + 1 "
        "FROM r WHERE r.n < 3) SELECT * FROM r",
        recsql.ProgrammingError,
        "aggregation through recursion: a GROUP BY aggregate over r is inside the recursive cycle (r);",
        id="scalar_aggregate_over_the_recursion",
    ),
    pytest.param(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT e.dst FROM sr_e e LEFT JOIN (SELECT n FROM r) q "
        "ON q.n = e.src WHERE q.n IS NULL) SELECT * FROM r",
        recsql.ProgrammingError,
        "outer join through recursion: r LEFT JOINs q within the recursive cycle (r, q);",
        id="left_join_of_a_derived_table_over_the_recursion",
    ),
    pytest.param(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT n + 1 FROM (SELECT n FROM r ORDER BY n DESC LIMIT 1) "
        "WHERE n < 3) SELECT * FROM r",
        recsql.NotSupportedError,
        "LIMIT / OFFSET through recursion: a query with LIMIT, FETCH FIRST or OFFSET (a subquery, or a branch "
        "or the body of a recursive CTE) is inside the recursive cycle (r);",
        id="limit_over_the_recursion",
    ),
]


@pytest.mark.parametrize("sql, kind, message", REFUSED)
def test_refusals_name_what_the_query_wrote(cur, sql, kind, message):
    with pytest.raises(kind) as error:
        cur.execute(sql)
    assert message in str(error.value)
    assert not INTERNAL.search(str(error.value)), str(error.value)


@under("local", "distributed")
def test_an_in_probe_beside_an_unused_recursive_cte(cur, duck):
    """The random query whose IN subquery's relation (restricted by magic sets to the probe 'x y') was joined before
    the probe's assignment: Spark refused two columns of one name, `l`.`E` (fixed by an assignment then being the
    equality it stands for); the unused recursive CTE and the GROUP BY shaped the plan that did so."""
    check(
        cur,
        duck,
        "WITH RECURSIVE r0(c0, c1, c2) AS (SELECT x1.w AS c0, x1.w AS c1, x1.src AS c2 FROM sr_e1 AS x1), "
        "r1(c0, c1, n) AS (SELECT q.*, 0 AS n FROM (SELECT x5.c2 AS c0, x5.c0 AS c1 FROM sr_e1 AS x4 "
        "CROSS JOIN r0 AS x5) AS q UNION ALL SELECT x7.n, x7.c1, x7.n FROM r1 AS x7) "
        "SELECT x9.b AS c0, COUNT(*) AS c1, x9.a AS c2 FROM sr_t2 AS x9 GROUP BY x9.b, x9.a "
        "UNION ALL SELECT x11.c1 AS c0, SUM(CAST(NULL AS INT)) AS c1, COUNT(*) AS c2 FROM r0 AS x11 "
        "WHERE 'x y' IN (SELECT x12.s FROM sr_t2 AS x12) GROUP BY x11.c1",
    )


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT x.a FROM sr_t x WHERE EXISTS (SELECT 1 FROM sr_t y GROUP BY y.a HAVING count(*) > 1)",
        "SELECT x.a FROM sr_t x WHERE NOT EXISTS (SELECT 1 FROM sr_t y WHERE y.a = x.a GROUP BY y.a HAVING "
        "count(*) > 1)",
        "SELECT x.a FROM sr_t x WHERE EXISTS (WITH w AS (SELECT count(*) AS c FROM sr_t) SELECT c FROM w WHERE c > 3)",
    ],
)
def test_an_aggregate_in_an_exists_subquery_is_the_subquerys(cur, duck, sql):
    """EXISTS holds its query without a Subquery node around it: its aggregates are not the WHERE's."""
    check(cur, duck, sql)
