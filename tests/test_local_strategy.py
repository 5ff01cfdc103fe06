"""The local strategy (SET recsql.strategy = local): recursive strata evaluated in one process by DuckDB over
Arrow data must give what the distributed evaluation gives.

The other suites' recursive cases run under the local strategy too, against their own independent
references (DuckDB, networkx / plain Python, the RaDlog peer's answers: strategies.under). The cases here
compare the two strategies directly where only recsql defines the answer: column types, NULL handling,
error messages of the limits, progress events.
"""

from __future__ import annotations

import datetime
from collections import Counter
from decimal import Decimal

import duckdb_reference
import networkx as nx
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from duckdb_reference import register_tables
from explain import explain
from reference import transitive_closure
from spark_jobs import job_group, spark_jobs
from strategies import auto_with_local_rows, counting_runs, set_strategy

import recsql
from recsql.engine.local.engine import LocalFixpoint
from recsql.settings import Settings
from translator import dialect


@pytest.fixture
def local(conn, monkeypatch):
    """Every recursive stratum runs locally for the test (the suite's strategy again afterwards), and some did."""
    with counting_runs(conn, monkeypatch, "local") as runs:
        yield runs
    assert runs, "no recursive stratum ran locally"


# --- the two strategies side by side ------------------------------------------------------------------------

TABLES = {
    "lc_typed": pa.table(
        {
            "src": pa.array([1, 2, 3, 4], pa.int32()),
            "dst": pa.array([2, 3, 4, 5], pa.int32()),
            "w": pa.array([1, 2, 3, 1], pa.int32()),
            "big": pa.array([10, 20, 30, 40], pa.int64()),
            "dbl": pa.array([0.5, 1.25, 2.0, 0.125]),
            "dec": pa.array([Decimal("1.10"), Decimal("2.25"), Decimal("0.05"), Decimal("3.00")], pa.decimal128(10, 2)),
            "day": pa.array([datetime.date(2024, 1, d) for d in (1, 2, 3, 4)], pa.date32()),
            "name": ["a", "b", "c", "d"],
        }
    ),
    "lc_nulls": pa.table(
        {"a": pa.array([1, None, 2, None], pa.int32()), "b": pa.array([None, 1, 2, None], pa.int32())}
    ),
    "lc_block": pa.table({"x": pa.array([3, None], pa.int32())}),
    "lc_cycle": pd.DataFrame({"src": [1, 2, 3, 3], "dst": [2, 3, 1, 4]}),
}


def answer(conn, sql: str):
    """The rows (a multiset, numbers normalized) and the column types of `sql`, or the error it raises."""
    cursor = conn.cursor()
    try:
        cursor.execute(sql)
        return Counter(duckdb_reference.normalize(cursor.fetchall())), [column[1] for column in cursor.description]
    except recsql.Error as error:
        return type(error), error.message
    finally:
        cursor.close()


@pytest.fixture
def both(conn, local):
    """Runs a query under each strategy: {strategy: answer(...)}."""
    register_tables(conn, TABLES)

    def run(sql: str, settings: tuple[str, ...] = ()) -> dict:
        answers = {}
        cursor = conn.cursor()
        for strategy in ("distributed", "local"):
            set_strategy(conn, strategy)
            for setting in settings:
                cursor.execute(f"SET {setting}")
            try:
                answers[strategy] = answer(conn, sql)
            finally:
                cursor.execute("SET recsql.max_iterations = 10000")
                cursor.execute("SET recsql.max_rows = 100000000")
        cursor.close()
        return answers

    return run


SP = (
    "sp(node, min() AS d) AS (SELECT 1, {zero}) UNION (SELECT e.dst, sp.d + e.{column} FROM sp, lc_typed "
    "e WHERE sp.node = e.src)"
)
SUM = (
    "s(node, sum() AS v) AS (SELECT dst, {value} FROM lc_typed) UNION (SELECT e.src, {step} FROM s, "
    "lc_typed e WHERE s.node = e.dst)"
)

SAME_ANSWER = [
    # types: Spark's union widening and aggregates decide them, iteration by iteration
    pytest.param(
        f"WITH RECURSIVE {SP.format(zero='0', column='big')} SELECT * FROM sp", id="int_exit_bigint_recursion"
    ),
    pytest.param(
        f"WITH RECURSIVE {SP.format(zero='CAST(0 AS DECIMAL(10,2))', column='dec')} SELECT * FROM sp",
        id="decimal_widening_per_iteration",
    ),
    pytest.param(f"WITH RECURSIVE {SP.format(zero='0.0D', column='dbl')} SELECT * FROM sp", id="double_min"),
    pytest.param(
        "WITH RECURSIVE c(node, count() AS n) AS (SELECT 1, 1) UNION (SELECT e.dst, c.n FROM c, lc_typed e "
        "WHERE c.node = e.src) SELECT * FROM c",
        id="count_int_becomes_bigint",
    ),
    pytest.param(f"WITH RECURSIVE {SUM.format(value='dec', step='s.v')} SELECT * FROM s", id="sum_decimal"),
    pytest.param(f"WITH RECURSIVE {SUM.format(value='dbl', step='s.v * 0.5')} SELECT * FROM s", id="sum_double"),
    pytest.param(
        "WITH RECURSIVE m(node, max() AS nm) AS (SELECT src, name FROM lc_typed) UNION "
        "(SELECT e.dst, m.nm FROM m, lc_typed e WHERE m.node = e.src) SELECT * FROM m",
        id="max_string",
    ),
    pytest.param(
        "WITH RECURSIVE p(node, path) AS (SELECT 1, 'x' UNION ALL SELECT e.dst, concat(p.path, e.name) "
        "FROM p JOIN lc_typed e ON e.src = p.node) SELECT * FROM p",
        id="union_all_strings",
    ),
    pytest.param(
        "WITH RECURSIVE d(day, n) AS (SELECT DATE '2024-01-01', 0 UNION SELECT date_add(d.day, 1), d.n + 1 "
        "FROM d WHERE d.day < DATE '2024-01-10') SELECT * FROM d",
        id="dates",
    ),
    pytest.param(
        "WITH RECURSIVE r(n, q, m, s) AS (SELECT 7, 7 / 2, 7 % 3, CAST(7 AS STRING) UNION "
        "SELECT r.n - 1, r.n / 2, r.n % 3, CAST(r.n div 4 AS STRING) FROM r WHERE r.n > 1) SELECT * FROM r",
        id="division_modulo_casts",
    ),
    # NULLs: equal to each other in the set difference, never in joins; NOT IN's null-aware anti-join
    pytest.param(
        "WITH RECURSIVE r(a, b) AS (SELECT a, b FROM lc_nulls UNION SELECT r.b, r.a FROM r) SELECT * FROM r",
        id="null_facts_are_known_facts",
    ),
    pytest.param(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT e.dst FROM r JOIN lc_typed e ON e.src = r.n "
        "WHERE e.dst NOT IN (SELECT x FROM lc_block WHERE x IS NOT NULL)) SELECT * FROM r",
        id="not_in",
    ),
    pytest.param(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT e.dst FROM r JOIN lc_typed e ON e.src = r.n "
        "WHERE e.dst NOT IN (SELECT x FROM lc_block)) SELECT * FROM r",
        id="not_in_with_null",
    ),
    pytest.param(
        "WITH RECURSIVE r(a, b) AS (SELECT a, b FROM lc_nulls UNION (SELECT r.b, r.a FROM r "
        "EXCEPT SELECT a, b FROM lc_nulls WHERE a IS NULL)) SELECT * FROM r",
        id="except_matches_null",
    ),
    pytest.param(
        "WITH RECURSIVE r(a, b) AS (SELECT a, b FROM lc_nulls WHERE a = 2 UNION (SELECT r.b, r.a FROM r "
        "INTERSECT SELECT b, a FROM lc_nulls)) SELECT * FROM r",
        id="intersect_matches_null",
    ),
    pytest.param(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT e.dst FROM r JOIN lc_cycle e ON e.src = r.n "
        "WHERE NOT EXISTS (SELECT 1 FROM lc_block b WHERE b.x = e.dst)) SELECT * FROM r",
        id="not_exists",
    ),
    # outer joins, table functions, aggregates below the recursion
    pytest.param(
        "WITH RECURSIVE r(n, w) AS (SELECT id, 0 FROM range(3) UNION SELECT r.n + 1, "
        "(SELECT max(t.w) FROM lc_typed t WHERE t.src = r.n) FROM r LEFT JOIN lc_nulls z ON z.a = r.n "
        "WHERE r.n < 6) SELECT * FROM r",
        id="range_left_join_scalar_subquery",
    ),
    pytest.param(
        "WITH RECURSIVE r(n, c) AS (SELECT src, count(*) FROM lc_typed GROUP BY src UNION "
        "SELECT r.n + 1, r.c FROM r WHERE r.n < 8) SELECT * FROM r",
        id="group_by_exit_rule",
    ),
]


@pytest.mark.spark
@pytest.mark.parametrize("sql", SAME_ANSWER)
def test_same_answer_and_types_as_distributed(both, sql):
    answers = both(sql)
    rows, _ = answers["local"]
    assert isinstance(rows, Counter) and rows, answers["local"]
    assert answers["local"] == answers["distributed"]


LIMITS = [
    pytest.param(
        "WITH RECURSIVE counter(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM counter WHERE n < 100) "
        "SELECT max(n) FROM counter",
        ("recsql.max_iterations = 5",),
        id="max_iterations",
    ),
    pytest.param(
        "WITH RECURSIVE counter(n) MAX RECURSION LEVEL 3 AS (SELECT 1 UNION ALL SELECT n + 1 FROM counter "
        "WHERE n < 10) SELECT * FROM counter",
        (),
        id="max_recursion_level",
    ),
    pytest.param(
        "WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM lc_cycle UNION SELECT tc.a, e.dst FROM tc "
        "JOIN lc_cycle e ON tc.b = e.src) SELECT * FROM tc",
        ("recsql.max_rows = 5",),
        id="max_rows",
    ),
    pytest.param(
        "WITH RECURSIVE paths(node, count() AS cnt) AS (SELECT 1, 1) UNION (SELECT e.dst, paths.cnt "
        "FROM paths, lc_cycle e WHERE paths.node = e.src) SELECT * FROM paths",
        ("recsql.max_iterations = 12",),
        id="count_on_a_cycle",
    ),
]


@pytest.mark.spark
@pytest.mark.parametrize("sql, settings", LIMITS)
def test_limits_raise_the_distributed_error(both, sql, settings):
    answers = both(sql, settings)
    assert answers["local"][0] is recsql.OperationalError, answers["local"]
    assert answers["local"] == answers["distributed"]


@pytest.mark.spark
@pytest.mark.parametrize(
    "sql",
    [
        pytest.param(
            "WITH RECURSIVE r(n) AS (SELECT 'a' UNION SELECT CAST(CAST(r.n AS INT) - 1 AS STRING) FROM r) "
            "SELECT * FROM r",
            id="bad_cast",
        ),
        pytest.param(
            "WITH RECURSIVE r(n) AS (SELECT 3 UNION SELECT r.n div (r.n - 1) FROM r) SELECT * FROM r",
            id="division_by_zero",
        ),
    ],
)
def test_bad_data_is_a_data_error(both, sql):
    answers = both(sql)
    assert answers["local"][0] is recsql.DataError, answers["local"]
    assert answers["distributed"][0] is recsql.DataError, answers["distributed"]


@pytest.mark.spark
def test_progress_events_of_the_local_query_and_the_distributed_loop(conn, both):
    events = []
    conn.session.progress = events.append
    try:
        answers = both(
            "WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM lc_cycle UNION SELECT tc.a, e.dst FROM tc "
            "JOIN lc_cycle e ON tc.b = e.src) SELECT * FROM tc"
        )
    finally:
        conn.session.progress = None
    assert answers["local"] == answers["distributed"]
    local_start = max(i for i, event in enumerate(events) if event.iteration == 0)  # `both` runs distributed first
    distributed, local = events[:local_start], events[local_start:]
    assert len(distributed) >= 3 and [e.iteration for e in distributed] == list(range(len(distributed)))
    # in this process one DuckDB query runs the UNION, calling back with each round's new facts: the loop's
    # iterations, each reported as it comes
    assert [(e.iteration, e.delta_rows) for e in local] == [(e.iteration, e.delta_rows) for e in distributed]
    assert local[-1].total_rows == distributed[-1].total_rows
    assert all(e.elapsed >= 0 for e in events)


@pytest.mark.spark
def test_no_spark_job_per_iteration(conn, local):
    sql = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 40) SELECT max(n) FROM r"
    local_jobs = spark_jobs(conn, sql, "local-strategy-local")
    set_strategy(conn, "distributed")
    distributed_jobs = spark_jobs(conn, sql, "local-strategy-distributed")
    assert distributed_jobs >= 1  # the counting sees Spark's jobs (one: the fixpoint runs in its tasks)
    assert local_jobs == 0  # the whole query runs in this process


def test_local_fixpoint_needs_no_spark(conn):
    """LocalFixpoint alone, on Arrow inputs and without the distributed types, computes the closure."""
    edges = [(1, 2), (2, 3), (3, 1), (3, 4)]
    conn.register("lc_edges", pd.DataFrame(edges, columns=["src", "dst"]))
    plan = conn.session.plan(
        dialect.parse(
            "WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM lc_edges UNION "
            "SELECT tc.a, e.dst FROM tc JOIN lc_edges e ON tc.b = e.src) SELECT * FROM tc"
        )[0]
    )
    stratum = next(s for s in plan.strata if s.component.recursive)
    inputs = {name: pa.table({"c0": [a for a, _ in edges], "c1": [b for _, b in edges]}) for name in stratum.inputs}
    fixpoint = LocalFixpoint(plan.program, stratum, inputs, Settings())
    (table,) = fixpoint.run().values()
    assert set(zip(*table.to_pydict().values())) == transitive_closure(edges)


@pytest.mark.spark
def test_auto_moves_an_outgrown_recursion_to_spark(conn, cur):
    """Under auto a recursion over small inputs starts locally; past recsql.local_rows facts it starts
    again on Spark (decomposed, having a pivot), with the same answer and EXPLAIN ANALYZE counting only
    the run that finished."""
    edges = [(i, i + 1) for i in range(30)]
    conn.register("lc_chain", pd.DataFrame(edges, columns=["src", "dst"]))
    sql = (
        "WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM lc_chain UNION "
        "SELECT tc.a, e.dst FROM tc JOIN lc_chain e ON tc.b = e.src) SELECT * FROM tc"
    )
    with auto_with_local_rows(conn, 100):
        assert "local, in one process; past 100 facts decomposed on Spark (one job, parts by tc.a)" in explain(cur, sql)
        assert spark_jobs(conn, sql, "local-strategy-outgrown") > 0
        cur.execute(sql)
        assert set(cur.fetchall()) == transitive_closure(edges)
        analyzed = explain(cur, sql, analyze=True)
        assert f"facts per relation: tc {len(transitive_closure(edges))}," in analyzed


@pytest.mark.spark
def test_shortest_paths_outgrowing_the_local_bound_go_on_on_spark(conn, cur):
    """min() run as DuckDB's recursive query in rounds stops as the loop does past recsql.local_rows, and
    Spark evaluates it (a pandas frame of int64 beside a literal anchor, as users bring them). Edges weigh
    the square of their span, so every further hop improves most distances: the improvements outnumber
    the edges."""
    edges = [(i, j, (j - i) ** 2) for i in range(8) for j in range(i + 1, 8)]
    conn.register("lc_weighted", pd.DataFrame(edges, columns=["src", "dst", "w"]))
    sql = (
        "WITH RECURSIVE sp(node, min() AS d) AS (SELECT 0, 0 UNION SELECT e.dst, sp.d + e.w FROM sp "
        "JOIN lc_weighted e ON sp.node = e.src) SELECT node, d FROM sp"
    )
    graph = nx.DiGraph()
    for a, b, w in sorted(edges, key=lambda edge: -edge[2]):
        graph.add_edge(a, b, weight=w)
    with auto_with_local_rows(conn, 30):
        assert "in process: one DuckDB recursive query: min()" in explain(cur, sql)
        with job_group(conn, "local-min-outgrown") as jobs:
            cur.execute(sql)
            assert sorted(cur.fetchall()) == sorted(nx.single_source_dijkstra_path_length(graph, 0).items())
    assert jobs


@pytest.mark.spark
def test_auto_leaves_the_local_run_before_the_iteration_that_would_pass_its_bound(conn, cur):
    """The closure of a de Bruijn graph (i -> 2i, 2i + 1 mod 64) nearly doubles each iteration: with
    recsql.local_rows = 1000 the local run stops as soon as its facts plus the next iteration's expected
    new facts (this iteration's, grown as much as they did from the previous one) pass the bound, before
    the iteration that would pass it; the decomposed run goes on from there. The counts come from a
    semi-naive evaluation in plain Python."""
    successors = {node: {2 * node % 64, (2 * node + 1) % 64} for node in range(64)}
    edges = sorted((a, b) for a, bs in successors.items() for b in bs)
    known, new, derived, iteration = set(edges), set(edges), len(edges), 0
    while True:
        iteration += 1
        previous, new = len(new), {(a, c) for a, b in new for c in successors[b]} - known
        known |= new
        derived += len(new)
        expected = derived + len(new) * len(new) // previous
        if expected > 1000:
            break
    conn.register("lc_debruijn", pd.DataFrame(edges, columns=["src", "dst"]))
    sql = (
        "WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM lc_debruijn UNION "
        "SELECT tc.a, e.dst FROM tc JOIN lc_debruijn e ON tc.b = e.src) SELECT * FROM tc"
    )
    with auto_with_local_rows(conn, 1000):
        analyzed = explain(cur, sql, analyze=True)
        cur.execute(sql)
        assert set(cur.fetchall()) == transitive_closure(edges)
    assert derived <= 1000 < expected
    assert (
        f"tc: {derived:,} facts after iteration {iteration} in this process" in analyzed
        and f"~{expected:,} expected after the next: past recsql.local_rows; went on from there" in analyzed
    )


@pytest.mark.spark
def test_explain_says_why_a_query_runs_on_spark(conn, cur, tmp_path):
    """EXPLAIN's == Evaluation == names what keeps a query from running in this process: a stratum
    planned on Spark and why, a type only Spark's analysis gives, or a table Spark reads."""
    conn.register("lc_why", pd.DataFrame({"src": [1, 2, 3], "dst": [2, 3, 4]}))
    pq.write_table(pa.table({"x": [1, 2], "tags": [["a"], []]}), tmp_path / "part.parquet")
    cur.execute(f"CREATE TABLE lc_why_files USING parquet OPTIONS (path '{tmp_path}')")
    closure = (
        "WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM lc_why UNION "
        "SELECT tc.a, e.dst FROM tc JOIN lc_why e ON tc.b = e.src) SELECT * FROM tc"
    )

    def evaluation(sql: str) -> str:
        lines = explain(cur, sql).splitlines()
        return lines[lines.index("== Evaluation ==") + 1]

    previous = conn.session.settings.strategy
    try:
        with auto_with_local_rows(conn, 10_000_000):
            assert evaluation(closure) == "runs without Spark: the whole query in this process (DuckDB over Arrow)"
            assert evaluation("SELECT upper(CAST(src AS STRING)) FROM lc_why") == (
                "on Spark: a type only Spark derives: expression UPPER(CAST(SRC AS STRING))"
            )
            assert evaluation("SELECT * FROM lc_why_files") == (
                "on Spark: table lc_why_files is read through Spark (column tags of type list<element: string>)"
            )
            conn.session.settings.set("recsql.spark", "always")
            assert evaluation(closure) == "on Spark: recsql.spark = always"
            conn.session.settings.set("recsql.spark", "auto")
        with auto_with_local_rows(conn, 1):
            assert evaluation("SELECT src FROM lc_why WHERE dst > 2") == (
                "on Spark: answer planned there (inputs ~3 rows past recsql.local_rows)"
            )
        set_strategy(conn, "decomposed")
        assert evaluation(closure) == "on Spark: tc planned there (recsql.strategy = decomposed)"
    finally:
        set_strategy(conn, previous)
        cur.execute("DROP TABLE lc_why_files")
