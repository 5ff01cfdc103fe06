"""The decomposed strategy (SET recsql.strategy = decomposed): a recursion with a pivot runs as one Spark job
whose tasks each evaluate their part to fixpoint. It must give what DuckDB and the distributed
evaluation give, and say in EXPLAIN when a recursion has no pivot and why.
"""

from __future__ import annotations

import glob
import os
import random
import re
import tempfile
from collections import Counter
from datetime import UTC, date, datetime
from decimal import Decimal

import duckdb
import duckdb_reference
import pyarrow as pa
import pytest
from duckdb_reference import check, normalize
from explain import explain
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import transitive_closure
from spark_jobs import spark_jobs
from strategies import auto_with_local_rows, counting_runs, set_strategy

import recsql
from recsql.engine.scratch import Scratch
from recsql.engine.strategies.decomposed import Decomposed


@pytest.fixture
def decomposed(conn, monkeypatch):
    """SET recsql.strategy = decomposed for the test; yields the strata that ran decomposed."""
    with counting_runs(conn, monkeypatch, "decomposed") as runs:
        yield runs


LEFT = (
    "WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM dc_edge UNION "
    "SELECT tc.a, e.dst FROM tc JOIN dc_edge e ON tc.b = e.src) SELECT * FROM tc"
)
RIGHT = (
    "WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM dc_edge UNION "
    "SELECT e.src, tc.b FROM dc_edge e JOIN tc ON e.dst = tc.a) SELECT * FROM tc"
)
FILTERED = (
    "WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM dc_edge WHERE src % 3 <> 1 UNION "
    "SELECT tc.a, e.dst FROM tc JOIN dc_edge e ON tc.b = e.src WHERE e.dst <> 4) SELECT * FROM tc"
)
NON_LINEAR = (
    "WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM dc_edge UNION "
    "SELECT x.a, y.b FROM tc x JOIN tc y ON x.b = y.a) SELECT * FROM tc"
)
REACH = (
    "WITH RECURSIVE reach(n) AS (SELECT 0 UNION SELECT e.dst FROM reach JOIN dc_edge e ON e.src = reach.n) "
    "SELECT * FROM reach"
)
APSP = (
    "WITH RECURSIVE ap(a, b, min() AS d) AS (SELECT src, dst, w FROM dc_edge UNION "
    "SELECT ap.a, e.dst, ap.d + e.w FROM ap JOIN dc_edge e ON ap.b = e.src) SELECT * FROM ap"
)
APSP_DUCKDB = (
    "WITH RECURSIVE ap(a, b, d) USING KEY (a, b) AS (SELECT src, dst, min(w) FROM dc_edge GROUP BY src, dst "
    "UNION SELECT ap.a, e.dst, min(ap.d + e.w) FROM ap JOIN dc_edge e ON ap.b = e.src GROUP BY ap.a, e.dst "
    "HAVING min(ap.d + e.w) < coalesce((SELECT r.d FROM recurring.ap r WHERE r.a = ap.a AND r.b = e.dst), "
    "2147483647)) SELECT * FROM ap"
)
CC = (
    "WITH RECURSIVE cc(n, min() AS label) AS (SELECT src, src FROM dc_edge UNION "
    "SELECT e.dst, cc.label FROM cc JOIN dc_edge e ON cc.n = e.src) SELECT * FROM cc"
)
COUNTS = (
    "WITH RECURSIVE paths(a, b, count() AS n) AS (SELECT src, dst, 1 FROM dc_edge UNION "
    "SELECT paths.a, e.dst, paths.n FROM paths JOIN dc_edge e ON paths.b = e.src) SELECT * FROM paths"
)
WALKS = (
    "WITH RECURSIVE walk(a, b, steps) AS (SELECT src, dst, 1 FROM dc_edge UNION ALL "
    "SELECT walk.a, e.dst, walk.steps + 1 FROM walk JOIN dc_edge e ON walk.b = e.src) SELECT * FROM walk"
)
MUTUAL = (
    "WITH RECURSIVE odd(a, b) AS (SELECT src, dst FROM dc_edge UNION SELECT even.a, e.dst FROM even "
    "JOIN dc_edge e ON even.b = e.src), even(a, b) AS (SELECT odd.a, e.dst FROM odd JOIN dc_edge e "
    "ON odd.b = e.src) SELECT * FROM odd"
)


def edges_table(edges, weights=None) -> pa.Table:
    weights = weights or [1 + (a * 7 + b * 3) % 10 for a, b in edges]
    return pa.table(
        {
            "src": pa.array([a for a, _ in edges], pa.int32()),
            "dst": pa.array([b for _, b in edges], pa.int32()),
            "w": pa.array(weights, pa.int32()),
        }
    )


def load(conn, edges) -> duckdb.DuckDBPyConnection:
    """`edges` as dc_edge(src, dst, w) in recsql and in a new DuckDB connection (returned)."""
    table = edges_table(edges)
    conn.register("dc_edge", table)
    return duckdb_reference.connect({"dc_edge": table})


# --- which recursions decompose, and EXPLAIN saying so ------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (LEFT, "decomposed on Spark (one job, parts by tc.a)"),
        (RIGHT, "decomposed on Spark (one job, parts by tc.b)"),
        (FILTERED, "decomposed on Spark (one job, parts by tc.a)"),
        (APSP, "decomposed on Spark (one job, parts by ap.a)"),
        (WALKS, "decomposed on Spark (one job, parts by walk.a)"),
        (NON_LINEAR, "not decomposable: no column passes unchanged through every recursive rule (no pivot)"),
        (REACH, "not decomposable: no column passes unchanged through every recursive rule (no pivot)"),
        (CC, "not decomposable: no column passes unchanged through every recursive rule (no pivot)"),
        (COUNTS, "decomposed on Spark (one job, parts by paths.a)"),
        (MUTUAL, "not decomposable: mutually recursive relations"),
    ],
    ids=[
        "left-linear",
        "right-linear",
        "filtered",
        "apsp-min",
        "union-all",
        "non-linear",
        "reachability",
        "min-moving-key",
        "count",
        "mutual",
    ],
)
def test_explain_shows_the_pivot_or_why_there_is_none(conn, cur, decomposed, sql, expected):
    load(conn, [(1, 2), (2, 3)])
    plan = explain(cur, sql)
    assert expected in plan
    if expected.startswith("not decomposable"):
        assert "distributed on Spark (" in plan


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (REACH, "distributed on Spark (one job, tasks owning facts by reach.n)"),
        (CC, "distributed on Spark (one job, tasks owning facts by cc.n)"),
        (NON_LINEAR, "distributed on Spark (a job per iteration)"),
        (MUTUAL, "distributed on Spark (a job per iteration)"),
    ],
    ids=["reachability", "min-moving-key", "non-linear", "mutual"],
)
def test_explain_says_whether_a_distributed_recursion_runs_as_one_job(conn, cur, monkeypatch, sql, expected):
    """Without a pivot, a linear recursion of one relation runs as one job whose tasks own the facts (by a
    group key for min()); one reading its relation twice, or mutual recursion, as a job per iteration."""
    load(conn, [(1, 2), (2, 3)])
    with counting_runs(conn, monkeypatch, "distributed"):
        assert expected in explain(cur, sql)


@pytest.mark.spark
def test_a_distributed_recursion_without_pivot_is_one_spark_job(conn, monkeypatch):
    """Reachability along a 60-step chain: 60 iterations inside the tasks of one job (and a job for
    its input's shuffle and one collecting the answer), not a job each."""
    load(conn, [(i, i + 1) for i in range(60)])
    with counting_runs(conn, monkeypatch, "distributed") as runs:
        jobs = spark_jobs(conn, REACH, "exchanged-one-job")
    assert runs == [("reach",)] and not runs.others
    assert jobs <= 3


@pytest.mark.parametrize(
    ("strategy", "sql", "shuffle"),
    [
        ("decomposed", LEFT, "hashpartitioning(c0"),
        ("distributed", REACH, "RoundRobinPartitioning"),
    ],
)
@pytest.mark.parametrize("exit_in_tasks", [True, False])
def test_the_accumulated_relation_never_moves_through_spark(
    conn, cur, monkeypatch, strategy, sql, shuffle, exit_in_tasks
):
    """The physical plan of the one job: the tasks keep the relation until its fixpoint, with no Exchange
    above them: what is derived never goes through a Spark shuffle. Below them, nothing but a range of
    part numbers where the tasks derive the exit facts themselves; else one shuffle, of the exit facts
    (hashed on the pivot, or spread evenly for the tasks to send to their owners)."""
    plans = []
    collected = Decomposed.collected

    def recording(self, tasks, *arguments):
        plans.append(tasks._jdf.queryExecution().executedPlan().toString())
        return collected(self, tasks, *arguments)

    monkeypatch.setattr(Decomposed, "collected", recording)
    load(conn, [(i, i + 1) for i in range(20)] + [(20, 0)])
    if not exit_in_tasks:  # what the exit rules read past what every task is sent: Spark derives them
        cur.execute("SET recsql.broadcast_rows = 1")
        sql = sql.replace("SELECT 0 UNION", "SELECT src FROM dc_edge WHERE src = 0 UNION")
    with counting_runs(conn, monkeypatch, strategy) as runs:
        assert ("exit facts derived in its tasks" in explain(cur, sql)) == exit_in_tasks
        cur.execute(sql)
        assert cur.fetchall()
    assert len(runs) == 1 and len(plans) == 1
    above, tasks, below = plans[0].partition("MapInArrow")
    exchanges = re.compile(r"\bExchange\b")
    assert tasks and not exchanges.findall(above)
    if exit_in_tasks:
        assert not exchanges.findall(below) and "Range (0, 2, step=1, splits=2)" in below
    else:
        assert len(exchanges.findall(below)) == 1 and shuffle in below


@pytest.mark.spark
def test_a_task_failing_in_one_job_fails_the_statement_with_its_error(conn, cur, monkeypatch):
    """A division by zero in one task's facts (iteration 30 of a chain) and a recursion past its
    iteration limit: the user gets the error raised in the task, the other tasks stop waiting for it."""
    load(conn, [(i, i + 1) for i in range(60)])
    dividing = REACH.replace("SELECT e.dst FROM", "SELECT e.dst + 0 * (1 / (e.dst - 30)) FROM")
    with counting_runs(conn, monkeypatch, "distributed") as runs:
        with pytest.raises(recsql.DataError, match="(?i)divi"):
            cur.execute(dividing)
        with pytest.raises(recsql.OperationalError, match="MAX RECURSION LEVEL 5"):
            cur.execute(REACH.replace("reach(n) AS", "reach(n) MAX RECURSION LEVEL 5 AS"))
    assert runs == [("reach",), ("reach",)]


@pytest.mark.spark
def test_auto_runs_a_recursion_whose_pivot_has_one_value_distributed(conn, cur):
    """Paths from one node: the pivot (the start) has one value, and decomposed, one task would do all
    the work; auto runs it distributed as one job, its tasks owning the facts by their other column."""
    edges = [(i, (i * 7 + 3) % 40) for i in range(40)] + [(i, (i * 11 + 5) % 40) for i in range(40)]
    load(conn, edges)
    single = LEFT.replace("FROM dc_edge UNION", "FROM dc_edge WHERE src = 0 UNION")
    with auto_with_local_rows(conn, 10):
        plan = explain(cur, single)
        cur.execute(single)
        assert set(cur.fetchall()) == {(0, b) for a, b in transitive_closure(edges) if a == 0}
    assert "distributed on Spark (one job, tasks owning facts by tc.b)" in plan
    assert re.search(r"its pivot tc\.a has ~\d values?, too few for 2 tasks", plan)


@pytest.mark.spark
def test_auto_runs_a_recursion_over_large_inputs_decomposed(conn, cur):
    """Inputs past recsql.local_rows and a pivot: auto chooses the decomposed strategy, EXPLAIN says why."""
    edges = [(i, i + 1) for i in range(30)]
    load(conn, edges)
    with auto_with_local_rows(conn, 10):
        plan = explain(cur, LEFT)
        assert "decomposed on Spark (one job, parts by tc.a)" in plan
        assert "strategy: inputs ~30 rows; each part reads ~30" in plan
        cur.execute(LEFT)
        assert set(cur.fetchall()) == transitive_closure(edges)


@pytest.mark.spark
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edges=st.lists(st.tuples(st.integers(0, 14), st.integers(0, 14)), min_size=5, max_size=40, unique=True),
    bound=st.integers(5, 60),
    query=st.sampled_from(["tc", "apsp", "walks"]),
)
def test_a_local_run_past_its_bound_goes_on_decomposed_from_where_it_stopped(conn, cur, edges, bound, query):
    """auto with a small recsql.local_rows: the local evaluation stops past the bound and the decomposed
    one goes on from its facts (EXPLAIN ANALYZE says after which iteration); the answer is DuckDB's."""
    sql, duck_sql = {"tc": (LEFT, None), "apsp": (APSP, APSP_DUCKDB), "walks": (WALKS, None)}[query]
    edges = [(a, b) for a, b in edges if query != "walks" or a < b]  # UNION ALL ends on a DAG only
    if not edges:
        return
    duck = load(conn, edges)
    with auto_with_local_rows(conn, bound):
        check(cur, duck, sql, duck_sql)
        planned = explain(cur, sql)
        analyzed = explain(cur, sql, analyze=True)
    cur.execute(f"SELECT count(*) FROM ({sql})")
    # planned local, going on decomposed (unless its pivot has too few values), and it outgrew the bound
    if "facts decomposed on Spark" in planned and bound < cur.fetchall()[0][0]:
        assert "past recsql.local_rows" in analyzed and "went on from there decomposed on Spark" in analyzed


# --- answers against DuckDB -----------------------------------------------------------------------------------


graphs = st.lists(st.tuples(st.integers(0, 14), st.integers(0, 14)), min_size=1, max_size=40)


@pytest.mark.spark
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edges=graphs, sql=st.sampled_from([LEFT, RIGHT, FILTERED]))
def test_closures_match_duckdb_on_random_graphs(conn, cur, decomposed, edges, sql):
    duck = load(conn, edges)
    check(cur, duck, sql, allow_empty=True)  # the filter may leave nothing: recsql must agree
    assert decomposed[-1] == ("tc",)


@pytest.mark.spark
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edges=graphs)
def test_shortest_paths_with_min_match_duckdb(conn, cur, decomposed, edges):
    duck = load(conn, edges)
    check(cur, duck, APSP, APSP_DUCKDB)
    assert decomposed[-1] == ("ap",)


def path_counts(edges) -> dict:
    """(a, b) -> the number of paths from a to b in a DAG (plain Python)."""
    successors: dict = {}
    for a, b in edges:
        successors.setdefault(a, []).append(b)
    counts = {}

    def from_node(a):
        if a not in counts:
            reached = Counter()
            for b in successors.get(a, []):
                reached[b] += 1
                for c, n in from_node(b).items():
                    reached[c] += n
            counts[a] = reached
        return counts[a]

    return {(a, b): n for a in {a for a, _ in edges} for b, n in from_node(a).items()}


@pytest.mark.spark
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edges=st.sets(
        st.tuples(st.integers(0, 12), st.integers(0, 12)).filter(lambda e: e[0] < e[1]), min_size=1, max_size=40
    )
)
def test_path_counts_with_count_match_python(conn, cur, decomposed, edges):
    load(conn, sorted(edges))
    cur.execute(COUNTS)
    assert {(a, b): n for a, b, n in cur.fetchall()} == path_counts(edges)
    assert decomposed[-1] == ("paths",)


@pytest.mark.spark
def test_union_all_rounds_match_duckdb_on_a_dag(conn, cur, decomposed):
    rng = random.Random(3)
    edges = sorted({(a, b) for a, b in ((rng.randrange(25), rng.randrange(25)) for _ in range(60)) if a < b})
    duck = load(conn, edges)
    check(cur, duck, WALKS)
    assert decomposed == [("walk",)]


# --- one job, limits, types ----------------------------------------------------------------------------------


@pytest.mark.spark
def test_the_whole_fixpoint_is_one_spark_job(conn, decomposed):
    """A 60-step chain takes 60 iterations; decomposed, they run inside the tasks of one job (plus the
    job that collects the answer), not a job each."""
    load(conn, [(i, i + 1) for i in range(60)])
    jobs = spark_jobs(conn, LEFT, "decomposed-one-job")
    assert decomposed == [("tc",)]
    assert jobs <= 3


@pytest.mark.spark
def test_limits_hold_inside_the_tasks(conn, cur, decomposed):
    load(conn, [(i, i + 1) for i in range(20)])
    limited = LEFT.replace("tc(a, b) AS", "tc(a, b) MAX RECURSION LEVEL 5 AS")
    with pytest.raises(recsql.OperationalError, match="exceeded MAX RECURSION LEVEL 5: iteration 6"):
        cur.execute(limited)
    load(conn, [(1, 2), (2, 1)])
    with pytest.raises(recsql.OperationalError, match="did not reach a fixpoint within 50 iterations"):
        cur.execute("SET recsql.max_iterations = 50")
        try:
            cur.execute(WALKS)
        finally:
            cur.execute("SET recsql.max_iterations = 10000")


def both_strategies(conn, cur, sql: str) -> dict:
    """{strategy: (rows as a multiset, column types)} under decomposed and distributed."""
    answers = {}
    for strategy in ("decomposed", "distributed"):
        set_strategy(conn, strategy)
        cur.execute(sql)
        answers[strategy] = Counter(normalize(cur.fetchall())), [column[1] for column in cur.description]
    set_strategy(conn, "decomposed")
    return answers


@pytest.mark.spark
def test_types_and_values_equal_the_distributed_evaluation(conn, cur, decomposed):
    """Strings, decimals, dates and NULLs flow through the tasks with the types Spark gives them. A
    decimal sum gains a digit of precision per iteration on Spark: each part runs each iteration with
    that iteration's types, so parts stopping after different numbers of iterations agree with Spark."""
    conn.register(
        "dc_typed",
        pa.table(
            {
                "src": ["a", "b", "c", None, "e"],
                "dst": ["b", "c", "d", "e", None],
                "cost": pa.array([Decimal(v) for v in ("1.5", "2.25", "0.5", "4.0", "1.0")], pa.decimal128(6, 2)),
                "day": pa.array([1, 2, 3, 4, 5], pa.int32()).cast(pa.date32()),
            }
        ),
    )
    steady = (
        "WITH RECURSIVE r(a, b, day, min() AS cost) AS (SELECT src, dst, day, cost FROM dc_typed UNION "
        "SELECT r.a, t.dst, t.day, r.cost FROM r JOIN dc_typed t ON r.b = t.src) SELECT * FROM r"
    )
    answers = both_strategies(conn, cur, steady)
    assert answers["decomposed"] == answers["distributed"]
    assert decomposed == [("r",)]
    widening = steady.replace("r.cost FROM r", "r.cost + t.cost FROM r")
    answers = both_strategies(conn, cur, widening)
    assert answers["decomposed"] == answers["distributed"]
    assert decomposed == [("r",), ("r",)]


KINDS = pa.table(
    {
        "src": pa.array([1, 2, 3, 4], pa.int32()),
        "dst": pa.array([2, 3, 4, 1], pa.int32()),
        "day": pa.array([date(1000, 1, 1), date(1582, 10, 4), None, date(2024, 2, 29)]),
        "at": pa.array(
            [datetime(1500, 1, 1, 12), None, datetime(2020, 5, 1, 1, 2, 3, 456789), datetime(1970, 1, 1)],
            pa.timestamp("us", tz="UTC"),
        ),
        "amount": pa.array(
            [Decimal("12345678901234567890.1234567891"), None, Decimal("-0.0000000001"), Decimal(0)],
            pa.decimal128(38, 10),
        ),
        "tiny": pa.array([-128, 127, None, 0], pa.int8()),
        "small": pa.array([-32768, None, 32767, 1], pa.int16()),
        "flag": pa.array([True, False, None, True]),
        "ratio": pa.array([1.5, -2.25, None, 1e300]),
        "raw": pa.array([b"\x00\xff", b"", None, b"abc"]),
        "label": pa.array(["\u00fcn\u00ef", "", None, "a'b\"c"]),
    }
)


@pytest.mark.spark
def test_facts_in_part_files_keep_every_type_and_value(conn, cur, monkeypatch):
    """On a local master the tasks write their facts to Parquet files that Spark reads back: dates before
    1582, timestamps, decimals of 38 digits, small integers, booleans, doubles, bytes, strings and NULLs
    come back as they went in, under both one-job strategies as in this process; the files are gone
    when the statement ends."""
    conn.register("dc_kinds", KINDS)
    payload = KINDS.column_names[2:]
    sql = (
        f"WITH RECURSIVE r(a, b, {', '.join(payload)}) AS (SELECT src, dst, {', '.join(payload)} FROM dc_kinds "
        f"UNION SELECT r.a, k.dst, {', '.join('r.' + name for name in payload)} FROM r JOIN dc_kinds k "
        "ON r.b = k.src) SELECT * FROM r"
    )
    rows = KINDS.to_pylist()  # a cycle: every node reaches every node, keeping its own row's values
    at = [value.replace(tzinfo=UTC) if value else value for value in KINDS.column("at").to_pylist()]
    expected = Counter(
        (row["src"], node, *[row[name] for name in payload[:1]], at[i], *[row[name] for name in payload[2:]])
        for i, row in enumerate(rows)
        for node in KINDS.column("src").to_pylist()
    )
    scratch = os.path.join(tempfile.gettempdir(), "recsql-scratch-*")
    before = set(glob.glob(scratch))
    made = []  # the directories of part files
    directory = Scratch.directory
    monkeypatch.setattr(
        Scratch,
        "directory",
        lambda self, prefix, shared=False: made.append(directory(self, prefix, shared)) or made[-1],
    )
    previous = conn.session.settings.strategy
    try:
        for strategy in ("local", "decomposed", "distributed"):
            set_strategy(conn, strategy)
            cur.execute(sql)
            assert Counter(cur.fetchall()) == expected, strategy
            assert [column[1] for column in cur.description][2:] == [
                "date",
                "timestamp",
                "decimal(38,10)",
                "tinyint",
                "smallint",
                "boolean",
                "double",
                "binary",
                "string",
            ], strategy
            assert set(glob.glob(scratch)) <= before
    finally:
        set_strategy(conn, previous)
    assert len(made) == 2 and not any(map(os.path.exists, made))
