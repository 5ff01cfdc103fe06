"""Datalog twins of the SQL queries of tests/test_aggregates_in_recursion.py: RaSQL's header aggregates in
recursion (min, max, count, sum as DeALS's monotonic `mmin`, `mmax`, `mcount`, `msum`), non-linear and mutual
recursion, and a final query over a recursive result.

`TWINS` maps the name of each SQL query of that module to a Datalog program saying the same over the same
registered tables. Each twin runs on that module's data (its builders and `register`, imported; the data it
builds inside a test, rebuilt here from the same seeds) and is checked against the independent reference that
module's test uses (tests/reference.py: networkx, plain Python); where that test compares two SQL answers, the
twin is checked against recsql's SQL answer too. The cyclic count of paths must fail as its SQL does: past
recsql.max_iterations, with the same error class. Every twin runs locally and on Spark.

`test_every_sql_query_has_a_twin` keeps `TWINS` complete (see `sql_queries_run_by`).
"""

from __future__ import annotations

import ast
import inspect
import random
from pathlib import Path

import networkx as nx
import pandas as pd
import pytest
import test_aggregates_in_recursion as sql_module
from reference import (
    all_pairs_path_counts,
    all_pairs_shortest_nonempty,
    assert_same_rows,
    attend,
    bom_max_days,
    dag_path_counts,
    head_counts,
    min_label_components,
    mlm_bonus,
    parity_reach,
    same_generation_naive,
    same_generation_tree,
    single_source_shortest,
    transitive_closure,
)
from strategies import EVERY_STRATEGY, under
from test_aggregates_in_recursion import (
    SOURCE,
    SSSP_INNER,
    SSSP_RASQL,
    WEIGHTED,
    cyclic_graph,
    dag,
    forest,
    register,
    tree,
)

import recsql

pytestmark = pytest.mark.spark

# --- the twins ---------------------------------------------------------------------------------------------------

ORGANIZERS, ATTEND_AT_LEAST = [1, 2, 3], 2  # test_mutual_recursion_count_attend's; k is a constant in SQL and twin

SHORTEST_PATHS = """
sp(1, 0).
sp(Y, mmin<D>) :- sp(X, D1), agg_wedge(X, Y, W), D = D1 + W.
.output sp
"""

SINGLE_SOURCE_PATH_COUNTS = """
paths(1, 1).
paths(Y, msum<C>) :- paths(X, C), {edges}(X, Y){condition}.
.output paths
"""

TWINS: dict[str, str] = {
    "SSSP_RASQL": SHORTEST_PATHS,
    "SSSP_INNER": SHORTEST_PATHS,  # the SQL's other parenthesization: one program in Datalog
    "test_all_pairs_shortest_paths_min": """
sp(X, Y, mmin<C>) :- agg_wedge(X, Y, C).
sp(X, Y, mmin<C>) :- sp(X, Z, C1), agg_wedge(Z, Y, W), C = C1 + W.
.output sp
""",
    "test_connected_components_min_label": """
cc(X, mmin<X>) :- agg_uedge(X, _).
cc(Y, mmin<C>) :- cc(X, C), agg_uedge(X, Y).
.output cc
""",
    "test_bill_of_materials_longest_delivery_max": """
actualdays(P, mmax<D>) :- agg_basic(P, D).
actualdays(P, mmax<D>) :- agg_assbl(P, S), actualdays(S, D).
.output actualdays
""",
    "test_path_counts_single_source_dag_count": SINGLE_SOURCE_PATH_COUNTS.format(edges="agg_dag", condition=""),
    "test_path_counts_along_a_condition_on_a_cyclic_graph": SINGLE_SOURCE_PATH_COUNTS.format(
        edges="agg_cycle", condition=", Y > X"
    ),
    "test_path_counts_all_pairs_dag_count": """
paths(X, Y, mcount<_>) :- agg_dag(X, Y).
paths(X, Y, msum<C>) :- paths(X, Z, C), agg_dag(Z, Y).
.output paths
""",
    "test_org_chart_head_count": """
dept(E, mcount<_>) :- agg_report(_, E).
dept(M, msum<C>) :- dept(E, C), agg_report(M, E).
.output dept
""",
    "test_cyclic_count_of_paths_hits_iteration_limit": SINGLE_SOURCE_PATH_COUNTS.format(edges="agg_cyc", condition=""),
    "test_bonus_rollup_sum_doubles": """
bonus(M, msum<B>) :- agg_sales(M, P), B = P * 0.1.
bonus(M1, msum<B>) :- bonus(M2, B2), agg_sponsor(M1, M2), B = B2 * 0.5.
.output bonus
""",
    "test_nonlinear_transitive_closure": """
tc(X, Y) :- agg_e(X, Y).
tc(X, Y) :- tc(X, Z), tc(Z, Y).
.output tc
""",
    "test_nonlinear_three_atoms_odd_walks": """
ow(X, Y) :- agg_e(X, Y).
ow(X, Y) :- ow(X, A), agg_e(A, B), ow(B, Y).
.output ow
""",
    "test_same_generation_three_atoms": """
sg(X, Y) :- agg_rel(P, X), agg_rel(P, Y), X != Y.
sg(X, Y) :- agg_rel(P, X), sg(P, Q), agg_rel(Q, Y).
.output sg
""",
    "test_same_generation_nonlinear": """
sg(X, Y) :- agg_rel(P, X), agg_rel(P, Y), X != Y.
sg(X, Y) :- agg_rel(P, X), sg(P, Q), agg_rel(Q, Y).
sg(X, Y) :- sg(X, Z), sg(Z, Y).
.output sg
""",
    "test_mutual_recursion_even_odd": """
odd(X, Y) :- agg_e(X, Y).
odd(X, Y) :- even(X, Z), agg_e(Z, Y).
even(X, Y) :- odd(X, Z), agg_e(Z, Y).
tagged(0, X, Y) :- even(X, Y).
tagged(1, X, Y) :- odd(X, Y).
.output tagged
""",
    "test_mutual_recursion_count_attend": f"""
attend(X) :- agg_organizer(X).
attend(Y) :- cntcoming(Y, N), N >= {ATTEND_AT_LEAST}.
cntcoming(Y, mcount<_>) :- attend(X), agg_friend(X, Y).
tagged(0, X, 0) :- attend(X).
tagged(1, Y, N) :- cntcoming(Y, N).
.output tagged
""",
    "test_final_query_join_and_order_by": """
sp(1, 0).
sp(Y, mmin<D>) :- sp(X, D1), agg_wedge(X, Y, W), D = D1 + W.
.decl named(name: symbol, dist: number)
named(Name, D) :- sp(X, D), agg_names(X, Name), D > 0.
.output named
""",
}


def twin_rows(cur, name: str) -> list[tuple]:
    """The answer of the Datalog twin of the SQL query `name`."""
    cur.execute_datalog(TWINS[name])
    return cur.fetchall()


def assert_twin(cur, name: str, expected, **options) -> list[tuple]:
    """Run the twin of `name` and compare its rows with `expected` as sets (numbers within `tol`); its rows."""
    rows = twin_rows(cur, name)
    assert_same_rows(rows, expected, context=f"twin of {name}:{TWINS[name]}", **options)
    return rows


# --- completeness ------------------------------------------------------------------------------------------------


def is_sql(node: ast.AST) -> bool:
    """Whether an expression holds SQL text: a string in it says SELECT (the SQL module's other statements are
    SETs)."""
    return any(
        isinstance(part, ast.Constant) and isinstance(part.value, str) and "select" in part.value.lower()
        for part in ast.walk(node)
    )


def assigned_names(nodes, keep) -> set[str]:
    """The names assigned, among `nodes`, an expression `keep` accepts."""
    return {
        target.id
        for node in nodes
        if isinstance(node, ast.Assign) and keep(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def defined_tests(tree: ast.Module) -> list[ast.FunctionDef]:
    """The test functions a module's syntax tree defines."""
    return [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]


def sql_queries_run_by(module) -> set[str]:
    """The names of the SQL queries the tests of `module` run, read from its source (ast).

    A query is SQL text (`is_sql`) a test passes to a call (`cur.execute`, `query`, `assert_answer`, whatever
    runs or compares it): by the name of a module constant holding it, by a variable the test assigns it to, or
    written out in the call. It is named after the constant that holds it; a query a test writes itself is named
    after the test (and, where a test writes several, `test:variable`). Reading calls rather than strings keeps
    the pieces a test builds one query from (`ctes + "SELECT ..."`) one query, and a query the module keeps in a
    constant one query however many tests run it; a new test or constant with SQL in it shows up here."""
    tree = ast.parse(inspect.getsource(module))
    constants = assigned_names(tree.body, is_sql)
    found: set[str] = set()
    for function in defined_tests(tree):
        nodes = list(ast.walk(function))
        written = assigned_names(nodes, is_sql)
        own: set[str] = set()
        for call in (node for node in nodes if isinstance(node, ast.Call)):
            for argument in (*call.args, *(keyword.value for keyword in call.keywords)):
                if isinstance(argument, ast.Name) and argument.id in constants:
                    found.add(argument.id)
                elif isinstance(argument, ast.Name) and argument.id in written:
                    own.add(argument.id)
                elif not isinstance(argument, ast.Name) and is_sql(argument):
                    own.add("")
        found |= {function.name} if len(own) == 1 else {f"{function.name}:{variable}" for variable in own}
    return found


def twins_run_by_this_module() -> set[str]:
    """The names whose twins this module's tests run: the constant names they give `twin_rows` or `assert_twin`."""
    tree = ast.parse(Path(__file__).read_text())
    return {
        call.args[1].value
        for function in defined_tests(tree)
        for call in ast.walk(function)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id in (twin_rows.__name__, assert_twin.__name__)
        and isinstance(call.args[1], ast.Constant)
    }


def test_every_sql_query_has_a_twin():
    queries = sql_queries_run_by(sql_module)
    assert set(TWINS) == queries, (
        f"SQL queries without a twin: {sorted(queries - set(TWINS))}; twins of no query: {sorted(set(TWINS) - queries)}"
    )
    assert twins_run_by_this_module() == set(TWINS), "every twin is run by a test of this module"


# --- data the SQL module's tests build inline, rebuilt from the same seeds ---------------------------------------


def undirected_components() -> set[tuple[int, int]]:
    """test_connected_components_min_label's four components on scattered labels (one direction per edge)."""
    rng = random.Random(21)
    labels = rng.sample(range(10, 200), 30)
    groups = [labels[0:9], labels[9:17], labels[17:26], labels[26:30]]
    undirected = set()
    for group in groups:
        for i in range(1, len(group)):
            undirected.add((group[rng.randrange(i)], group[i]))
        for _ in range(3):
            a, b = rng.sample(group, 2)
            undirected.add((a, b))
    return undirected


def bill_of_materials() -> tuple[dict[int, int], set[tuple[int, int]]]:
    """test_bill_of_materials_longest_delivery_max's basic parts' days and (assembly, part) rows."""
    rng = random.Random(8)
    basic = {part: rng.randint(1, 40) for part in range(1, 11)}
    assbl = set()
    for part in range(11, 26):
        for sub in rng.sample(range(1, part), rng.randint(2, 3)):
            assbl.add((part, sub))
    return basic, assbl


ASCENDING_WALK_GRAPH = [(1, 2), (2, 3), (3, 1), (3, 4), (4, 5), (2, 4), (1, 3)]  # the cyclic graph of that test


def bonus_members() -> tuple[dict[int, float], list[tuple[int, int]]]:
    """test_bonus_rollup_sum_doubles's sales per member and (sponsor, sponsored) rows."""
    rng = random.Random(13)
    sponsor = tree(seed=13, n=22, first=1)
    members = {m for pair in sponsor for m in pair}
    return {m: round(rng.uniform(1.0, 2000.0), 2) for m in members}, sponsor


def friendships() -> set[tuple[int, int]]:
    """test_mutual_recursion_count_attend's 90 (x, y) rows: x is a friend of y."""
    rng = random.Random(37)
    friend = set()
    while len(friend) < 90:
        x, y = rng.sample(range(1, 31), 2)
        friend.add((x, y))
    return friend


def city_names(edges) -> dict[int, str]:
    """test_final_query_join_and_order_by's name of every node."""
    nodes = sorted({u for u, _, _ in edges} | {v for _, v, _ in edges})
    return {n: f"city{(n * 7) % 5}_{n:02d}" for n in nodes}


# --- min ---------------------------------------------------------------------------------------------------------


@under(*EVERY_STRATEGY)
def test_single_source_shortest_paths_min(conn, cur):
    register(conn, "agg_wedge", WEIGHTED, ("src", "dst", "w"))
    assert_twin(cur, "SSSP_RASQL", single_source_shortest(WEIGHTED, SOURCE).items())


@under(*EVERY_STRATEGY)
def test_parenthesization_twin_same_answer_as_both_sql_forms(conn, cur):
    register(conn, "agg_wedge", WEIGHTED, ("src", "dst", "w"))
    expected = single_source_shortest(WEIGHTED, SOURCE).items()
    rows = assert_twin(cur, "SSSP_INNER", expected)
    for sql in (SSSP_INNER, SSSP_RASQL):
        cur.execute(sql)
        assert_same_rows(rows, cur.fetchall(), context=f"twin of SSSP_INNER vs recsql's SQL {sql}")


@under(*EVERY_STRATEGY)
def test_all_pairs_shortest_paths_min(conn, cur):
    register(conn, "agg_wedge", WEIGHTED, ("src", "dst", "w"))
    expected = [(s, d, c) for (s, d), c in all_pairs_shortest_nonempty(WEIGHTED).items()]
    assert_twin(cur, "test_all_pairs_shortest_paths_min", expected)


@under(*EVERY_STRATEGY)
def test_connected_components_min_label(conn, cur):
    undirected = undirected_components()
    register(conn, "agg_uedge", sorted(undirected | {(b, a) for a, b in undirected}), ("x", "y"))
    assert_twin(cur, "test_connected_components_min_label", min_label_components(undirected).items())


# --- max ---------------------------------------------------------------------------------------------------------


@under(*EVERY_STRATEGY)
def test_bill_of_materials_longest_delivery_max(conn, cur):
    basic, assbl = bill_of_materials()
    register(conn, "agg_basic", basic.items(), ("part", "days"))
    register(conn, "agg_assbl", sorted(assbl), ("part", "sub"))
    assert_twin(cur, "test_bill_of_materials_longest_delivery_max", bom_max_days(assbl, basic).items())


# --- count -------------------------------------------------------------------------------------------------------


@under(*EVERY_STRATEGY)
def test_path_counts_single_source_dag_count(conn, cur):
    edges = register(conn, "agg_dag", dag(), ("src", "dst"))
    assert_twin(cur, "test_path_counts_single_source_dag_count", dag_path_counts(edges, 1).items())


@under(*EVERY_STRATEGY)
def test_path_counts_along_a_condition_on_a_cyclic_graph(conn, cur):
    edges = register(conn, "agg_cycle", ASCENDING_WALK_GRAPH, ("src", "dst"))
    expected = dag_path_counts([(a, b) for a, b in edges if b > a], 1)
    assert_twin(cur, "test_path_counts_along_a_condition_on_a_cyclic_graph", expected.items())


@under(*EVERY_STRATEGY)
def test_path_counts_all_pairs_dag_count(conn, cur):
    edges = register(conn, "agg_dag", dag(seed=4, n=10, m=20), ("src", "dst"))
    expected = [(x, y, c) for (x, y), c in all_pairs_path_counts(edges).items()]
    assert_twin(cur, "test_path_counts_all_pairs_dag_count", expected)


@under(*EVERY_STRATEGY)
def test_org_chart_head_count(conn, cur):
    report = register(conn, "agg_report", tree(seed=5, n=25), ("mgr", "emp"))
    assert_twin(cur, "test_org_chart_head_count", head_counts(report).items())


@under(*EVERY_STRATEGY)
def test_cyclic_count_of_paths_hits_iteration_limit(conn, cur):
    edges = register(conn, "agg_cyc", cyclic_graph(), ("src", "dst"))
    graph = nx.DiGraph(edges)
    # the reference: a cycle is reachable from node 1, so node 1 has infinitely many paths to it
    assert not nx.is_directed_acyclic_graph(graph.subgraph(nx.descendants(graph, 1) | {1}))
    cur.execute("SET recsql.max_iterations = 10")  # for this test only (conftest's settings_restored)
    with pytest.raises(recsql.OperationalError) as info:
        twin_rows(cur, "test_cyclic_count_of_paths_hits_iteration_limit")
    message = str(info.value).lower()
    assert "paths" in message, f"the error should name the relation: {info.value}"
    assert "max_iterations" in message, f"the error should say how to raise the limit: {info.value}"


# --- sum ---------------------------------------------------------------------------------------------------------


@under(*EVERY_STRATEGY)
def test_bonus_rollup_sum_doubles(conn, cur):
    sales, sponsor = bonus_members()
    register(conn, "agg_sales", sales.items(), ("m", "p"), doubles=("p",))
    register(conn, "agg_sponsor", sponsor, ("m1", "m2"))
    assert_twin(cur, "test_bonus_rollup_sum_doubles", mlm_bonus(sales, sponsor).items(), tol=1e-6)


# --- non-linear recursion ------------------------------------------------------------------------------------


@under(*EVERY_STRATEGY)
def test_nonlinear_transitive_closure(conn, cur):
    edges = register(conn, "agg_e", cyclic_graph(seed=17, n=12, m=18), ("src", "dst"))
    assert_twin(cur, "test_nonlinear_transitive_closure", transitive_closure(edges))


@under(*EVERY_STRATEGY)
def test_nonlinear_three_atoms_odd_walks(conn, cur):
    edges = register(conn, "agg_e", cyclic_graph(seed=29, n=10, m=12), ("src", "dst"))
    _, odd = parity_reach(edges)
    assert_twin(cur, "test_nonlinear_three_atoms_odd_walks", odd)


@under(*EVERY_STRATEGY)
def test_same_generation_three_atoms(conn, cur):
    rel = register(conn, "agg_rel", forest(), ("parent", "child"))
    expected = same_generation_tree(rel)
    assert expected == same_generation_naive(rel)
    assert_twin(cur, "test_same_generation_three_atoms", expected)


@under(*EVERY_STRATEGY)
def test_same_generation_nonlinear(conn, cur):
    rel = register(conn, "agg_rel", forest(seed=29), ("parent", "child"))
    assert_twin(cur, "test_same_generation_nonlinear", same_generation_naive(rel, transitive=True))


# --- mutual recursion --------------------------------------------------------------------------------------------


@under(*EVERY_STRATEGY)
def test_mutual_recursion_even_odd(conn, cur):
    edges = register(conn, "agg_e", cyclic_graph(seed=31, n=11, m=16), ("src", "dst"))
    even, odd = parity_reach(edges)
    expected = [(0, x, y) for x, y in even] + [(1, x, y) for x, y in odd]
    assert_twin(cur, "test_mutual_recursion_even_odd", expected)


@under(*EVERY_STRATEGY)
def test_mutual_recursion_count_attend(conn, cur):
    friend = friendships()
    attending, coming = attend(ORGANIZERS, friend, ATTEND_AT_LEAST)
    register(conn, "agg_organizer", [(o,) for o in ORGANIZERS], ("x",))
    register(conn, "agg_friend", sorted(friend), ("x", "y"))
    expected = [(0, p, 0) for p in attending] + [(1, y, n) for y, n in coming.items()]
    assert_twin(cur, "test_mutual_recursion_count_attend", expected)


# --- the final query over the recursive result ----------------------------------------------------------------


@under(*EVERY_STRATEGY)
def test_final_query_join_and_order_by(conn, cur):
    """ORDER BY has no Datalog twin: the rows are compared as a set (of strings and integers, exactly), and the
    columns by name."""
    register(conn, "agg_wedge", WEIGHTED, ("src", "dst", "w"))
    names = city_names(WEIGHTED)
    conn.register("agg_names", pd.DataFrame({"id": list(names), "name": list(names.values())}).astype({"id": "int64"}))
    dist = single_source_shortest(WEIGHTED, SOURCE)
    expected = {(names[n], d) for n, d in dist.items() if d > 0}
    rows = twin_rows(cur, "test_final_query_join_and_order_by")
    assert set(rows) == expected and len(rows) == len(expected), f"got {sorted(rows)}\nexpected {sorted(expected)}"
    assert [d[0] for d in cur.description] == ["name", "dist"]
