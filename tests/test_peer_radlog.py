"""RaDlog's RaSQL suite (../shared/peer/radlog): the peer system's inputs and answers, run through recsql.

Every case of the table in the peer README: load the case's CSV files as pandas DataFrames with the README's
column names and types, register them, run the README's query and compare with the expected file as a set of
rows (numbers within 1e-6). The peer files are the reference for these cases, except company control (see the
comment at the end of this module): there the README marks the expected file as a second opinion, and it does
not fit the shipped input, so recsql is compared with a plain-Python fixpoint (tests/reference.py) instead.

Table names get a `radlog_` prefix so that this module's tables do not collide with other modules' tables in the
shared session; the README's queries are used verbatim otherwise (the prefix is applied by a whole-word rename).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest
from reference import (
    assert_same_rows,
    company_control,
    company_control_transitive_shares,
    read_rows,
)
from strategies import module_under

pytestmark = module_under("distributed", "local")

PEER_DIR = Path(os.environ.get("RECSQL_PEER_DIR", Path(__file__).resolve().parents[2] / "shared" / "peer" / "radlog"))
PREFIX = "radlog_"


def peer_dir() -> Path:
    """The peer directory. Missing, it fails the test where the data must be (CI sets RECSQL_REQUIRE_PEER_DATA),
    and skips it, saying why, in a clone that has no shared/ folder beside it."""
    if not (PEER_DIR / "data").is_dir() or not (PEER_DIR / "expected").is_dir():
        message = (
            f"RaDlog peer test data not found at {PEER_DIR} (expected data/ and expected/ under it). "
            "Clone the repository beside the shared/ folder, or point RECSQL_PEER_DIR at shared/peer/radlog."
        )
        if os.environ.get("RECSQL_REQUIRE_PEER_DATA"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return PEER_DIR


@dataclass(frozen=True)
class Table:
    file: str
    name: str
    columns: tuple[str, ...]
    doubles: tuple[str, ...] = ()


@dataclass(frozen=True)
class Case:
    id: str
    tables: tuple[Table, ...]
    query: str
    expected: str
    setup: tuple[str, ...] = ()  # statements run before the query (CREATE VIEW ...)
    extra_names: tuple[str, ...] = field(default=())  # names created by `setup`, prefixed too


def prefixed(sql: str, names) -> str:
    """Rename whole-word table/view names `t` to `radlog_t` (also in qualified references like `t.col`)."""
    for name in sorted(set(names), key=len, reverse=True):
        sql = re.sub(rf"(?<![\w.]){re.escape(name)}\b", PREFIX + name, sql)
    return sql


def load_table(conn, table: Table) -> None:
    path = peer_dir() / "data" / table.file
    dtypes = {c: ("float64" if c in table.doubles else "int64") for c in table.columns}
    frame = pd.read_csv(path, header=None, names=list(table.columns), skipinitialspace=True, dtype=dtypes)
    conn.register(PREFIX + table.name, frame)


def expected_rows(name: str):
    path = peer_dir() / "expected" / name
    if not path.is_file():
        pytest.fail(f"expected file {path} is missing from the peer data", pytrace=False)
    return read_rows(path)


def run_case(conn, cur, case: Case):
    for table in case.tables:
        load_table(conn, table)
    names = [t.name for t in case.tables] + list(case.extra_names)
    for statement in case.setup:
        cur.execute(prefixed(statement, names))
    sql = prefixed(case.query, names)
    cur.execute(sql)
    return sql, cur.fetchall()


# --- the README's table --------------------------------------------------------------------------------------

ARC_AB = Table("arc.csv", "arc", ("a", "b"))
WARC = Table("s1.csv", "warc", ("src", "dst", "cost"))
CC_ARC = Table("cc.csv", "arc", ("x", "y"))
RC1 = Table("rc1.csv", "rc", ("a", "b"))
RC2 = Table("rc2.csv", "rc", ("a", "b"))

SG_QUERY = (
    "WITH RECURSIVE sg(x, y) AS (SELECT a.child, b.child FROM rel a, rel b WHERE a.parent = b.parent AND "
    "a.child <> b.child) UNION (SELECT a.child, b.child FROM rel a, sg, rel b WHERE a.parent = sg.x AND "
    "b.parent = sg.y) SELECT x, y FROM sg"
)
CC_CTE = (
    "WITH RECURSIVE cc(x, min() AS comp) AS (SELECT x, x FROM arc) UNION "
    "(SELECT arc.y, cc.comp FROM cc, arc WHERE cc.x = arc.x) "
)
COUNT_PATHS = (
    "WITH RECURSIVE paths(node, count() AS cnt) AS (SELECT 1, 1) UNION (SELECT rc.b, paths.cnt FROM paths, rc "
    "WHERE paths.node = rc.a) SELECT node, cnt FROM paths"
)

CASES = [
    Case(
        "tc",
        (ARC_AB,),
        "WITH RECURSIVE tc(a, b) AS (SELECT a, b FROM arc) UNION (SELECT tc.a, arc.b FROM tc, arc WHERE tc.b = arc.a) "
        "SELECT a, b FROM tc",
        "tc_ll_arc_true.csv",
    ),
    Case("sg1", (Table("sg1.csv", "rel", ("parent", "child")),), SG_QUERY, "sg_sg1_true.csv"),
    Case("sg2", (Table("sg2.csv", "rel", ("parent", "child")),), SG_QUERY, "sg_sg2_true.csv"),
    Case(
        "apsp",
        (WARC,),
        "WITH RECURSIVE sp(src, dst, min() AS cost) AS (SELECT src, dst, cost FROM warc) UNION "
        "(SELECT sp.src, warc.dst, sp.cost + warc.cost FROM sp, warc WHERE sp.dst = warc.src) "
        "SELECT src, dst, cost FROM sp",
        "apsp_s1_true.csv",
    ),
    Case(
        "sssp",
        (WARC,),
        "WITH RECURSIVE sp(node, min() AS cost) AS (SELECT 1, 0) UNION (SELECT warc.dst, sp.cost + warc.cost "
        "FROM sp, warc WHERE sp.node = warc.src) SELECT node, cost FROM sp",
        "sssp_s1_1.csv",
    ),
    Case("cc_all", (CC_ARC,), CC_CTE + "SELECT x, comp FROM cc", "cc_all_cc.csv"),
    Case("cc_count", (CC_ARC,), CC_CTE + "SELECT count(DISTINCT comp) FROM cc", "cc_d_cc.csv"),
    Case(
        "reach",
        (RC1,),
        "WITH RECURSIVE reach(node) AS (SELECT 1) UNION (SELECT rc.b FROM reach, rc WHERE reach.node = rc.a) "
        "SELECT node FROM reach",
        "reach_rc1_1.csv",
    ),
    Case("count_paths_rc1", (RC1,), COUNT_PATHS, "count_paths_rc1_1.csv"),
    Case("count_paths_rc2", (RC2,), COUNT_PATHS, "count_paths_rc2_1.csv"),
    Case(
        "count_paths_all",
        (RC2,),
        "WITH RECURSIVE paths(x, y, count() AS cnt) AS (SELECT a, b, 1 FROM rc) UNION (SELECT paths.x, rc.b, "
        "paths.cnt FROM paths, rc WHERE paths.y = rc.a) SELECT x, y, cnt FROM paths",
        "count_paths_all_rc2.csv",
    ),
    Case(
        "coalesce",
        (Table("coalesce.csv", "inter", ("s", "e")),),
        "WITH RECURSIVE coal(s, max() AS e) AS (SELECT lstart.t, inter.e FROM lstart, inter WHERE "
        "lstart.t = inter.s) UNION (SELECT coal.s, inter.e FROM coal, inter WHERE coal.s <= inter.s AND "
        "inter.s <= coal.e) SELECT s, e FROM coal",
        "coalesce_coalesce.csv",
        setup=(
            "CREATE VIEW lstart(t) AS SELECT a.s FROM inter a, inter b WHERE a.s <= b.e GROUP BY a.s "
            "HAVING a.s = min(b.s)",
        ),
        extra_names=("lstart",),
    ),
    Case(
        "delivery",
        (Table("assbl.csv", "assbl", ("part", "sub")), Table("basic.csv", "basic", ("part", "days"))),
        "WITH RECURSIVE actualdays(part, max() AS days) AS (SELECT part, days FROM basic) UNION "
        "(SELECT assbl.part, actualdays.days FROM assbl, actualdays WHERE assbl.sub = actualdays.part) "
        "SELECT part, days FROM actualdays",
        "delivery_assbl_basic.csv",
    ),
    Case(
        "management",
        (Table("mgr.csv", "report", ("mgr", "emp")),),
        "WITH RECURSIVE dept(mgr, count() AS cnt) AS (SELECT emp, 1 FROM report) UNION (SELECT report.mgr, "
        "dept.cnt FROM dept, report WHERE dept.mgr = report.emp) SELECT mgr, cnt FROM dept",
        "management_mgr.csv",
    ),
    Case(
        "mlm",
        (Table("sales.csv", "sales", ("m", "p"), doubles=("p",)), Table("sponsor.csv", "sponsor", ("m1", "m2"))),
        "WITH RECURSIVE bonus(m, sum() AS b) AS (SELECT m, p * 0.1 FROM sales) UNION (SELECT sponsor.m1, "
        "bonus.b * 0.5 FROM bonus, sponsor WHERE bonus.m = sponsor.m2) SELECT m, b FROM bonus",
        "mlm_sales_sponsor.csv",
    ),
]

ATTEND_QUERY = (
    "WITH RECURSIVE attend(x) AS (SELECT x FROM organizer) UNION (SELECT y FROM cntcoming WHERE n >= {k}), "
    "cntcoming(y, count() AS n) AS (SELECT friend.y, 1 FROM attend, friend WHERE attend.x = friend.x) "
    "SELECT x FROM attend"
)
ATTEND_EXPECTED = [f"mr_attend_organizer1_friend1_{k}.csv" for k in (1, 2, 3)] + [
    f"mr_attend_organizer2_friend2_{k}.csv" for k in (1, 2, 3, 4)
]


def attend_case(expected: str) -> Case:
    match = re.fullmatch(r"mr_attend_organizer(\d+)_friend(\d+)_(\d+)\.csv", expected)
    assert match, expected
    organizer, friend, k = match.groups()  # k: the number in the expected file name's last part
    return Case(
        f"attend_o{organizer}_f{friend}_k{k}",
        (
            Table(f"attend_organizer{organizer}.csv", "organizer", ("x",)),
            Table(f"attend_friend{friend}.csv", "friend", ("x", "y")),
        ),
        ATTEND_QUERY.format(k=int(k)),
        expected,
    )


CASES += [attend_case(name) for name in ATTEND_EXPECTED]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_peer_case(conn, cur, case):
    expected = expected_rows(case.expected)
    try:
        sql, rows = run_case(conn, cur, case)
    finally:  # the views a case creates persist in the warehouse: its run under another strategy makes them again
        dropping = conn.cursor()
        for name in case.extra_names:
            dropping.execute(f"DROP VIEW IF EXISTS {PREFIX}{name}")
        dropping.close()
    assert cur.description is not None and len(cur.description) == len(expected[0])
    assert_same_rows(rows, expected, context=f"case {case.id}: {sql}")


# --- company control -----------------------------------------------------------------------------------------
#
# The README gives no SQL for this case and marks its expected file as a second opinion, not ground truth
# (RaDlog skipped the case in its own suite). Worked out by hand from data/company_control.csv:
#
#   the input is a chain 1001 -> 1002 -> ... -> 1008 in which every company holds a majority of the next one
#   (0.51, 0.62, 0.51, 0.60, 0.60, 0.80, 0.60), and nobody holds anything else. So 1001 controls 1002 directly,
#   hence 1002's 0.62 of 1003 counts for 1001, so 1001 controls 1003, and so on: every company controls every
#   later company, 28 pairs, and the share of z held by x together with the companies x controls is exactly
#   the direct holding of z's predecessor: cshares(x, z) = p(z - 1, z).
#
# The peer file mr_company_control_company_control.csv has 6 rows instead:
#     1001,1002,0.51  1001,1003,1.13  1001,1004,0.6  1001,1005,1.4  1002,1003,0.51  1004,1005,0.8
#   - 22 of the 28 controlled pairs are missing, among them plain direct majorities such as (1003, 1004, 0.51),
#     (1005, 1006, 0.60), (1006, 1007, 0.80), (1007, 1008, 0.60);
#   - (1002, 1003) is given 0.51 although 1002 holds 0.62 of 1003 and nobody else holds any of it; (1004, 1005)
#     is given 0.8 although the only holding of 1005 is 1004's 0.60; (1001, 1004) is 0.6 although the only
#     holding of 1004 is 1003's 0.51;
#   - 1.13 and 1.4 exceed 1, more than 100% of a company, which no reading of this input can produce (the
#     RaSQL paper's formulation below double counts along chains, but on this input it gives 1.02 for (1001,
#     1004), not 1.13 for (1001, 1003)).
#   The 6 rows are exactly what company control (either formulation) computes for a different, 6-row input
#   carrying the same share column in the same order: 1001->1002 0.51, 1001->1003 0.62, 1002->1003 0.51,
#   1001->1004 0.60, 1001->1005 0.60, 1004->1005 0.80. The expected file was evidently produced from an
#   earlier version of the input and never regenerated (upstream radlog-web/radlog testdata holds the same two
#   mismatched files). So the shipped case is tested against the plain-Python reference, and the peer answer
#   is checked on the reconstructed input (test_company_control_peer_answer_on_reconstructed_input).

OWNEDSHARES = Table("company_control.csv", "ownedshares", ("x", "y", "p"), doubles=("p",))

# Company control proper: a controlled company contributes the shares it owns directly (ownedshares), so
# nothing is counted twice. Mutual recursion: cshares depends on bought, bought on cshares. The contributor of
# the recursive branch is the bought(x, y) fact, so each controlled company y adds its holding of z once.
CONTROL_CTES = (
    "WITH RECURSIVE cshares(x, z, sum() AS p) AS (SELECT x, y, p FROM ownedshares) UNION "
    "(SELECT bought.x, ownedshares.y, ownedshares.p FROM bought, ownedshares WHERE bought.y = ownedshares.x), "
    "bought(x, y) AS (SELECT x, z FROM cshares WHERE p > 0.5 AND x <> z) "
)
CONTROL_SHARES = CONTROL_CTES + "SELECT c.x, c.z, c.p FROM cshares c, bought b WHERE c.x = b.x AND c.z = b.y"

# The RaSQL paper's formulation (the README's description): a controlled company contributes its accumulated
# cshares; contributor of the recursive branch is the cshares(y, z) group. It double counts shares reachable
# through two chains of control, so its values are not ownership fractions, but it is a well-defined fixpoint,
# computed independently by reference.company_control_transitive_shares.
RASQL_CONTROL = (
    "WITH RECURSIVE cshares(x, z, sum() AS p) AS (SELECT x, y, p FROM ownedshares) UNION "
    "(SELECT bought.x, cshares.z, cshares.p FROM bought, cshares WHERE bought.y = cshares.x), "
    "bought(x, y) AS (SELECT x, z FROM cshares WHERE p > 0.5 AND x <> z) "
)


def shipped_shares():
    path = peer_dir() / "data" / OWNEDSHARES.file
    return [(int(x), int(y), float(p)) for x, y, p in read_rows(path)]


def test_company_control_vs_reference(conn, cur):
    load_table(conn, OWNEDSHARES)
    controls, shares = company_control(shipped_shares())
    assert controls, "the reference finds no control at all: the input changed?"
    # one row per bought(x, y) pair with its share: checks who controls whom and the summed shares at once
    sql = prefixed(CONTROL_SHARES, ["ownedshares"])
    cur.execute(sql)
    assert_same_rows(cur.fetchall(), [(x, z, p) for (x, z), p in shares.items()], context=sql)


def test_company_control_rasql_formulation(conn, cur):
    load_table(conn, OWNEDSHARES)
    bought, cshares = company_control_transitive_shares(shipped_shares())
    # On this chain the double counting changes the values, not who controls whom.
    assert bought == company_control(shipped_shares())[0]
    # bought is a function of cshares (p > 0.5, x <> z), so comparing every cshares group and value checks the
    # fixpoint of both CTEs
    sql = prefixed(RASQL_CONTROL + "SELECT x, z, p FROM cshares", ["ownedshares"])
    cur.execute(sql)
    assert_same_rows(cur.fetchall(), [(x, z, p) for (x, z), p in cshares.items()], context=sql)


# The input the peer answer fits (see the comment above): same share column, different companies.
RECONSTRUCTED_SHARES = [
    (1001, 1002, 0.51),
    (1001, 1003, 0.62),
    (1002, 1003, 0.51),
    (1001, 1004, 0.60),
    (1001, 1005, 0.60),
    (1004, 1005, 0.80),
]


def test_company_control_peer_answer_on_reconstructed_input(conn, cur):
    expected = expected_rows("mr_company_control_company_control.csv")
    # the reconstruction is right: the independent reference reproduces the peer file from it
    _, shares = company_control(RECONSTRUCTED_SHARES)
    assert_same_rows([(x, z, p) for (x, z), p in shares.items()], expected, context="reference vs peer file")

    conn.register(
        PREFIX + "ownedshares",
        pd.DataFrame(RECONSTRUCTED_SHARES, columns=["x", "y", "p"]).astype(
            {"x": "int64", "y": "int64", "p": "float64"}
        ),
    )
    sql = prefixed(CONTROL_SHARES, ["ownedshares"])
    cur.execute(sql)
    assert_same_rows(cur.fetchall(), expected, context=sql)
