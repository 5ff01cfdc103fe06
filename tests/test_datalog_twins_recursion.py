"""The recursive SQL of tests/test_recursion_vs_duckdb.py written again as Datalog: each query's twin program runs
through recsql's Datalog front end and must give the answer DuckDB gives for the SQL text, under every strategy.

Every case of that module's ALL_CASES has its twin in TWINS (case id -> program; a test keeps the two catalogues
complete), and so do the SQL of its other tests: the closure of a re-registered table and the properties on random
graphs (transitive closure, path enumeration in a DAG, reachability from a node). The tables are that module's
TABLES, registered on recsql and on DuckDB by tests/duckdb_reference.py, which also normalizes the answers.

How a twin says what the SQL says:
- `?` parameters are constants of the program;
- a Datalog relation has no order: ORDER BY ... LIMIT k keeps the rows that fewer than k rows come before (a body
  count, ties broken as the ORDER BY breaks them), and the answers are compared as multisets either way;
- a relation is a set: where a UNION ALL answer repeats rows (several paths between two nodes), the twin derives
  each distinct row with its multiplicity (path counting with mcount/msum, or a count over the set), and DuckDB's
  rows are compared counted (COUNTED); a UNION ALL answer without repeated rows is compared as it is.
"""

from __future__ import annotations

from collections import Counter

import duckdb_reference
import pytest
from duckdb_reference import multiset_diff, normalize, register_both
from helpers import digraphs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import EVERY_STRATEGY, under
from test_recursion_vs_duckdb import ALL_CASES, TABLES, edges, tc_sql

pytestmark = pytest.mark.spark

duck, rc_tables = duckdb_reference.reference_fixtures(TABLES, "rc_tables")


# ---------------------------------------------------------------------------------------------------------------
# The twins
# ---------------------------------------------------------------------------------------------------------------


def closure(table: str, relation: str = "tc") -> str:
    """The rules of `relation`, the transitive closure of the edges of `table` (tc_sql's recursive CTE)."""
    return f"{relation}(X, Y) :- {table}(X, Y).\n{relation}(X, Y) :- {relation}(X, Z), {table}(Z, Y).\n"


def path_counts(table: str, relation: str = "paths") -> str:
    """The rules of `relation`(X, Y, N): N paths lead from X to Y along the edges of `table`, a DAG; N is the
    multiplicity of (X, Y) in the closure with UNION ALL."""
    return (
        f"{relation}(X, Y, mcount<_>) :- {table}(X, Y).\n"
        f"{relation}(X, Y, msum<N>) :- {relation}(X, Z, N), {table}(Z, Y).\n"
    )


TREE_DEPTH = """d(1, 0).
d(C, D) :- d(P, D0), rc_tree(P, C), D = D0 + 1.
"""

TWINS = {
    # CLOSURE
    "tc_union_dag": ".decl tc(src: number, dst: number)\n" + closure("rc_dag") + ".output tc",
    "tc_union_cyclic": closure("rc_cyc") + ".output tc",
    "tc_union_cyclic_right_linear_comma_join": """
tc(X, Y) :- rc_cyc(X, Y).
tc(X, Y) :- rc_cyc(X, Z), tc(Z, Y).
.output tc""",
    "tc_union_all_dag_duplicates": path_counts("rc_dag") + ".output paths",
    "tc_union_all_tree": closure("rc_tree", "anc") + ".output anc",  # one path from a node to each descendant
    "tc_cyclic_select_star_filtered_on_source": closure("rc_cyc")
    + """.decl from_three(src: number, dst: number)
from_three(X, Y) :- tc(X, Y), X = 3.
.output from_three""",
    "tc_cyclic_filtered_on_destination": closure("rc_cyc")
    + """to_four(X, 4) :- tc(X, 4).
.output to_four""",
    "tc_filter_in_both_branches": """
tc(X, Y) :- rc_cyc(X, Y), X < 8.
tc(X, Y) :- tc(X, Z), rc_cyc(Z, Y), X != Y.
.output tc""",
    "header_names_override_aliases": ".decl r(a: number, b: number)\n" + closure("rc_dag", "r") + ".output r",
    # REACHABILITY
    "reach_from_constant_cyclic": """
reach(1).
reach(Y) :- reach(X), rc_cyc(X, Y).
.output reach""",
    "reach_from_edges_cyclic": """
reach(Y) :- rc_cyc(4, Y).
reach(Y) :- reach(X), rc_cyc(X, Y).
.output reach""",
    "reach_union_all_dag_counts_paths": """
// reach(Y, N): N paths lead from 1 to Y (the empty one to 1 itself)
reach(1, 1).
reach(Y, msum<N>) :- reach(X, N), rc_dag(X, Y).
.output reach""",
    "reach_backwards_cyclic": """
back(6).
back(X) :- back(Y), rc_cyc(X, Y).
.output back""",
    "ancestors": """
anc(P) :- rc_tree(P, 13).
anc(P) :- anc(C), rc_tree(P, C).
.output anc""",
    "descendants": """
des(C) :- rc_tree(2, C).
des(C) :- des(P), rc_tree(P, C).
.output des""",
    "reach_from_isolated_node": """
des(99).
des(Y) :- des(X), rc_cyc(X, Y).
.output des""",
    "empty_base": """
des(C) :- rc_tree(99, C).
des(C) :- des(P), rc_tree(P, C).
.output des""",
    # DEPTH_AND_COUNTERS
    "tree_depth": ".decl d(node: number, depth: number)\n" + TREE_DEPTH + ".output d",
    "tree_depth_histogram": """
d(C, 1) :- rc_tree(1, C).
d(C, D) :- d(P, D0), rc_tree(P, C), D = D0 + 1.
// a tree has one path to each node: the UNION ALL has no repeated row to count
histogram(D, count<N>) :- d(N, D).
.output histogram""",
    "tree_depth_order_limit": TREE_DEPTH
    + """// ORDER BY depth DESC, node LIMIT 4: fewer than four rows are deeper, or as deep with a smaller node
first(N, D) :- d(N, D), Deeper = count : { d(N1, D1), D1 > D }, Level = count : { d(N2, D), N2 < N },
    Deeper + Level < 4.
.output first""",
    "counter_50": """
r(1).
r(M) :- r(N), N < 50, M = N + 1.
.output r""",
    "powers_of_two_ordered": """
r(1).
r(M) :- r(N), N < 1000, M = N * 2.
.output r""",
    "fibonacci": """
fib(1, 0, 1).
fib(J, B, C) :- fib(I, A, B), I < 30, J = I + 1, C = A + B.
out(I, A) :- fib(I, A, _).
.output out""",
    "base_is_union_of_two_selects": """
r(1, "x").
r(5, "y").
r(M, Tag) :- r(N, Tag), N < 8, M = N + 1.
.output r""",
    "bounded_path_lengths_cyclic": """
p(X, Y, 1) :- rc_cyc(X, Y).
p(X, Y, L) :- p(X, Z, L0), rc_cyc(Z, Y), L0 < 5, L = L0 + 1.
.output p""",
    "hop_distance_via_group_by": """
p(X, Y, 1) :- rc_cyc(X, Y).
p(X, Y, L) :- p(X, Z, L0), rc_cyc(Z, Y), L0 < 6, L = L0 + 1.
hops(X, Y, min<L>) :- p(X, Y, L).
.output hops""",
    # MULTI_TABLE
    "base_with_several_rows": """
tc(X, Y, mcount<_>) :- rc_dag(X, Y), X = 1.
tc(X, Y, mcount<_>) :- rc_dag(X, Y), X = 8.
tc(X, Y, msum<N>) :- tc(X, Z, N), rc_dag(Z, Y).
.output tc""",
    "recursion_joins_attribute_table": """
p(X, Y) :- rc_cyc(X, Y), rc_node(Y, _, 1).
p(X, Y) :- p(X, Z), rc_cyc(Z, Y), rc_node(Y, _, 1).
.output p""",
    "recursion_comma_join_three_tables": """
p(X, Y) :- rc_cyc(X, Y), rc_node(X, _, 1), rc_node(Y, _, 1).
p(X, Y) :- p(X, Z), rc_cyc(Z, Y), rc_node(Y, _, 1).
.output p""",
    "same_generation": """
sg(X, Y) :- rc_tree(P, X), rc_tree(P, Y).
sg(X, Y) :- sg(PX, PY), rc_tree(PX, X), rc_tree(PY, Y).
.output sg""",
    "weighted_paths_then_group_by": """
paths(X, Y, mcount<_>) :- rc_wdag(X, Y, _).
paths(X, Y, msum<N>) :- paths(X, Z, N), rc_wdag(Z, Y, _).
cost(X, Y, W) :- rc_wdag(X, Y, W).
cost(X, Y, C) :- cost(X, Z, C0), rc_wdag(Z, Y, W), C = C0 + W.
span(X, Y, min<C>, max<C>) :- cost(X, Y, C).
summary(X, Y, Best, Worst, N) :- span(X, Y, Best, Worst), paths(X, Y, N).
.output summary""",
    "path_strings": """
p(1, "1").
p(Y, Path) :- p(X, P), rc_dag(X, Y), Path = cat(P, ">", to_string(Y)).
.output p""",  # each path its own string: no repeated row
    # FINAL_QUERY
    "group_by_after_union": closure("rc_cyc")
    + """.decl out(src: number, n: number)
out(X, count<Y>) :- tc(X, Y).
.output out""",
    "path_counts_after_union_all": path_counts("rc_dag") + ".output paths",
    "distinct_after_union_all": closure("rc_dag") + ".output tc",
    "join_in_final_query": closure("rc_cyc")
    + """labels(A, B) :- tc(X, Y), rc_node(X, A, _), rc_node(Y, B, 1).
.output labels""",
    "self_join_of_cte_in_final_query": closure("rc_dag")
    + """// the join has a row for each node Z in between
through(X, Y, count<Z>) :- tc(X, Z), tc(Z, Y).
.output through""",
    "not_in_over_cte": closure("rc_cyc")
    + """unreached(I) :- rc_node(I, _, _), !tc(1, I).
.output unreached""",
    "exists_over_cte_nodes_on_cycles": closure("rc_cyc")
    + """on_cycle(I) :- rc_node(I, _, _), tc(I, I).
.output on_cycle""",
    "order_limit_after_recursion": closure("rc_dag")
    + """// ORDER BY src DESC, dst LIMIT 6: fewer than six rows have a larger source, or this one and a smaller target
first(X, Y) :- tc(X, Y), Above = count : { tc(X1, Y1), X1 > X }, Beside = count : { tc(X, Y2), Y2 < Y },
    Above + Beside < 6.
.output first""",
    "two_independent_recursive_ctes": closure("rc_dag", "a")
    + closure("rc_cyc", "b")
    + """both("a", X, Y) :- a(X, Y).
both("b", X, Y) :- b(X, Y).
.output both""",
    "two_recursive_ctes_joined": closure("rc_dag", "a")
    + TREE_DEPTH
    + """joined(X, Depth, count<Y>) :- a(X, Y), d(Y, Depth).
.output joined""",
    "non_recursive_cte_feeding_recursive_cte": """
good(X, Y) :- rc_cyc(X, Y), rc_node(X, _, 1).
"""
    + closure("good")
    + ".output tc",
    "cte_in_from_subquery": closure("rc_dag")
    + """s(X, count<Y>) :- tc(X, Y).
big(X, N) :- s(X, N), N >= 3.
.output big""",
    # PARAMS
    "param_bounds_recursion": """
d(1, 0).
d(C, D) :- d(P, D0), rc_tree(P, C), D0 < 2, D = D0 + 1.
.output d""",
    "param_filters_final_query": closure("rc_cyc")
    + """from_five(5, Y) :- tc(5, Y).
.output from_five""",
    "param_in_base_and_final": """
reach(Y) :- rc_cyc(9, Y).
reach(Y) :- reach(X), rc_cyc(X, Y).
not_three(N) :- reach(N), N != 3.
.output not_three""",
    "param_string_in_both_branches": """
p(X, Y) :- rc_cyc(X, Y), rc_node(Y, L, _), L != "d".
p(X, Y) :- p(X, Z), rc_cyc(Z, Y), rc_node(Y, L, _), L != "d".
.output p""",
}

# The cases whose UNION ALL answer repeats rows: their twins derive each row once, with its multiplicity last.
COUNTED = frozenset(
    {
        "tc_union_all_dag_duplicates",
        "reach_union_all_dag_counts_paths",
        "base_with_several_rows",
        "self_join_of_cte_in_final_query",
    }
)


# ---------------------------------------------------------------------------------------------------------------
# The comparison
# ---------------------------------------------------------------------------------------------------------------


def counted(rows: list[tuple]) -> list[tuple]:
    """A multiset of rows as a set: each distinct row once, its number of occurrences appended."""
    return [(*row, n) for row, n in Counter(rows).items()]


def check_twin(cur, duck, program, sql, params=None, with_counts=False, allow_empty=False, names=False):
    """Run the Datalog `program` on recsql and `sql` on DuckDB; assert equal answers as multisets (with
    `with_counts`, DuckDB's rows counted), and with `names` equal column names."""
    cur.execute_datalog(program)
    got = normalize(cur.fetchall())
    columns = [column[0].lower() for column in cur.description]

    reference = duck.execute(sql, list(params)) if params else duck.execute(sql)
    expected = normalize(reference.fetchall())
    expected_columns = [column[0].lower() for column in reference.description]
    if not allow_empty:
        assert expected, f"reference answer is empty; the test is vacuous: {sql}"
    if with_counts:
        expected, expected_columns = counted(expected), [*expected_columns, "count"]

    assert len(columns) == len(expected_columns), (columns, expected_columns)
    assert all(len(row) == len(columns) for row in got), got[:3]
    if names:
        assert columns == expected_columns
    assert Counter(got) == Counter(expected), f"{program}\n{sql}\n{multiset_diff(got, expected)}"


# ---------------------------------------------------------------------------------------------------------------
# The catalogue's twins
# ---------------------------------------------------------------------------------------------------------------


def test_every_case_has_its_twin():
    ids = {case.id for case in ALL_CASES}
    assert len(ids) == len(ALL_CASES)
    assert set(TWINS) == ids
    assert COUNTED.issubset(ids)


@under(*EVERY_STRATEGY)
@pytest.mark.parametrize("case, case_id", [pytest.param(*case.values, case.id, id=case.id) for case in ALL_CASES])
def test_twin_matches_duckdb(case, case_id, rc_tables, cur, duck, strategy):
    check_twin(
        cur,
        duck,
        TWINS[case_id],
        case["duck_sql"] or case["sql"],
        case["params"],
        with_counts=case_id in COUNTED,
        allow_empty=case["allow_empty"],
        names=case["names"],
    )
    assert strategy or strategy.others, "no recursive stratum ran"  # decomposed: those without a pivot distributed


@under(*EVERY_STRATEGY)
def test_reregistered_edges_change_the_closure(rc_tables, cur, duck, strategy):
    """The program reads the table registered now, not a cached copy of an earlier registration."""
    for pairs in ([(1, 2), (2, 3)], [(1, 2), (2, 3), (3, 1), (4, 1)]):
        register_both(rc_tables, duck, "rc_swap", edges(pairs))
        check_twin(cur, duck, closure("rc_swap") + ".output tc", tc_sql("rc_swap"))


# ---------------------------------------------------------------------------------------------------------------
# The properties on random graphs
# ---------------------------------------------------------------------------------------------------------------

PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def check_on_graph(conn, duck, pairs, program, sql, params=None, with_counts=False):
    register_both(conn, duck, "rc_hyp_edge", edges(pairs))
    cur = conn.cursor()
    try:
        check_twin(cur, duck, program, sql, params, with_counts=with_counts, allow_empty=True)
    finally:
        cur.close()


@under(*EVERY_STRATEGY)
@settings(PROPERTY, max_examples=15)
@given(graph=digraphs())
def test_random_transitive_closure_union(rc_tables, duck, strategy, graph):
    _n, pairs = graph
    check_on_graph(rc_tables, duck, pairs, closure("rc_hyp_edge") + ".output tc", tc_sql("rc_hyp_edge"))


# The UNION ALL counts each copy of an edge given twice, a Datalog relation holds it once: the graphs of this
# property repeat no edge.
PATHS_WITH_LENGTHS = """
// p(X, Y, L, N): N paths of L edges lead from X to Y
p(X, Y, 1, mcount<_>) :- rc_hyp_edge(X, Y).
p(X, Y, L, msum<N>) :- p(X, Z, L0, N), rc_hyp_edge(Z, Y), L = L0 + 1.
.output p"""


@under(*EVERY_STRATEGY)
@settings(PROPERTY, max_examples=15)
@given(graph=digraphs(dag=True, unique=True))
def test_random_dag_path_enumeration_union_all(rc_tables, duck, strategy, graph):
    _n, pairs = graph
    check_on_graph(
        rc_tables,
        duck,
        pairs,
        PATHS_WITH_LENGTHS,
        "WITH RECURSIVE p(src, dst, len) AS (SELECT src, dst, 1 FROM rc_hyp_edge UNION ALL "
        "SELECT p.src, e.dst, p.len + 1 FROM p JOIN rc_hyp_edge e ON p.dst = e.src) "
        "SELECT src, dst, len FROM p",
        with_counts=True,
    )


@under(*EVERY_STRATEGY)
@settings(PROPERTY, max_examples=6)
@given(graph=digraphs(), data=st.data())
def test_random_reachability_from_parameter(rc_tables, duck, strategy, graph, data):
    n, pairs = graph
    start = data.draw(st.integers(0, n - 1), label="start")
    check_on_graph(
        rc_tables,
        duck,
        pairs,
        f"reach(Y) :- rc_hyp_edge({start}, Y).\nreach(Y) :- reach(X), rc_hyp_edge(X, Y).\n.output reach",
        "WITH RECURSIVE reach(node) AS (SELECT dst FROM rc_hyp_edge WHERE src = ? UNION "
        "SELECT e.dst FROM reach JOIN rc_hyp_edge e ON e.src = reach.node) SELECT node FROM reach",
        params=(start,),
    )
