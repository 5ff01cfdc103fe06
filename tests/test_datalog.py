"""Datalog programs (BigDatalog / DeALS rules, Soufflé's declarations) through the same IR, optimizer and
strategies as SQL: each program beside its SQL twin and an independent reference (networkx, plain Python),
under every strategy; errors with line and column."""

from __future__ import annotations

import pytest
from helpers import edge_lists
from hypothesis import given, settings
from reference import (
    all_pairs_path_counts,
    min_label_components,
    parity_reach,
    single_source_shortest,
    transitive_closure,
)

import recsql

EDGES = [(1, 2), (2, 3), (3, 1), (3, 4), (5, 6), (6, 6)]
WEIGHTED = [(1, 2, 5), (2, 3, 1), (1, 3, 9), (3, 4, 2), (4, 1, 1), (5, 6, 3)]
DAG = [(1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (2, 5)]


@pytest.fixture
def graph(cur):
    """Tables dl_edge, dl_wedge, dl_dag, as a Datalog program's inputs."""
    for name, columns, rows in (
        ("dl_edge", "src BIGINT, dst BIGINT", EDGES),
        ("dl_wedge", "src BIGINT, dst BIGINT, w BIGINT", WEIGHTED),
        ("dl_dag", "src BIGINT, dst BIGINT", DAG),
    ):
        cur.execute(f"CREATE OR REPLACE TABLE {name} ({columns})")
        cur.execute(f"INSERT INTO {name} VALUES " + ", ".join(str(row) for row in rows))
    return cur


def answer(cur, program: str) -> set[tuple]:
    cur.execute_datalog(program)
    return set(cur.fetchall())


def sql_answer(cur, query: str) -> set[tuple]:
    cur.execute(query)
    return set(cur.fetchall())


TC = """.input dl_edge
tc(X, Y) :- dl_edge(X, Y).
tc(X, Y) :- tc(X, Z), dl_edge(Z, Y).
.output tc"""
TC_SQL = """WITH RECURSIVE tc(x, y) AS (SELECT src, dst FROM dl_edge UNION
SELECT tc.x, e.dst FROM tc JOIN dl_edge e ON tc.y = e.src) SELECT x, y FROM tc"""


@pytest.mark.strategies("local", "spark")
def test_transitive_closure_as_deals_and_souffle_write_it(graph, strategy):
    closure = transitive_closure(EDGES)
    assert answer(graph, TC) == closure == sql_answer(graph, TC_SQL)
    deals = "tc(X, Y) <- dl_edge(X, Y).\ntc(X, Y) <- tc(X, Z), dl_edge(Z, Y).\n.output tc"
    assert answer(graph, deals) == closure
    nonlinear = "tc(x, y) :- dl_edge(x, y).\ntc(x, y) :- tc(x, z), tc(z, y).\n.output tc"
    assert answer(graph, nonlinear) == closure


@pytest.mark.strategies("local", "spark")
def test_shortest_paths_with_a_monotonic_min(graph, strategy):
    program = """sp(1, 0).
sp(Y, mmin<D>) <- sp(X, D1), dl_wedge(X, Y, W), D = D1 + W.
.output sp"""
    expected = single_source_shortest(WEIGHTED, 1)
    assert answer(graph, program) == {(node, distance) for node, distance in expected.items()}
    twin = """WITH RECURSIVE sp(n, min() AS d) AS (SELECT 1, 0 UNION
SELECT e.dst, sp.d + e.w FROM sp JOIN dl_wedge e ON sp.n = e.src) SELECT n, d FROM sp"""
    assert answer(graph, program) == sql_answer(graph, twin)


@pytest.mark.strategies("local", "spark")
def test_connected_components_and_path_counts(graph, strategy):
    components = """cc(X, mmin<X>) :- dl_edge(X, _).
cc(X, mmin<X>) :- dl_edge(_, X).
cc(Y, mmin<L>) :- cc(X, L), dl_edge(X, Y).
cc(X, mmin<L>) :- cc(Y, L), dl_edge(X, Y).
.output cc"""
    undirected = EDGES + [(b, a) for a, b in EDGES]
    assert answer(graph, components) == set(min_label_components(undirected).items())
    counts = """paths(X, Y, mcount<_>) :- dl_dag(X, Y).
paths(X, Y, msum<C>) :- paths(X, Z, C), dl_dag(Z, Y).
.output paths"""
    assert answer(graph, counts) == {(a, b, n) for (a, b), n in all_pairs_path_counts(DAG).items()}


STRATIFIED = """.decl degree(node: number, out: number)
degree(X, count<Y>) :- dl_edge(X, Y).
heaviest(X, max<W>) :- dl_wedge(X, _, W).
reach(X, Y) :- dl_edge(X, Y).
reach(X, Y) :- reach(X, Z), dl_edge(Z, Y).
source_only(X) :- dl_edge(X, _), !dl_edge(_, X).
from_one(Y) :- reach(1, Y), Y != 1.
loop(X) :- dl_edge(X, X).
"""


def test_a_program_may_name_its_relations_as_it_likes(graph):
    program = "answer(X, Y) :- dl_edge(X, Y).\nanswer(X, Y) :- answer(X, Z), dl_edge(Z, Y).\n.output answer"
    assert answer(graph, program) == transitive_closure(EDGES)


def test_stratified_aggregates_negation_and_constants(graph):
    outdegree: dict[int, int] = {}
    heaviest: dict[int, int] = {}
    for a, _ in EDGES:
        outdegree[a] = outdegree.get(a, 0) + 1
    for a, _, w in WEIGHTED:
        heaviest[a] = max(heaviest.get(a, w), w)
    expected = {
        "degree": set(outdegree.items()),
        "heaviest": set(heaviest.items()),
        "source_only": {(node,) for node in {a for a, _ in EDGES} - {b for _, b in EDGES}},
        "from_one": {(b,) for a, b in transitive_closure(EDGES) if a == 1 and b != 1},
        "loop": {(a,) for a, b in EDGES if a == b},
    }
    for name, rows in expected.items():
        assert answer(graph, STRATIFIED + f".output {name}") == rows, name
    assert answer(graph, STRATIFIED + ".output degree\n.output loop") == expected["loop"]  # the last is current


BODY_AGGREGATES = """node(X) :- dl_edge(X, _).
node(X) :- dl_edge(_, X).
node(7).
out(X, N) :- node(X), N = count : { dl_edge(X, _) }.
lightest(X, W) :- node(X), W = min C : dl_wedge(X, _, C).
weight(X, S) :- node(X), S = sum C : { dl_wedge(X, Y, C), Y != X }.
total(N, S) :- N = count : dl_edge(_, _), S = sum C : { dl_wedge(_, _, C), C > 100 }.
rank(X, R) :- node(X), R = count : { node(Y), Y < X }.
top2(X) :- node(X), count : { node(Y), Y > X } < 2.
hubs(X) :- node(X), count : { dl_edge(X, Y), count : { dl_edge(Y, _) } > 1 } > 0.
named(X, S, L, D) :- node(X), S = cat("n", to_string(X)), L = strlen(S), min(X, 3) = X, D = substr(S, 1, 1).
"""


@pytest.mark.strategies("local", "spark")
def test_body_aggregates_as_souffle_writes_them(graph, strategy):
    nodes = {node for edge in EDGES for node in edge} | {7}
    outdegree = {x: sum(1 for a, _ in EDGES if a == x) for x in nodes}
    expected = {
        "out": set(outdegree.items()),
        "lightest": {(x, min(w for a, _, w in WEIGHTED if a == x)) for x in nodes if any(a == x for a, *_ in WEIGHTED)},
        "weight": {(x, sum(w for a, b, w in WEIGHTED if a == x and b != x)) for x in nodes},
        "total": {(len(EDGES), 0)},  # a sum of nothing is 0
        "rank": {(x, sum(1 for y in nodes if y < x)) for x in nodes},
        "top2": {(x,) for x in sorted(nodes)[-2:]},
        "hubs": {(x,) for x in nodes if any(a == x and outdegree[b] > 1 for a, b in EDGES)},
    }
    for name, rows in expected.items():
        assert answer(graph, BODY_AGGREGATES + f".output {name}") == rows, name


@pytest.mark.spark  # the type of a string CONCAT is Spark's to derive
def test_souffle_functors(graph):
    nodes = {node for edge in EDGES for node in edge} | {7}
    expected = {(x, f"n{x}", len(f"n{x}"), f"n{x}"[1:2]) for x in nodes if x <= 3}
    assert answer(graph, BODY_AGGREGATES + ".output named") == expected


def test_a_body_aggregate_compared_with_a_variable_its_rule_binds(cur):
    """Interval starts: an interval's start that no other interval covers is the least start of those
    reaching it. The aggregate reads S, which the rule's atom binds, and its value is compared with S."""
    intervals = [(1, 3), (2, 4), (6, 7), (7, 9), (12, 12)]
    cur.execute("CREATE OR REPLACE TABLE dl_interval (s BIGINT, e BIGINT)")
    cur.execute("INSERT INTO dl_interval VALUES " + ", ".join(map(str, intervals)))
    starts = {(s,) for s, _ in intervals if s == min(t for t, e in intervals if s <= e)}
    program = "start(S) :- dl_interval(S, _), S = min T : { dl_interval(T, E), S <= E }.\n.output start"
    assert answer(cur, program) == starts == {(1,), (6,), (12,)}
    counted = "n(countd<E>, count<_>) :- dl_interval(_, E).\n.output n"
    assert answer(cur, counted) == {(len({e for _, e in intervals}), len(intervals))}


def test_monotonic_counts_and_sums_outside_recursion_count_derivations(graph):
    """A relation that does not recurse counts each binding of its body (mcount<_>), each distinct X
    (mcount<X>), adds each binding's value (msum<C>) or each contributor's largest value (msum<(Z, C)>), as
    DeAL does; several rules add up."""
    out = {a: sum(1 for x, _ in EDGES if x == a) for a, _ in EDGES}
    heads = {a: len({b for x, b in EDGES if x == a}) for a, _ in EDGES}
    weights = {a: sum(w for x, _, w in WEIGHTED if x == a) for a, *_ in WEIGHTED}
    best = {
        a: sum(max(w for x, y, w in WEIGHTED if x == a and y == b) for b in {y for x, y, _ in WEIGHTED if x == a})
        for a, *_ in WEIGHTED
    }
    programs = {
        "deg(X, mcount<_>) :- dl_edge(X, _).": set(out.items()),
        "deg(X, mcount<Y>) :- dl_edge(X, Y), dl_edge(_, Y).": set(heads.items()),
        "deg(X, msum<W>) :- dl_wedge(X, _, W).": set(weights.items()),
        "deg(X, msum<(Y, W)>) :- dl_wedge(X, Y, W).": set(best.items()),
        "deg(X, mcount<_>) :- dl_edge(X, _).\ndeg(X, msum<W>) :- dl_wedge(X, _, W).": {
            (a, out.get(a, 0) + weights.get(a, 0)) for a in out.keys() | weights.keys()
        },
    }
    for program, expected in programs.items():
        assert answer(graph, program + "\n.output deg") == expected, program


MUTUAL = """.decl edge(a: number, b: number)
.input edge(IO=table, name=dl_random)
odd(X, Y) :- edge(X, Y).
odd(X, Y) :- even(X, Z), edge(Z, Y).
even(X, Y) :- odd(X, Z), edge(Z, Y).
node(X) :- edge(X, _).
node(X) :- edge(_, X).
reach(X, Y) :- odd(X, Y).
reach(X, Y) :- even(X, Y).
unreached(X, Y) :- node(X), node(Y), !reach(X, Y).
only_even(X, Y) :- even(X, Y), !odd(X, Y).
"""


@settings(max_examples=20, deadline=None)
@given(edges=edge_lists())
def test_mutual_recursion_and_negation_across_strata_match_python(conn, edges):
    cur = conn.cursor()
    cur.execute("CREATE OR REPLACE TABLE dl_random (a BIGINT, b BIGINT)")
    cur.execute("INSERT INTO dl_random VALUES " + ", ".join(str(edge) for edge in edges))
    even, odd = parity_reach(edges)
    nodes = {node for edge in edges for node in edge}
    reach = even | odd
    assert answer(cur, MUTUAL + ".output odd") == odd
    assert answer(cur, MUTUAL + ".output even") == even
    assert answer(cur, MUTUAL + ".output unreached") == {(a, b) for a in nodes for b in nodes} - reach
    assert answer(cur, MUTUAL + ".output only_even") == even - odd


def test_inputs_from_files_and_outputs_to_tables(cur, tmp_path):
    (tmp_path / "arc.facts").write_text("".join(f"{a}\t{b}\n" for a, b in EDGES))
    (tmp_path / "arc.csv").write_text("from,to\n" + "".join(f"{a},{b}\n" for a, b in EDGES))
    program = f""".decl arc(a: number, b: number)
.input arc(IO=file, filename="{tmp_path / "arc.facts"}")
.decl csv_arc(a: number, b: number)
.input csv_arc(IO=file, filename="{tmp_path / "arc.csv"}", delimiter=",", headers=true)
tc(X, Y) :- arc(X, Y).
tc(X, Y) :- tc(X, Z), csv_arc(Z, Y).
.output tc(IO=table, name=dl_stored)
.output tc"""
    assert answer(cur, program) == transitive_closure(EDGES)
    assert sql_answer(cur, "SELECT * FROM dl_stored") == transitive_closure(EDGES)


@pytest.mark.parametrize(
    "program, message, line, column",
    [
        ("tc(X, Y) :- edge(X, Y)\n.output tc", r"expected '\.' at the end of the rule, found '\.output'", 2, 1),
        ("p(X) :- q(X.", r"expected ',' or '\)'", 1, 12),
        ("p(X, Z) :- dl_edge(X, Y).\n.output p", "unbound variable Z in the head", 1, 1),
        ("p(X) :- dl_edge(X, _), !dl_edge(Y, X).\n.output p", "unbound variable Y in the negated atom", 1, 25),
        ("p(X) :- nothing(X).\n.output p", "unknown relation 'nothing'", 1, 9),
        ("p(X) :- dl_edge(X).\n.output p", "'dl_edge' has 2 columns, not 1", 1, 9),
        (
            "p(X) :- dl_edge(X, _), !q(X).\nq(X) :- dl_edge(X, _), !p(X).\n.output p",
            "the negation of 'q' is inside its own recursion",
            1,
            25,
        ),
        ('.decl p(a: number)\np("text").\n.output p', "column a of p is a number", 2, 3),
        (
            "p(X, N) :- dl_edge(X, _), N = count : { p(X, _) }.\n.output p",
            "the aggregate count over 'p' is inside its own recursion",
            1,
            31,
        ),
        ("p(X, count<Y>) :- p(X, Y).\n.output p", "the aggregate count over 'p' is inside its own recursion", 1, 6),
        ("p(M) :- M = min : dl_edge(M, _).\n.output p", "expected the expression min aggregates", 1, 17),
        ("p(X) :- dl_edge(X, _).", r"no \.output", None, None),
        (".print p", "unknown directive .print", 1, 1),
        ("p(S) :- dl_edge(X, _), S = to_string(X, 1).\n.output p", r"to_string takes 1 argument\(s\), not 2", 1, 28),
        (
            ".decl dl_edge(a: number, b: symbol)\n.input dl_edge\np(X) :- dl_edge(X, _).\n.output p",
            "column b is a symbol but column dst of table dl_edge is bigint",
            1,
            1,
        ),
        (
            ".decl e(a: number)\n.input e(IO=table, name=dl_edge)\np(X) :- e(X).\n.output p",
            ".decl e has 1 columns but table dl_edge 2",
            1,
            1,
        ),
    ],
)
def test_errors_name_the_line_and_column(graph, program, message, line, column):
    with pytest.raises(recsql.ProgrammingError, match=message) as raised:
        graph.execute_datalog(program)
    assert (raised.value.line, raised.value.column) == (line, column)


def test_a_failing_program_leaves_the_tables_as_they_were(graph):
    graph.execute("CREATE OR REPLACE TABLE dl_kept (x BIGINT)")
    graph.execute("INSERT INTO dl_kept VALUES (42)")
    program = """kept(X) :- dl_edge(X, _).
broken(Z) :- dl_edge(X, Y), Z = X / (Y - Y).
.output kept(IO=table, name=dl_kept)
.output broken"""
    with pytest.raises(recsql.DataError, match="(?i)divi"):
        graph.execute_datalog(program)
    assert sql_answer(graph, "SELECT x FROM dl_kept") == {(42,)}


def test_a_program_is_a_query_of_sql_statements(graph):
    """DATALOG $$ ... $$ stands where a query does: alone, in FROM, as a view (which a program reads in
    turn) and as a materialized view maintained as its table changes."""
    closure = transitive_closure(EDGES)
    program = f"DATALOG $$\n{TC}\n$$"
    assert sql_answer(graph, program) == closure
    per_source = {(a, sum(1 for x, _ in closure if x == a)) for a, _ in closure}
    assert sql_answer(graph, f"SELECT x, count(*) FROM ({program}) AS t GROUP BY x") == per_source
    graph.execute(f"CREATE OR REPLACE VIEW dl_tc_view AS {program}")
    assert sql_answer(graph, "SELECT * FROM dl_tc_view WHERE x = 1") == {row for row in closure if row[0] == 1}
    assert answer(graph, "from1(Y) :- dl_tc_view(1, Y).\n.output from1") == {(b,) for a, b in closure if a == 1}
    graph.execute("DROP MATERIALIZED VIEW IF EXISTS dl_tc_kept")
    graph.execute(f"CREATE MATERIALIZED VIEW dl_tc_kept AS {program}")
    graph.execute("INSERT INTO dl_edge VALUES (4, 5)")
    assert sql_answer(graph, "SELECT * FROM dl_tc_kept") == transitive_closure([*EDGES, (4, 5)])
    graph.execute("EXPLAIN ANALYZE DELETE FROM dl_edge WHERE src = 4")
    assert any("Maintenance of dl_tc_kept" in row[0] for row in graph.fetchall())
    assert sql_answer(graph, "SELECT * FROM dl_tc_kept") == closure
    graph.execute("DROP MATERIALIZED VIEW dl_tc_kept")


def test_explain_of_a_program_shows_its_rules_as_written_and_rewritten(graph):
    program = "tc(X, Y) :- dl_edge(X, Y).\ntc(X, Y) :- tc(X, Z), dl_edge(Z, Y).\nfrom1(Y) :- tc(1, Y).\n.output from1"
    for run in (
        lambda: graph.execute_datalog("EXPLAIN ANALYZE\n" + program),
        lambda: graph.execute(f"EXPLAIN ANALYZE DATALOG $${program}$$"),
    ):
        run()
        lines = [row[0] for row in graph.fetchall()]
        written = lines.index("== Rules as written ==")
        assert lines[written + 1 : written + 4] == program.splitlines()[:3]
        assert "== Pass 3: magic_sets ==" in lines  # the binding of from1's tc(1, Y) goes into the recursion
        assert any(line.startswith("tc_bf(X, Y) :- m_tc_bf(X)") for line in lines)
        assert lines[-1] == f"answer rows: {len({b for a, b in transitive_closure(EDGES) if a == 1})}"


@pytest.mark.parametrize(
    "statement, error, message",
    [
        (
            "SELECT * FROM (DATALOG $$ p(X) :- dl_edge(X. .output p $$) t",
            recsql.ProgrammingError,
            "line 1, column 19 of the program",
        ),
        ("DATALOG $$ p(X) :- dl_edge(X, _). $$", recsql.ProgrammingError, r"no \.output"),
        ("DATALOG $$ .input e(IO=file) p(X) :- e(X, _). .output p $$", recsql.NotSupportedError, "IO=file"),
        (
            "DATALOG $$ p(X) :- dl_edge(X, _). .output p(IO=table, name=t) $$",
            recsql.NotSupportedError,
            "stores a table",
        ),
    ],
)
def test_errors_of_a_program_in_a_statement(graph, statement, error, message):
    with pytest.raises(error, match=message):
        graph.execute(statement)


def test_an_aggregate_correlated_only_through_its_recursive_rule_is_refused(graph):
    """Its values per binding would need the recursion's own facts as a context: refused, saying where."""
    program = "r(X) :- dl_edge(X, _).\nr(Y) :- r(X), dl_edge(X, Y), count : { dl_edge(A, _), A != X } > 0.\n.output r"
    with pytest.raises(recsql.NotSupportedError, match="only the rest of its rule binds") as raised:
        graph.execute_datalog(program)
    assert (raised.value.line, raised.value.column) == (2, 30)


@pytest.mark.parametrize(
    "rule, expected",
    [
        ("r(0, count<_>) :- dl_node(X), N = count : dl_pair(X, _).", {(0, 2)}),
        ("r(0, max<X>) :- dl_node(X), N = count : dl_pair(X, _).", {(0, 2)}),
        ("r(0, sum<N>) :- dl_node(X), N = count : dl_pair(X, _).", {(0, 1)}),
        ("r(4, mcount<X>) :- dl_node(X), N = count : dl_pair(X, _).", {(4, 2)}),
        ("r(N) :- N = min A : dl_none(A).", set()),
        ("r(X, N) :- dl_node(X), N = max A : dl_none(A).", set()),
        ("r(X, N) :- dl_node(X), N = max A : dl_node(A).", {(1, 2), (2, 2)}),
    ],
)
def test_body_aggregates_under_head_aggregates_and_over_nothing(cur, rule, expected):
    """A head aggregate over a body whose count is 0 for some bindings counts each binding once; a min or
    max of nothing derives nothing."""
    for name, columns, rows in (("dl_node", "a BIGINT", "(1), (2)"), ("dl_pair", "a BIGINT, b BIGINT", "(1, 5)")):
        cur.execute(f"CREATE OR REPLACE TABLE {name} ({columns})")
        cur.execute(f"INSERT INTO {name} VALUES {rows}")
    cur.execute("CREATE OR REPLACE TABLE dl_none (a BIGINT)")
    assert answer(cur, rule + "\n.output r") == expected
