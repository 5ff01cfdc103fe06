"""A recursive stratum run in this process as DuckDB recursive queries (engine/local/recursive_query.py) gives
what the semi-naive loop gives: the same rows, the same errors at the same limits, the same iterations where
they are counted. The loop is the reference (itself checked against DuckDB and Python across the suite); the
answers through a connection are checked against DuckDB and plain Python too."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time

import duckdb
import networkx as nx
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import transitive_closure

import recsql
from recsql.engine.columns import column_names
from recsql.engine.fixpoint import CapacityExceeded
from recsql.engine.local.engine import LocalFixpoint
from recsql.engine.progress import Progress
from recsql.settings import Settings
from translator import dialect

CHAIN = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < {bound}) SELECT n FROM r"
REACH = (
    "WITH RECURSIVE reach(node) AS (SELECT {start} UNION "
    "SELECT e.dst FROM reach JOIN rq_edges e ON reach.node = e.src) SELECT node FROM reach"
)
PATHS = (  # every path from the start, with its text: a hierarchy with paths on a DAG
    "WITH RECURSIVE p(node, depth, path) AS (SELECT {start}, 0, CAST({start} AS VARCHAR) UNION ALL "
    "SELECT e.dst, p.depth + 1, p.path || '/' || CAST(e.dst AS VARCHAR) FROM p JOIN rq_edges e ON p.node = e.src) "
    "SELECT node, depth, path FROM p"
)
PAIRS = (  # the closure of the edges: a UNION of pairs, many rows each round
    "WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM rq_edges UNION "
    "SELECT tc.a, e.dst FROM tc JOIN rq_edges e ON tc.b = e.src) SELECT a, b FROM tc"
)

SHORTEST = (
    "WITH RECURSIVE sp(node, min() AS d) AS (SELECT {start}, 0 UNION "
    "SELECT e.dst, sp.d + e.w FROM sp JOIN rq_edges e ON sp.node = e.src) SELECT node, d FROM sp"
)
LONGEST = (  # on a DAG: the longest path to each node
    "WITH RECURSIVE lp(node, max() AS d) AS (SELECT {start}, 0 UNION "
    "SELECT e.dst, lp.d + e.w FROM lp JOIN rq_edges e ON lp.node = e.src) SELECT node, d FROM lp"
)


def ordered(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=repr)


def register(conn, edges: list[tuple[int, int]]) -> pa.Table:
    table = pa.table(
        {"src": pa.array([a for a, _ in edges], pa.int64()), "dst": pa.array([b for _, b in edges], pa.int64())}
    )
    conn.register("rq_edges", table)
    return table


def fixpoints(conn, sql: str, edges: pa.Table | None = None, **limits: int) -> tuple[LocalFixpoint, LocalFixpoint]:
    """The query's recursive stratum as LocalFixpoint runs it (as recursive queries) and as the loop runs it."""
    plan = conn.session.plan(dialect.parse(sql)[0])
    (stratum,) = [s for s in plan.strata if s.component.recursive]
    assert stratum.single_query is not None and stratum.single_query.fits, stratum.single_query
    inputs = {name: edges.rename_columns(column_names(edges.num_columns)) for name in stratum.inputs}
    looped = dataclasses.replace(stratum, single_query=None)
    configured = Settings(**limits)
    return (
        LocalFixpoint(plan.program, stratum, inputs, configured),
        LocalFixpoint(plan.program, looped, inputs, configured),
    )


def outcome(fixpoint: LocalFixpoint) -> tuple[str, object]:
    """The rows the fixpoint derives, or its error (class and message)."""
    try:
        (table,) = fixpoint.run().values()
    except recsql.Error as error:
        return type(error).__name__, str(error)
    return "rows", ordered(list(zip(*table.to_pydict().values())))


def same_as_the_loop(conn, sql: str, edges: pa.Table | None = None, **limits: int) -> tuple[str, object]:
    queried, looped = fixpoints(conn, sql, edges, **limits)
    expected = outcome(looped)
    assert outcome(queried) == expected
    assert queried.recursive_query is not None
    return expected


def register_weighted(conn, edges: list[tuple[int, int, int | None]]) -> pa.Table:
    table = pa.table({name: pa.array(values, pa.int64()) for name, values in zip(("src", "dst", "w"), zip(*edges))})
    conn.register("rq_edges", table)
    return table


graphs = st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), min_size=1, max_size=30)


@settings(max_examples=40, deadline=None)
@given(edges=graphs, start=st.integers(0, 12))
def test_reachability_is_the_loops_and_networkx(conn, edges, start):
    table = register(conn, edges)
    sql = REACH.format(start=start)
    _, rows = same_as_the_loop(conn, sql, table)
    graph = nx.DiGraph(edges)
    graph.add_node(start)
    assert rows == ordered([(node,) for node in nx.descendants(graph, start) | {start}])
    assert same_progress(*fixpoints(conn, sql, table)) >= 1


@settings(max_examples=25, deadline=None)
@given(edges=graphs, start=st.integers(0, 12))
def test_paths_on_a_dag_are_the_loops_and_duckdbs(conn, edges, start):
    dag = [(a, b) for a, b in edges if a < b]
    table = register(conn, dag or [(0, 1)])
    sql = PATHS.format(start=start)
    _, rows = same_as_the_loop(conn, sql, table)
    duck = duckdb.connect()
    duck.register("rq_edges", table)
    assert rows == ordered(duck.sql(sql).fetchall())
    cursor = conn.cursor()
    cursor.execute(sql)
    assert ordered(cursor.fetchall()) == rows


@settings(max_examples=20, deadline=None)
@given(edges=graphs)
def test_a_closure_of_pairs_is_the_loops(conn, edges):
    table = register(conn, edges)
    _, rows = same_as_the_loop(conn, PAIRS, table)
    assert set(rows) == transitive_closure(edges)
    assert same_progress(*fixpoints(conn, PAIRS, table)) >= 1


weighted_graphs = st.lists(
    st.tuples(st.integers(0, 12), st.integers(0, 12), st.integers(1, 9)), min_size=1, max_size=40
)


def progress_of(fixpoint: LocalFixpoint) -> list[Progress]:
    """The progress the fixpoint reports as it runs."""
    events: list[Progress] = []
    fixpoint.progress = events.append
    fixpoint.run()
    return events


def same_progress(queried: LocalFixpoint, looped: LocalFixpoint) -> int:
    """Whether the recursive queries report the loop's iterations, each with its new facts (an event may
    report several, derived ahead by one query); the loop's iterations."""
    loop = [(event.iteration, event.delta_rows) for event in progress_of(looped)]
    reported = [
        (event.iteration - len(event.earlier) + offset, sum(facts.values()))
        for event in progress_of(queried)
        for offset, facts in enumerate((*event.earlier, event.facts))
    ]
    assert reported == loop
    return len(loop)


@settings(max_examples=40, deadline=None)
@given(edges=weighted_graphs, start=st.integers(0, 12))
def test_shortest_paths_with_min_are_the_loops_and_networkx(conn, edges, start):
    """min() in the header: the same rows as the loop, round by round, and Dijkstra's distances."""
    table = register_weighted(conn, edges)
    sql = SHORTEST.format(start=start)
    _, rows = same_as_the_loop(conn, sql, table)
    graph = nx.DiGraph()
    graph.add_node(start)
    for a, b, w in sorted(edges, key=lambda edge: -edge[2]):  # parallel edges: the lightest one last, kept
        graph.add_edge(a, b, weight=w)
    assert rows == ordered(list(nx.single_source_dijkstra_path_length(graph, start).items()))
    queried, looped = fixpoints(conn, sql, table)
    same_progress(queried, looped)


@settings(max_examples=25, deadline=None)
@given(edges=weighted_graphs, start=st.integers(0, 12), nulls=st.sets(st.integers(0, 39)))
def test_longest_paths_with_max_and_null_weights_are_the_loops(conn, edges, start, nulls):
    """max() on a DAG, some weights NULL (their candidates NULL, which max() passes over), some ends NULL (a
    group whose key is NULL)."""
    dag = [
        (a, None if i in nulls and i % 3 == 0 else b, None if i in nulls else w)
        for i, (a, b, w) in enumerate(edges)
        if a < b
    ] or [(0, 1, 1)]
    table = register_weighted(conn, dag)
    sql = LONGEST.format(start=start)
    same_as_the_loop(conn, sql, table)
    queried, looped = fixpoints(conn, sql, table)
    same_progress(queried, looped)


def test_a_negative_cycle_fails_as_the_loop_fails(conn):
    """min() over a cycle of negative weight improves forever: max_iterations stops both alike."""
    table = register_weighted(conn, [(0, 1, 2), (1, 2, -3), (2, 0, -1), (2, 3, 1)])
    kind, message = same_as_the_loop(conn, SHORTEST.format(start=0), table, max_iterations=100)
    assert kind == "OperationalError" and "within 100 iterations" in message


def test_shortest_paths_whose_types_widen_run_as_a_query(conn, cur, monkeypatch):
    """A literal anchor (INT) beside BIGINT weights: the loop's first iteration widens the distance to BIGINT,
    then the recursive query goes on from its facts, as the user's pandas frame of int64 would have it."""
    from recsql.engine.local.recursive_query import RecursiveQuery

    ran = []
    run = RecursiveQuery.run
    monkeypatch.setattr(RecursiveQuery, "run", lambda self, *args: ran.append(self) or run(self, *args))
    edges = [(i, i + 1, 2**40) for i in range(30)] + [(i, i + 3, 1) for i in range(0, 30, 2)]
    register_weighted(conn, edges)
    cur.execute(SHORTEST.format(start=0))
    graph = nx.DiGraph()
    graph.add_weighted_edges_from(edges)
    assert ordered(cur.fetchall()) == ordered(list(nx.single_source_dijkstra_path_length(graph, 0).items()))
    assert len(ran) == 1 and ran[0].settled_at == 1


@pytest.mark.parametrize("bound", [1, 2, 9, 10, 11, 300])
def test_a_counter_stops_where_the_loop_stops(conn, bound):
    """Chunks of rounds end on either side of the limit: below it, on it, past it."""
    assert same_as_the_loop(conn, CHAIN.format(bound=bound), max_iterations=10)


def test_a_counter_that_never_ends_fails_as_the_loop_fails(conn):
    kind, message = same_as_the_loop(conn, CHAIN.format(bound="n + 1"), max_iterations=700)
    assert kind == "OperationalError" and "within 700 iterations" in message


def test_rows_growing_past_max_rows_fail_as_the_loop_fails(conn):
    """Doubling rows: the rounds' counts go through the loop's checks, its projection included."""
    sql = (
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT r.n + e.src FROM r JOIN rq_edges e ON true) SELECT n FROM r"
    )
    kind, message = same_as_the_loop(conn, sql, register(conn, [(0, 0), (1, 1)]), max_rows=5000)
    assert kind == "OperationalError" and "recsql.max_rows" in message


NARROWING = (  # one row per row of the round before, from every edge's source, k from the source up: rounds narrow
    "WITH RECURSIVE r(n, k) AS (SELECT src, src FROM rq_edges UNION ALL SELECT n + 1, k + 1 FROM r WHERE k < {depth}) "
    "SELECT n, k FROM r"
)


@pytest.mark.parametrize("depth, max_rows", [(40, 10_000), (40, 365), (40, 364), (500, 2_000), (9_000, 10**8)])
def test_a_narrowing_recursion_runs_long_chunks_within_its_limits(conn, monkeypatch, depth, max_rows):
    """Rounds no wider than the one before: a chunk runs as many rounds as the rows allowed can fill at the
    width of the round it starts from (of the exit rules: the table's ten rows; the whole recursion where
    the rows allowed suffice), and stops (or goes on) where the loop does; each round's new facts are
    reported as the loop's iterations. The ten rows end after 31 to 41 rounds: 365 rows."""
    from recsql.engine.local import rounds

    queries = []
    query = rounds.Rounds.query
    monkeypatch.setattr(rounds.Rounds, "query", lambda self, *args: [queries.append(args[1]), query(self, *args)])
    edges = register(conn, [(i, i + 1) for i in range(10)])
    limits = {"max_rows": max_rows, "max_iterations": 10_000}
    queried, looped = fixpoints(conn, NARROWING.format(depth=depth), edges, **limits)
    expected = outcome(looped)
    assert outcome(queried) == expected
    assert queried.recursive_query is not None and queried.recursive_query.narrowing
    if expected[0] == "rows":
        assert len(expected[1]) == 10 * (depth + 1) - 45
        whole = max_rows >= 10 * (depth + 1)  # every round at the exit rules' width fits: one query
        assert len(queries) == 1 if whole else len(queries) > 2, queries
        assert same_progress(*fixpoints(conn, NARROWING.format(depth=depth), edges, **limits)) == depth + 2
    else:
        assert "recsql.max_rows" in expected[1]


def test_a_recursion_of_one_row_per_round_goes_on_from_its_last_row(conn, monkeypatch):
    """One row per round (a counter): the rows are the rounds, a chunk bounded by a LIMIT of rows; past a
    chunk of LONGEST_NARROWING rounds the next goes on from the last row, and every round is reported."""
    from recsql.engine.local import rounds

    monkeypatch.setattr(rounds, "LONGEST_NARROWING", 700)
    queried, looped = fixpoints(conn, CHAIN.format(bound=2_000), max_iterations=5_000)
    assert queried.recursive_query is not None and queried.recursive_query.single_row
    assert same_progress(queried, looped) == 2_001
    rows = same_as_the_loop(conn, CHAIN.format(bound=2_000), max_iterations=5_000)
    assert rows == ("rows", ordered([(n,) for n in range(1, 2_001)]))
    for bound, limit in [(2_000, 1_999), (2_000, 2_000), (2_000, 2_100), (1_400, 1_400), ("n + 1", 1_500)]:
        assert same_as_the_loop(conn, CHAIN.format(bound=bound), max_iterations=limit)


@pytest.mark.parametrize("bound", [1, 2, 50])
def test_a_recursion_of_one_row_per_round_whose_type_widens_goes_on_from_the_loop(conn, bound):
    """An INT anchor beside a BIGINT step: the loop runs while Spark widens the column, then the rounds go
    on from its last row."""
    sql = (
        f"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + CAST(1 AS BIGINT) FROM r WHERE n < {bound}) "
        "SELECT n FROM r"
    )
    queried, looped = fixpoints(conn, sql)
    assert same_progress(queried, looped) == bound + 1
    assert same_as_the_loop(conn, sql)[1] == ordered([(n,) for n in range(1, bound + 1)])


@pytest.mark.parametrize("bound, limit", [(50, 49), (50, 50), (50, 51), (3, 10), ("n + 1", 300)])
def test_a_recursion_printed_into_its_reader_stops_where_the_loop_stops(conn, cur, monkeypatch, bound, limit):
    """One row per round, read by one query (an aggregate): the recursion is printed into that query, which
    ends it one row past max_iterations and fails with the loop's error where that row is there."""
    from recsql.engine.local.engine import LocalFixpoint as Fixpoint

    _, looped = fixpoints(conn, CHAIN.format(bound=bound), max_iterations=limit)
    expected = outcome(looped)
    ran = []
    monkeypatch.setattr(Fixpoint, "run", lambda self: ran.append(self))  # a recursion run on its own
    cur.execute(f"SET recsql.max_iterations = {limit}")
    sql = CHAIN.format(bound=bound).replace("SELECT n FROM r", "SELECT count(*), sum(n) FROM r")
    try:
        cur.execute(sql)
    except recsql.Error as error:
        assert (type(error).__name__, str(error)) == expected
    else:
        rows = [n for (n,) in expected[1]]
        assert cur.fetchall() == [(len(rows), sum(rows))]
    assert ran == []


@pytest.mark.parametrize(
    "sql, narrowing",
    [
        (CHAIN.format(bound=5), True),
        (NARROWING.format(depth=3), True),
        (REACH.format(start=0), False),  # a join: a round may be wider than the one before
        (  # two recursive rules: each row may give two
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5 "
            "UNION ALL SELECT n + 2 FROM r WHERE n < 5) SELECT n FROM r",
            False,
        ),
        (  # a NOT EXISTS only drops rows
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5 AND NOT EXISTS "
            "(SELECT 1 FROM rq_edges e WHERE e.src = r.n + 100)) SELECT n FROM r",
            True,
        ),
    ],
)
def test_a_recursion_is_narrowing_where_no_round_can_widen(conn, sql, narrowing):
    from recsql.engine.local.recursive_query import narrowing as narrowing_of

    register(conn, [(0, 1), (1, 2)])
    plan = conn.session.plan(dialect.parse(sql)[0])
    (stratum,) = [s for s in plan.strata if s.component.recursive]
    assert narrowing_of(stratum) is narrowing


def test_a_union_past_max_iterations_stops_as_the_loop_stops(conn):
    """A UNION's query counts its rounds as they come (it calls back with each one's rows): past
    max_iterations it stops with the loop's error."""
    chain = [(i, i + 1) for i in range(60)]
    kind, message = same_as_the_loop(conn, REACH.format(start=0), register(conn, chain), max_iterations=50)
    assert kind == "OperationalError" and "within 50 iterations" in message
    assert same_as_the_loop(conn, REACH.format(start=0), register(conn, chain), max_iterations=61)[0] == "rows"


UNION_COUNTER = "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT n + 1 FROM r WHERE n < {bound}) SELECT n FROM r"


@pytest.mark.parametrize("bound, max_iterations", [(5, 10), (10, 10), (11, 10), (400, 1000), ("n + 1", 700)])
def test_a_union_over_values_it_computes_stops_where_the_loop_stops(conn, bound, max_iterations):
    """Values the recursion computes (a counter): only the limits end a recursion that never does."""
    kind, rows = same_as_the_loop(conn, UNION_COUNTER.format(bound=bound), max_iterations=max_iterations)
    if bound == "n + 1":
        assert kind == "OperationalError" and "within 700 iterations" in rows
    elif kind == "rows":
        assert rows == ordered([(n,) for n in range(1, bound + 1)])


def test_a_unions_rounds_are_the_loops_iterations(conn):
    """The query reports each round's new facts as the loop reports each iteration's: a search that widens
    (one node, then 40), thins, and walks a chain, and a graph with cycles."""
    fan = [(0, i) for i in range(1, 41)] + [(i, 41) for i in range(1, 41)] + [(i, i + 1) for i in range(41, 100)]
    table = register(conn, fan)
    assert same_progress(*fixpoints(conn, REACH.format(start=0), table, max_iterations=70)) == 63
    queried, looped = fixpoints(conn, REACH.format(start=0), table, max_iterations=50)
    kind, message = outcome(queried)
    assert (kind, message) == outcome(looped) and "within 50 iterations" in message
    edges = register(conn, [(i, i + 1) for i in range(40)] + [(i, i + 2) for i in range(0, 40, 3)] + [(40, 0)])
    assert same_progress(*fixpoints(conn, REACH.format(start=0), edges)) > 20
    assert same_progress(*fixpoints(conn, PAIRS, edges)) > 20


def test_large_tables_are_read_from_copies_in_duckdb(conn, monkeypatch):
    """Past COPIED_ROWS a recursive query reads a copy of a table in DuckDB (its rounds join it far faster):
    the same answers, and no copy left on the connection the next evaluation reuses."""
    from recsql.engine.local import database

    monkeypatch.setattr(database, "COPIED_ROWS", 1)
    edges = [(i, i + 1) for i in range(30)] + [(i, i + 3) for i in range(0, 30, 4)] + [(30, 0), (7, 2)]
    for sql in (REACH.format(start=3), PAIRS, SHORTEST.format(start=0)):
        if sql.startswith(SHORTEST[:20]):
            table = register_weighted(conn, [(a, b, 1 + a % 5) for a, b in edges])
        else:
            table = register(conn, edges)
        queried, looped = fixpoints(conn, sql, table)
        assert outcome(queried) == outcome(looped)
        assert queried.recursive_query.db.copies
    with contextlib.closing(database.Database("UTC")) as db:
        assert db.query("SELECT count(*) AS n FROM duckdb_tables() WHERE temporary").column(0).to_pylist() == [0]


@pytest.mark.parametrize("capacity", [1, 50, 400, 800])
def test_a_union_past_the_local_capacity_stops_where_the_loop_stops(conn, capacity):
    """Past the capacity the query stops, and the loop goes on to where it stops itself, with its facts (for
    Spark to go on from): the same iteration, facts and expected facts as the loop alone."""
    edges = register(conn, [(i, i + 1) for i in range(40)] + [(i, i + 2) for i in range(0, 40, 3)] + [(40, 0)])
    queried, looped = fixpoints(conn, PAIRS, edges)
    for fixpoint in (queried, looped):
        fixpoint.stratum = dataclasses.replace(fixpoint.stratum, capacity=capacity)
    stops = []
    for fixpoint in (queried, looped):
        with pytest.raises(CapacityExceeded) as exceeded:
            fixpoint.run()
        reached = exceeded.value.reached
        known, new = (ordered(table.to_pylist()) for table in (*reached.known.values(), *reached.new.values()))
        stops.append((reached.iterations, reached.facts, reached.expected, known, new))
    assert stops[0] == stops[1]


EXPLAINED = [  # a recursion, and what EXPLAIN says of how it runs in this process
    (CHAIN.format(bound=5), "in process: one DuckDB recursive query: UNION ALL"),
    (
        UNION_COUNTER.format(bound=5),
        "in process: one DuckDB recursive query: UNION, each round's new rows counted by a call back",
    ),
    (
        "WITH RECURSIVE even(n) AS (SELECT 0 UNION SELECT o.n + 1 FROM odd o WHERE o.n < 9), "
        "odd(n) AS (SELECT e.n + 1 FROM even e WHERE e.n < 9) SELECT n FROM even",
        "a DuckDB query per iteration: several relations recurse together",
    ),
    (
        SHORTEST.format(start=0).replace("rq_edges", "(SELECT 1 AS src, 2 AS dst, 3 AS w)"),
        "in process: one DuckDB recursive query: min() in the CTE's header: each round keeps the groups",
    ),
    (
        "WITH RECURSIVE c(n, count() AS k) AS (SELECT 1, 1 UNION SELECT n + 1, k FROM c WHERE n < 5) "
        "SELECT n, k FROM c",
        "a DuckDB query per iteration: count() in the CTE's header",
    ),
]


@pytest.mark.parametrize("sql, line", EXPLAINED)
def test_explain_says_how_each_recursion_runs(cur, sql, line):
    cur.execute("EXPLAIN " + sql)
    assert line in "\n".join(row[0] for row in cur.fetchall())


def test_types_that_widen_while_iterating_keep_the_loop(conn, cur, monkeypatch):
    """An INT anchor whose recursion adds a DECIMAL: Spark widens the column after the first iteration, so the
    loop casts iteration by iteration; the recursive query is not used."""
    from recsql.engine.local.recursive_query import RecursiveQuery

    ran = []
    monkeypatch.setattr(RecursiveQuery, "run", lambda self, *args: ran.append(self) or None)
    cur.execute("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 0.5 FROM r WHERE n < 3) SELECT n FROM r")
    assert [float(n) for (n,) in cur.fetchall()] == [1.0, 1.5, 2.0, 2.5, 3.0]
    assert ran == []


@pytest.mark.parametrize("sql", [CHAIN, UNION_COUNTER], ids=["union_all_chunks", "union_one_query"])
def test_a_cancel_stops_a_recursion_running_as_queries(conn, cur, sql):
    """Cancelling (Ctrl-C in the shell) stops a recursion that runs as chunks of one query, or as one query
    calling back each round, and the session goes on."""
    cur.execute("SET recsql.max_iterations = 100000000")
    timer = threading.Timer(0.5, conn.cancel)
    timer.start()
    started = time.monotonic()
    with pytest.raises(recsql.QueryCancelled):
        cur.execute(sql.format(bound=10**8))
    assert time.monotonic() - started < 20
    cur.execute(CHAIN.format(bound=3))
    assert cur.fetchall() == [(1,), (2,), (3,)]


def test_a_min_recursion_stays_in_the_loop_while_many_facts_are_known(conn, monkeypatch):
    """Shortest paths over two levels of fan-out (FEW_KNOWN and more nodes at the second), then three paths
    of three: every round after the second is thin, but each round of a query would compare its rows with
    every distance known, so the loop runs the whole recursion (no round is queried); from the start of a
    path alone (few facts known), the query takes over after the first iteration. Both give networkx's
    distances."""
    from recsql.engine.local import rounds

    fan = 110  # 110 * 110 = 12,100 nodes at the second level: past FEW_KNOWN
    assert fan * fan > rounds.FEW_KNOWN
    first = [(0, i, 1) for i in range(1, fan + 1)]
    second = [(i, i * 1_000 + j, 1) for i in range(1, fan + 1) for j in range(fan)]
    paths = [(10**7 + k * 10 + i, 10**7 + (k + 1) * 10 + i, 2) for i in range(3) for k in range(3)]
    paths += [(1_000 + i, 10**7 + i, 3) for i in range(3)]  # from the second level
    queried_rounds: list[int] = []  # the round each query of rounds starts from
    query = rounds.Rounds.query
    monkeypatch.setattr(
        rounds.Rounds,
        "query",
        lambda self, sql, from_round, tables: [queried_rounds.append(from_round), query(self, sql, from_round, tables)],
    )
    for edges, start, in_the_loop in ((first + second + paths, 0, True), (paths, 1_000, False)):
        queried_rounds.clear()
        queried, looped = fixpoints(conn, SHORTEST.format(start=start), register_weighted(conn, edges))
        graph = nx.DiGraph()
        graph.add_weighted_edges_from(edges)
        distances = ordered(list(nx.single_source_dijkstra_path_length(graph, start).items()))
        assert outcome(queried) == outcome(looped) == ("rows", distances)
        assert queried_rounds[:1] == ([] if in_the_loop else [1]), queried_rounds


def test_a_min_search_that_widens_after_the_hand_over_goes_back_to_the_loop(conn, monkeypatch):
    """A path first (thin rounds: the query takes over, in chunks of one round, then eight), then a fan
    of 60 nodes in the last round of the second chunk: wider than the one before, so the loop goes on
    from it; the distances are the loop's and Dijkstra's."""
    from recsql.engine.local import rounds

    backs = []
    back_to_loop = rounds.LoopThenRounds.back_to_loop
    monkeypatch.setattr(rounds.LoopThenRounds, "back_to_loop", lambda self: [backs.append(1), back_to_loop(self)])
    edges = [(i, i + 1, 1) for i in range(9)] + [(9, 100 + i, i % 7 + 1) for i in range(60)]
    edges += [(100 + i, 200 + i % 13, 2) for i in range(60)]
    queried, looped = fixpoints(conn, SHORTEST.format(start=0), register_weighted(conn, edges))
    graph = nx.DiGraph()
    graph.add_weighted_edges_from(edges)
    distances = ordered(list(nx.single_source_dijkstra_path_length(graph, 0).items()))
    assert outcome(queried) == outcome(looped) == ("rows", distances)
    assert backs
