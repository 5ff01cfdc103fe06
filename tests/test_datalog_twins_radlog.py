"""RaDlog's RaSQL suite as Datalog: a twin program for every case of tests/test_peer_radlog.py, under every strategy.

RaDlog's ancestors, DeALS and BigDatalog, wrote these very queries as Datalog rules with monotonic aggregates in
their heads (`mmin`, `mmax`, `mcount`, `msum`); each twin here says what the case's SQL says that way, reading the
same peer tables, loaded as that module loads them (its `Case`/`Table` catalogue and loaders, registered under the
`radlog_` prefix) and bound to the program's relations by `.input rel(IO=table, name=radlog_rel)`. Every twin is
checked against that module's reference: the peer's expected file, compared as a set of rows with numbers within
1e-6 (tests/reference.py); for company control, tests/reference.py's plain-Python fixpoint, and the peer file on
the input reconstructed for it (see the comment at the end of tests/test_peer_radlog.py).
"""

from __future__ import annotations

import pandas as pd
import pytest
from reference import assert_same_rows, company_control, company_control_transitive_shares
from strategies import EVERY_STRATEGY, under
from test_peer_radlog import (
    CASES,
    OWNEDSHARES,
    PREFIX,
    RECONSTRUCTED_SHARES,
    Case,
    Table,
    expected_rows,
    load_table,
    shipped_shares,
)

pytestmark = pytest.mark.spark

TC = """
tc(A, B) :- arc(A, B).
tc(A, B) :- tc(A, C), arc(C, B).
.output tc
"""

SAME_GENERATION = """
sg(X, Y) :- rel(P, X), rel(P, Y), X != Y.
sg(X, Y) :- rel(A, X), sg(A, B), rel(B, Y).
.output sg
"""

ALL_PAIRS_SHORTEST = """
sp(Src, Dst, mmin<Cost>) :- warc(Src, Dst, Cost).
sp(Src, Dst, mmin<Cost>) :- sp(Src, Mid, C1), warc(Mid, Dst, C2), Cost = C1 + C2.
.output sp
"""

SINGLE_SOURCE_SHORTEST = """
sp(1, 0).
sp(Dst, mmin<Cost>) :- sp(Node, C1), warc(Node, Dst, C2), Cost = C1 + C2.
.output sp
"""

# Label propagation along the arcs' direction, as the SQL follows them: each node keeps the least label reaching it.
COMPONENTS = """
cc(X, mmin<X>) :- arc(X, _).
cc(Y, mmin<Comp>) :- cc(X, Comp), arc(X, Y).
"""
COMPONENT_LABELS = COMPONENTS + ".output cc\n"
# count(DISTINCT comp): the labels as a relation of their own (a set), counted.
COMPONENT_COUNT = (
    COMPONENTS
    + """
label(Comp) :- cc(_, Comp).
components(count<Comp>) :- label(Comp).
.output components
"""
)

REACH = """
reach(1).
reach(Y) :- reach(X), rc(X, Y).
.output reach
"""

# RaSQL's count(): the start node's one path, then every path to a node contributes its count to each successor.
COUNT_PATHS = """
paths(1, 1).
paths(Y, msum<Cnt>) :- paths(X, Cnt), rc(X, Y).
.output paths
"""

COUNT_PATHS_ALL = """
paths(X, Y, mcount<_>) :- rc(X, Y).
paths(X, Y, msum<Cnt>) :- paths(X, Z, Cnt), rc(Z, Y).
.output paths
"""

# lstart: the starts no earlier interval reaches (the view's GROUP BY a.s HAVING a.s = min(b.s)); coal: from each,
# the largest end of the intervals starting inside what is coalesced so far.
COALESCE = """
earliest_reaching(T, min<S>) :- inter(T, _), inter(S, E), T <= E.
lstart(T) :- earliest_reaching(T, T).
coal(S, mmax<E>) :- lstart(S), inter(S, E).
coal(S, mmax<E>) :- coal(S, E1), inter(S2, E), S <= S2, S2 <= E1.
.output coal
"""

DELIVERY = """
actualdays(Part, mmax<Days>) :- basic(Part, Days).
actualdays(Part, mmax<Days>) :- assbl(Part, Sub), actualdays(Sub, Days).
.output actualdays
"""

MANAGEMENT = """
dept(Emp, mcount<_>) :- report(_, Emp).
dept(Mgr, msum<Cnt>) :- dept(Emp, Cnt), report(Mgr, Emp).
.output dept
"""

MLM = """
bonus(M, msum<B>) :- sales(M, P), B = P * 0.1.
bonus(M1, msum<B>) :- bonus(M2, B2), sponsor(M1, M2), B = B2 * 0.5.
.output bonus
"""


def attend(k: int) -> str:
    """Attendance with at least `k` attending friends (friend(x, y): x is a friend of y); the count's contributor
    is the attending friend X, as in the SQL."""
    return f"""
attend(X) :- organizer(X).
attend(Y) :- cntcoming(Y, N), N >= {k}.
cntcoming(Y, mcount<_>) :- attend(X), friend(X, Y).
.output attend
"""


PROGRAMS: dict[str, str] = {  # case id of tests/test_peer_radlog.py -> its Datalog twin
    "tc": TC,
    "sg1": SAME_GENERATION,
    "sg2": SAME_GENERATION,
    "apsp": ALL_PAIRS_SHORTEST,
    "sssp": SINGLE_SOURCE_SHORTEST,
    "cc_all": COMPONENT_LABELS,
    "cc_count": COMPONENT_COUNT,
    "reach": REACH,
    "count_paths_rc1": COUNT_PATHS,
    "count_paths_rc2": COUNT_PATHS,
    "count_paths_all": COUNT_PATHS_ALL,
    "coalesce": COALESCE,
    "delivery": DELIVERY,
    "management": MANAGEMENT,
    "mlm": MLM,
    **{f"attend_o1_f1_k{k}": attend(k) for k in (1, 2, 3)},
    **{f"attend_o2_f2_k{k}": attend(k) for k in (1, 2, 3, 4)},
}

# Company control (tests/test_peer_radlog.py's CONTROL_SHARES and RASQL_CONTROL): cshares and bought are mutually
# recursive; a controlled company Y adds its direct holdings (control proper) or its accumulated cshares (the RaSQL
# paper's formulation) to its controller's.
CONTROL = """
cshares(X, Z, msum<P>) :- ownedshares(X, Z, P).
cshares(X, Z, msum<P>) :- bought(X, Y), ownedshares(Y, Z, P).
bought(X, Y) :- cshares(X, Y, P), P > 0.5, X != Y.
"""
CONTROL_SHARES = (
    CONTROL
    + """
control(X, Z, P) :- cshares(X, Z, P), bought(X, Z).
.output control
"""
)
RASQL_CONTROL = """
cshares(X, Z, msum<P>) :- ownedshares(X, Z, P).
cshares(X, Z, msum<P>) :- bought(X, Y), cshares(Y, Z, P).
bought(X, Y) :- cshares(X, Y, P), P > 0.5, X != Y.
.output cshares
"""


def with_inputs(tables: tuple[Table, ...], program: str) -> str:
    """`program` reading each table's relation from the frame `load_table` registered for it."""
    inputs = "".join(f".input {table.name}(IO=table, name={PREFIX}{table.name})\n" for table in tables)
    return inputs + program


def run_twin(conn, cur, tables: tuple[Table, ...], program: str) -> tuple[str, list[tuple]]:
    """Load `tables` as the peer suite does and run `program` over them: the program's text and its answer."""
    for table in tables:
        load_table(conn, table)
    text = with_inputs(tables, program)
    cur.execute_datalog(text)
    return text, cur.fetchall()


def test_every_peer_case_has_a_twin():
    assert sorted(PROGRAMS) == sorted(case.id for case in CASES)


@under(*EVERY_STRATEGY)
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_twin_of_peer_case(conn, cur, case: Case):
    expected = expected_rows(case.expected)
    program, rows = run_twin(conn, cur, case.tables, PROGRAMS[case.id])
    assert cur.description is not None and len(cur.description) == len(expected[0])
    assert_same_rows(rows, expected, context=f"case {case.id}: {program}")


@under(*EVERY_STRATEGY)
def test_company_control_twin_vs_reference(conn, cur):
    _, shares = company_control(shipped_shares())
    assert shares, "the reference finds no control at all: the input changed?"
    program, rows = run_twin(conn, cur, (OWNEDSHARES,), CONTROL_SHARES)
    assert_same_rows(rows, [(x, z, p) for (x, z), p in shares.items()], context=program)


@under(*EVERY_STRATEGY)
def test_company_control_rasql_formulation_twin(conn, cur):
    _, cshares = company_control_transitive_shares(shipped_shares())
    program, rows = run_twin(conn, cur, (OWNEDSHARES,), RASQL_CONTROL)
    assert_same_rows(rows, [(x, z, p) for (x, z), p in cshares.items()], context=program)


@under(*EVERY_STRATEGY)
def test_company_control_twin_gives_the_peer_answer_on_reconstructed_input(conn, cur):
    expected = expected_rows("mr_company_control_company_control.csv")
    shares = pd.DataFrame(RECONSTRUCTED_SHARES, columns=list(OWNEDSHARES.columns))
    conn.register(PREFIX + OWNEDSHARES.name, shares.astype({"x": "int64", "y": "int64", "p": "float64"}))
    program = with_inputs((OWNEDSHARES,), CONTROL_SHARES)
    cur.execute_datalog(program)
    assert_same_rows(cur.fetchall(), expected, context=program)
