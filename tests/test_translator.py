"""The translator and the analysis on their own (no Spark): the dialect, golden Datalog text, strata."""

from __future__ import annotations

import textwrap

import pytest

from recsql import analysis
from recsql.optimizer import optimize
from recsql.optimizer.join_search import CostModel
from recsql.optimizer.outer_joins import simplify_program
from recsql.planner import plan as planner
from recsql.settings import Settings
from translator.dialect import RecursiveCTE, parse_one
from translator.errors import TranslationError
from translator.ir import Aggregate, HeaderAggregate, Iteration
from translator.translate import translate

TABLES = {
    "arc": ("a", "b"),
    "warc": ("src", "dst", "cost"),
    "rel": ("parent", "child"),
    "t": ("x", "y", "z"),
    "u": ("x", "w"),
    "friend": ("x", "y"),
    "organizer": ("x",),
}


class FakeCatalog:
    def table_columns(self, name):
        return TABLES.get(name)

    def view_query(self, name):
        return None

    def table_statistics(self, name):
        return None  # the optimizer falls back to its defaults


def datalog(sql: str) -> str:
    return translate(parse_one(sql), FakeCatalog()).to_datalog()


def golden(text: str) -> str:
    return textwrap.dedent(text).strip()


def test_rasql_header_aggregate_and_recursion_level_parse():
    cte = (
        parse_one(
            "WITH RECURSIVE sp(node, min() AS dist) MAX RECURSION LEVEL 7 AS (SELECT 1, 0) UNION "
            "(SELECT warc.dst, sp.dist + warc.cost FROM sp, warc WHERE sp.node = warc.src) SELECT * FROM sp"
        )
        .args["with_"]
        .expressions[0]
    )
    assert isinstance(cte, RecursiveCTE)
    assert cte.args["aggregates"] == {"dist": "min"}
    assert int(cte.args["max_level"].this) == 7


@pytest.mark.parametrize("columns", ["min() AS", "n, max() AS"])
def test_header_aggregate_without_a_column_name_is_a_syntax_error(columns):
    with pytest.raises(TranslationError, match=r"syntax error: Expected a column name after m..\(\) AS") as info:
        parse_one(f"WITH RECURSIVE t({columns}) AS (SELECT 1) SELECT * FROM t")
    assert info.value.line == 1 and info.value.column is not None


def test_both_parenthesizations_translate_alike():
    rasql = datalog(
        "WITH RECURSIVE tc(a, b) AS (SELECT a, b FROM arc) UNION (SELECT tc.a, arc.b FROM tc, arc WHERE tc.b = arc.a) "
        "SELECT a, b FROM tc"
    )
    standard = datalog(
        "WITH RECURSIVE tc(a, b) AS (SELECT a, b FROM arc UNION SELECT tc.a, arc.b FROM tc, arc WHERE tc.b = arc.a) "
        "SELECT a, b FROM tc"
    )
    assert rasql == standard


def test_transitive_closure_golden():
    assert datalog(
        "WITH RECURSIVE tc(a, b) AS (SELECT a, b FROM arc) UNION (SELECT tc.a, arc.b FROM tc, arc WHERE tc.b = arc.a) "
        "SELECT a, b FROM tc"
    ) == golden("""
        % tc(a, b)  % set
        tc(A, B) :- arc(A, B).
        tc(A1, B2) :- tc(A1, B1), arc(B1, B2).
        % answer(a, b)
        answer(A3, B3) :- tc(A3, B3).
        ?- answer.
    """)


def test_shortest_paths_golden():
    assert datalog(
        "WITH RECURSIVE sp(node, min() AS cost) AS (SELECT 1, 0) UNION (SELECT warc.dst, sp.cost + warc.cost "
        "FROM sp, warc WHERE sp.node = warc.src) SELECT node, cost FROM sp ORDER BY cost DESC LIMIT 3"
    ) == golden("""
        % sp(node, min<cost>)
        sp(1, 0).
        sp(DST, COST + COST1) :- sp(NODE, COST), warc(NODE, DST, COST1).
        % answer(node, cost)
        answer(NODE1, COST2) :- sp(NODE1, COST2).
        ?- answer order by cost desc limit 3.
    """)


def test_mutual_recursion_with_count_golden():
    assert datalog(
        "WITH RECURSIVE attend(x) AS (SELECT x FROM organizer) UNION (SELECT y FROM cntcoming WHERE n >= 2), "
        "cntcoming(y, count() AS n) AS (SELECT friend.y, 1 FROM attend, friend WHERE attend.x = friend.x) "
        "SELECT x FROM attend"
    ) == golden("""
        % attend(x)  % set
        attend(X) :- organizer(X).
        attend(Y) :- cntcoming(Y, N), N >= 2.
        % cntcoming(y, count<n>)
        cntcoming(Y1, 1) :- attend(X1), friend(X1, Y1).
        % answer(x)
        answer(X3) :- attend(X3).
        ?- answer.
    """)


def test_grouping_with_having_golden():
    assert datalog("SELECT x, sum(y) * 2 AS s FROM t WHERE z > 1 GROUP BY x HAVING sum(y) > 10") == golden("""
        % agg(g0, a0)
        agg(X, sum<Y>) :- t(X, Y, Z), Z > 1.
        % answer(x, s)
        answer(G_0, AGG_0 * 2) :- agg(G_0, AGG_0), AGG_0 > 10.
        ?- answer.
    """)


def test_semi_and_anti_joins_golden():
    assert datalog(
        "SELECT t.x FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.x = t.x) AND t.y NOT IN (SELECT w FROM u)"
    ) == golden("""
        % exists_sub(one, corr0)  % set
        exists_sub(1, X1) :- u(X1, W).
        % in_sub(w)
        in_sub(W1) :- u(X2, W1).
        % answer(x)
        answer(X) :- t(X, Y, Z), exists_sub(ONE, X), not in_sub(MEMBER) on MEMBER = Y OR MEMBER IS NULL OR Y IS NULL.
        ?- answer.
    """)


def test_subqueries_correlated_by_other_conditions_golden():
    """Conditions other than inner = outer move to the outer query's semi- or anti-join (TPC-H Q21's shape);
    the subquery exposes the inner columns they read."""
    assert datalog(
        "SELECT t.x FROM t WHERE EXISTS (SELECT * FROM u WHERE u.x = t.x AND u.w <> t.y) "
        "AND NOT EXISTS (SELECT * FROM u v WHERE v.x = t.x AND v.w > t.z + 1)"
    ) == golden("""
        % exists_sub(one, corr0, corr1)
        exists_sub(1, X1, W) :- u(X1, W).
        % exists_sub_2(one, corr0, corr1)
        exists_sub_2(1, X2, W2) :- u(X2, W2).
        % answer(x)
        answer(X) :- t(X, Y, Z), exists exists_sub(_, X, W1) on W1 <> Y, not exists_sub_2(_, X, W21) on W21 > Z + 1.
        ?- answer.
    """)


def test_union_all_cte_is_bag_iteration():
    program = translate(
        parse_one("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r"),
        FakeCatalog(),
    )
    assert program.relations["r"].iteration is Iteration.BAG and not program.relations["r"].distinct


def test_strata_order_and_delta_variants():
    program = translate(
        parse_one(
            "WITH RECURSIVE sg(x, y) AS (SELECT a.child, b.child FROM rel a, rel b WHERE a.parent = b.parent) "
            "UNION (SELECT a.x, b.y FROM sg a, sg b WHERE a.y = b.x) SELECT x, y FROM sg"
        ),
        FakeCatalog(),
    )
    components = analysis.stratify(program)
    assert [c.relations for c in components] == [("sg",), ("answer",)]
    assert components[0].recursive and not components[1].recursive
    plan = planner.plan(
        optimize(program, FakeCatalog(), Settings(), CostModel()), components, Settings(strategy="distributed")
    )
    variants = [str(v) for v in plan.strata[0].variants]
    assert variants == [  # each delta drives its variant's joins
        "sg(X, Y1) :- Δsg(X, Y), old sg(Y, Y1).",
        "sg(X, Y1) :- Δsg(Y, Y1), sg(X, Y).",
    ]


def test_mutual_recursion_is_one_component():
    program = translate(
        parse_one(
            "WITH RECURSIVE even(x, y) AS (SELECT a, a FROM arc UNION SELECT odd.x, arc.b FROM odd, arc "
            "WHERE odd.y = arc.a), "
            "odd(x, y) AS (SELECT even.x, arc.b FROM even, arc WHERE even.y = arc.a) SELECT x, y FROM even"
        ),
        FakeCatalog(),
    )
    components = analysis.stratify(program)
    assert components[0].relations == ("even", "odd") and components[0].recursive


def test_header_aggregate_recorded_on_the_relation():
    program = translate(
        parse_one(
            "WITH RECURSIVE c(x, count() AS n) AS (SELECT a, 1 FROM arc) UNION (SELECT arc.b, c.n FROM c, arc "
            "WHERE c.x = arc.a) SELECT * FROM c"
        ),
        FakeCatalog(),
    )
    assert program.relations["c"].aggregate == HeaderAggregate(Aggregate.COUNT, 1)


@pytest.mark.parametrize(
    "sql, message, position",
    [
        ("SELECT nope FROM t", "column 'nope' not found", (1, 8)),
        ("SELECT x FROM t\nJOIN missing m ON t.x = m.x", "table or view 'missing' not found", (2, 6)),
        ("SELECT t.x, count(*) FROM t GROUP BY y", "must appear in GROUP BY", (1, 8)),
        ("SELECT x FROM t WHERE sum(y) > 1", "not allowed in WHERE", (1, 23)),
    ],
)
def test_translation_errors_have_positions(sql, message, position):
    with pytest.raises(TranslationError) as info:
        translate(parse_one(sql), FakeCatalog())
    assert message in info.value.message
    assert (info.value.line, info.value.column) == position


def simplified(sql: str) -> str:
    return simplify_program(translate(parse_one(sql), FakeCatalog())).to_datalog()


def test_scalar_subquery_compared_in_where_becomes_an_inner_join():
    """A correlated scalar subquery is an outer join (NULL without a row); a comparison with it rejects that
    NULL, so the join is inner, on the correlation columns as shared variables (TPC-H Q2, Q17, Q20)."""
    assert simplified("SELECT t.x FROM t WHERE t.y > (SELECT max(u.w) FROM u WHERE u.x = t.x)") == golden("""
        % agg(g0, a0)
        agg(X1, max<W>) :- u(X1, W).
        % scalar(MAX(u.w), corr0)
        scalar(AGG_0, G_0) :- agg(G_0, AGG_0).
        % answer(x)
        answer(X) :- t(X, Y, Z), scalar(SCALAR, X), Y > SCALAR.
        ?- answer.
    """)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT t.x, (SELECT max(u.w) FROM u WHERE u.x = t.x) AS m FROM t",  # NULL kept in the answer
        "SELECT t.x FROM t WHERE coalesce((SELECT max(u.w) FROM u WHERE u.x = t.x), 0) < 5",  # NULL made 0
        "SELECT t.x FROM t WHERE (SELECT max(u.w) FROM u WHERE u.x = t.x) IS NULL",
        "SELECT t.x FROM t LEFT JOIN u ON u.x = t.x WHERE u.w > 1 OR t.y > 1",  # true for some NULLs
    ],
)
def test_outer_joins_that_keep_rows_without_a_match_stay(sql):
    assert simplified(sql) == datalog(sql)


def test_left_join_filtered_on_its_columns_becomes_inner():
    assert "left" not in simplified("SELECT t.x, u.w FROM t LEFT JOIN u ON u.x = t.x AND u.w > 2 WHERE u.w + 1 < 9")


class CountingCatalog(FakeCatalog):
    """Notes each name it is asked about (Spark's catalog answers each by a round trip)."""

    def __init__(self):
        self.asked = []

    def table_columns(self, name):
        self.asked.append(name)
        return super().table_columns(name)


@pytest.mark.parametrize(
    "sql, ctes, asked",
    [
        ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r", {"r"}, set()),
        ("WITH a AS (SELECT x FROM t) SELECT x FROM a WHERE x IN (SELECT x FROM a)", {"a"}, set()),
        ("WITH t AS (SELECT x FROM t) SELECT x FROM t", {"t"}, {"t"}),  # its body reads the table t
        (  # a CTE of an outer WITH read inside an inner one
            "WITH a AS (SELECT x FROM t) "
            "SELECT a.x FROM a JOIN (WITH b AS (SELECT 1 AS y) SELECT y FROM a, b) s ON true",
            {"a", "b"},
            set(),
        ),
        (  # the outer reference is to the table u, the inner one to the CTE
            "SELECT x FROM u WHERE x IN (WITH u AS (SELECT 1 AS x) SELECT x FROM u)",
            {"u"},
            {"u"},
        ),
    ],
)
def test_a_ctes_name_is_asked_of_the_catalog_only_where_a_reference_may_read_a_table(sql, ctes, asked):
    catalog = CountingCatalog()
    translate(parse_one(sql), catalog)
    assert set(catalog.asked) & ctes == asked
