"""SQL the IR does not model runs as Spark SQL inside the plan (translator/opaque.py): window functions, FULL /
RIGHT / NATURAL / LATERAL joins, EXCEPT ALL / INTERSECT ALL, generators, PIVOT, subquery conditions inside OR or
under NOT, over tables and over recursive CTEs' results, and as the anchor of a recursion, under every strategy.
A recursion through such a query is refused, naming the construct and where it is; EXPLAIN shows the node.

Answers are DuckDB's on the same tables (tests/duckdb_reference.py); where DuckDB spells a construct otherwise
(explode, PIVOT), its text says the same thing in its own words. Tables carry an `op_` prefix.
"""

from __future__ import annotations

import duckdb_reference
import pandas as pd
import pytest
from duckdb_reference import check, q

import recsql

pytestmark = pytest.mark.spark

ALL_STRATEGIES = ("local", "decomposed", "distributed")

# a graph with a cycle (2 -> 3 -> 4 -> 2), weights with ties, one edge per (src, dst)
OP_E = pd.DataFrame(
    {
        "src": pd.Series([1, 1, 2, 3, 4, 4, 5, 6], dtype="int64"),
        "dst": pd.Series([2, 5, 3, 4, 2, 6, 6, 7], dtype="int64"),
        "w": pd.Series([3, 1, 2, 2, 5, 1, 4, 2], dtype="int64"),
    }
)
OP_N = pd.DataFrame({"id": pd.Series([1, 2, 3, 8], dtype="int64"), "name": ["a", "b", None, "h"]})

duck, op_tables = duckdb_reference.reference_fixtures({"op_e": OP_E, "op_n": OP_N}, "op_tables", autouse=True)

CLOSURE = (
    "WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM op_e UNION SELECT tc.src, e.dst FROM tc "
    "JOIN op_e e ON tc.dst = e.src) "
)
DEPTHS = (
    "WITH RECURSIVE reach(n, depth) AS (SELECT 1, 0 UNION SELECT e.dst, depth + 1 FROM reach "
    "JOIN op_e e ON e.src = reach.n WHERE depth < 4) "
)

OVER_RECURSION = [
    q(
        CLOSURE + "SELECT src, dst, row_number() OVER (PARTITION BY src ORDER BY dst) AS rn, "
        "count(*) OVER (PARTITION BY src) AS reached FROM tc",
        id="numbered_closure",
    ),
    q(CLOSURE + "SELECT *, rank() OVER (PARTITION BY src ORDER BY dst DESC) AS r FROM tc", id="star_and_rank"),
    q(DEPTHS + "SELECT n, depth, dense_rank() OVER (ORDER BY depth) AS level FROM reach", id="dense_rank_by_depth"),
    q(
        DEPTHS + "SELECT n, depth, lag(n, 1, -1) OVER (PARTITION BY depth ORDER BY n) AS before FROM reach",
        id="lag_within_a_level",
    ),
    q(
        CLOSURE + "SELECT src, dst FROM (SELECT src, dst, row_number() OVER (PARTITION BY src ORDER BY dst) AS rn "
        "FROM tc) t WHERE rn = 1",
        id="first_per_group_in_a_derived_table",
    ),
    q(
        CLOSURE + "SELECT t.src, t.dst, sum(e.w) OVER (PARTITION BY t.src ORDER BY t.dst ROWS BETWEEN UNBOUNDED "
        "PRECEDING AND CURRENT ROW) AS running FROM tc t JOIN op_e e ON e.src = t.dst",
        id="running_sum_over_a_join",
    ),
]

WINDOW_ANCHORS = [
    q(
        "WITH RECURSIVE chain(node, k) AS (SELECT src, row_number() OVER (ORDER BY src, dst) FROM op_e "
        "UNION SELECT e.dst, chain.k FROM chain JOIN op_e e ON e.src = chain.node) SELECT * FROM chain",
        id="numbered_anchor",
    ),
    q(
        "WITH RECURSIVE r(n) AS (SELECT src FROM (SELECT src, rank() OVER (ORDER BY w DESC) AS rk FROM op_e) t "
        "WHERE rk = 1 UNION SELECT e.dst FROM r JOIN op_e e ON e.src = r.n) SELECT * FROM r",
        id="anchor_reading_a_ranked_derived_table",
    ),
    q(
        "WITH RECURSIVE best AS (SELECT src, dst FROM (SELECT src, dst, row_number() OVER (PARTITION BY src "
        "ORDER BY w) AS rn FROM op_e) t WHERE rn = 1), r(n) AS (SELECT dst FROM best WHERE src = 1 "
        "UNION SELECT b.dst FROM r JOIN best b ON b.src = r.n) SELECT * FROM r",
        id="recursion_over_a_windowed_cte",
    ),
]


@pytest.mark.strategies(*ALL_STRATEGIES)
@pytest.mark.parametrize("case", OVER_RECURSION + WINDOW_ANCHORS)
def test_windows_around_a_recursion_match_duckdb(case, cur, duck, strategy):
    check(cur, duck, **case)


OTHER_FORMS = [
    q("SELECT n.id, e.dst FROM op_n n FULL JOIN op_e e ON n.id = e.src", id="full_join"),
    q("SELECT * FROM op_n n FULL OUTER JOIN op_e e ON n.id = e.src AND e.w > 1", id="full_join_star"),
    q("SELECT n.name, e.src FROM op_e e RIGHT JOIN op_n n ON n.id = e.dst", id="right_join"),
    q("SELECT * FROM op_e NATURAL JOIN (SELECT id AS src, name FROM op_n) n", id="natural_join"),
    q(
        "SELECT e.src, m.top FROM op_e e, LATERAL (SELECT max(w) AS top FROM op_e f WHERE f.src = e.dst) m",
        id="lateral_subquery",
    ),
    q("SELECT src FROM op_e EXCEPT ALL SELECT dst FROM op_e", id="except_all"),
    q("SELECT src FROM op_e INTERSECT ALL SELECT dst FROM op_e", id="intersect_all"),
    q(
        "SELECT src, x FROM op_e LATERAL VIEW explode(array(src, dst)) t AS x",
        "SELECT src, unnest([src, dst]) AS x FROM op_e",
        id="lateral_view_explode",
    ),
    q(
        "SELECT * FROM (SELECT src, dst, w FROM op_e) PIVOT (sum(w) FOR dst IN (2 AS d2, 6 AS d6))",
        "SELECT src, sum(CASE WHEN dst = 2 THEN w END) AS d2, sum(CASE WHEN dst = 6 THEN w END) AS d6 FROM op_e "
        "GROUP BY src",
        id="pivot",
    ),
    q("SELECT src, dst FROM op_e WHERE w = 1 OR dst IN (SELECT id FROM op_n)", id="in_inside_or"),
    q(
        "SELECT src, dst FROM op_e e WHERE NOT (w > 1 AND EXISTS (SELECT 1 FROM op_n n WHERE n.id = e.src))",
        id="exists_under_not",
    ),
    q("SELECT src, w FROM op_e e QUALIFY row_number() OVER (PARTITION BY src ORDER BY w, dst) = 1", id="qualify"),
    q(
        "SELECT e.src, (SELECT f.dst FROM op_e f WHERE f.src = e.src ORDER BY f.dst LIMIT 1) AS first FROM op_e e",
        id="limit_in_a_correlated_subquery",
    ),
]


@pytest.mark.parametrize("case", OTHER_FORMS)
def test_sql_outside_the_ir_matches_duckdb(case, cur, duck):
    check(cur, duck, **case)


@pytest.mark.strategies(*ALL_STRATEGIES)
def test_a_recursion_reading_a_full_join_matches_duckdb(cur, duck, strategy):
    check(
        cur,
        duck,
        "WITH RECURSIVE r(n) AS (SELECT coalesce(e.src, n.id) FROM op_n n FULL JOIN op_e e ON n.id = e.src "
        "WHERE e.src IS NULL UNION SELECT e.dst FROM r JOIN op_e e ON e.src = r.n) SELECT * FROM r",
    )


def test_explain_shows_the_node_and_where_it_runs(cur):
    cur.execute("EXPLAIN " + CLOSURE + "SELECT *, rank() OVER (PARTITION BY src ORDER BY dst) AS r FROM tc")
    plan = "\n".join(row[0] for row in cur.fetchall())
    assert "answer(src, dst, r) :- spark sql[SELECT *, RANK() OVER (PARTITION BY src ORDER BY dst) AS r FROM tc" in plan
    assert "answer  (on Spark: Spark SQL evaluates the window function RANK() (line 1, column" in plan


@pytest.mark.parametrize(
    "sql, construct",
    [
        (
            "WITH RECURSIVE r(n, k) AS (SELECT 1, 1 UNION SELECT n + 1, rank() OVER (ORDER BY k) FROM r WHERE n < 5) "
            "SELECT * FROM r",
            "the window function RANK() (line 1, column 60)",
        ),
        (
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT e.dst FROM r FULL JOIN op_e e ON e.src = r.n "
            "WHERE e.dst < 9) SELECT * FROM r",
            "FULL JOIN (line 1, column 70)",
        ),
        (
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT e.dst FROM op_e e WHERE e.w = 1 OR e.src IN "
            "(SELECT n FROM r)) SELECT * FROM r",
            "EXISTS / IN with a subquery",
        ),
    ],
)
def test_a_recursion_through_sql_outside_the_ir_is_refused(cur, sql, construct):
    with pytest.raises(recsql.NotSupportedError) as raised:
        cur.execute(sql)
    message = str(raised.value)
    assert message.startswith(construct) and "inside the recursive cycle (r)" in message, message


def test_a_view_holding_a_window_reads_as_spark_gives_it(cur, duck):
    cur.execute(
        "CREATE OR REPLACE VIEW op_ranked AS SELECT src, dst, rank() OVER (PARTITION BY src ORDER BY w) AS r FROM op_e"
    )
    try:
        check(
            cur,
            duck,
            CLOSURE.replace("FROM op_e", "FROM op_ranked WHERE r = 1", 1) + "SELECT * FROM tc",
            "WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM (SELECT src, dst, rank() OVER (PARTITION BY src "
            "ORDER BY w) AS r FROM op_e) WHERE r = 1 UNION SELECT tc.src, e.dst FROM tc JOIN op_e e ON tc.dst = e.src) "
            "SELECT * FROM tc",
        )
    finally:
        cur.execute("DROP VIEW op_ranked")


def test_parameters_reach_sql_outside_the_ir(cur, duck):
    check(
        cur,
        duck,
        "SELECT src, dst, rank() OVER (ORDER BY w, dst) AS r FROM op_e WHERE src > ?",
        params=(2,),
    )


def test_a_materialized_view_of_sql_outside_the_ir_is_refused(cur):
    with pytest.raises(recsql.NotSupportedError, match=r"runs as Spark SQL: store the query with CREATE TABLE"):
        cur.execute("CREATE MATERIALIZED VIEW op_mv AS SELECT src, rank() OVER (ORDER BY w) AS r FROM op_e")
    cur.execute("SHOW TABLES")
    assert "op_mv" not in {row[0] for row in cur.fetchall()}
