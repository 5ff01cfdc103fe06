"""The optimizer as the user sees it: EXPLAIN shows every pass with estimates and join orders, Spark runs
the joins in the chosen order, and the answers match DuckDB."""

from __future__ import annotations

import re

import duckdb
import pytest
from explain import explain

import recsql
from recsql.optimizer import optimize
from recsql.optimizer.join_search import CostModel
from recsql.settings import Settings
from recsql.statistics import ColumnStatistics, TableStatistics
from translator import dialect
from translator.translate import translate

QUERY = (
    "SELECT count(*), sum(oj_a.x) FROM oj_a JOIN oj_b ON oj_a.k = oj_b.k JOIN oj_c ON oj_b.j = oj_c.j "
    "WHERE oj_c.name = 'n3'"
)


@pytest.fixture(scope="module")
def three_tables(conn):
    cur = conn.cursor()
    rows = {
        "oj_a": [(i % 40, i % 7) for i in range(2000)],
        "oj_b": [(i % 40, i % 50) for i in range(2000)],
        "oj_c": [(j, f"n{j}") for j in range(50)],
    }
    columns = {"oj_a": "k INT, x INT", "oj_b": "k INT, j INT", "oj_c": "j INT, name STRING"}
    duck = duckdb.connect()
    for name, data in rows.items():
        cur.execute(f"DROP TABLE IF EXISTS {name}")
        cur.execute(f"CREATE TABLE {name} ({columns[name]})")
        cur.executemany(f"INSERT INTO {name} VALUES (?, ?)", data)
        duck.execute(f"CREATE TABLE {name} ({columns[name].replace('STRING', 'VARCHAR')})")
        duck.executemany(f"INSERT INTO {name} VALUES (?, ?)", data)
    yield duck
    cur.close()


def scan_order(plan: str) -> list[str]:
    """Tables in the order their scans appear in Spark's optimized plan (left-deep: the join order)."""
    names = {("k", "x"): "oj_a", ("k", "j"): "oj_b", ("j", "name"): "oj_c"}
    found = []
    for match in re.finditer(r"Relation \S*\[([^\]]*)\] parquet", plan):
        columns = tuple(re.sub(r"#\d+", "", c) for c in match.group(1).split(","))
        found.append(names[columns])
    return found


@pytest.mark.spark
def test_spark_joins_in_the_order_the_optimizer_chose(conn, three_tables):
    session = conn.session
    plan = session.plan(dialect.parse_one(QUERY))
    rule = next(rule for rule in plan.program.rules if len(rule.atoms) == 3)
    chosen = [atom.relation for atom in rule.atoms]
    assert set(chosen[:2]) != {"oj_a", "oj_b"}  # not the written a ⋈ b first: the filtered c joins early
    frame = session.executor().run(session.plan(dialect.parse_one(QUERY)))  # on Spark, not collected
    optimized = frame._jdf.queryExecution().optimizedPlan().toString()
    assert scan_order(optimized) == chosen
    cur = conn.cursor()
    cur.execute(QUERY)
    assert cur.fetchall() == [tuple(three_tables.execute(QUERY).fetchone())]


def test_explain_shows_each_pass_with_estimates_and_join_order(conn, three_tables):
    cur = conn.cursor()
    cur.execute("EXPLAIN " + QUERY)
    text = "\n".join(row[0] for row in cur.fetchall())
    assert "== Pass 1: simplify_outer_joins ==\n(program unchanged)" in text
    assert "== Pass 2: order_joins ==" in text
    assert re.search(r"% oj_a\(k, x\) +~2000 rows", text) is None  # tables are not relations of the program
    order = re.search(r"-- cost \S+: (oj_\w)\(.*\) \[~\d+\] ⋈ (oj_\w)\(.*\) \[broadcast on \w+, ~\d+\] ⋈ (oj_\w)", text)
    assert order and set(order.groups()[:2]) != {"oj_a", "oj_b"}
    assert "== Pass 3: magic_sets ==\nnot applicable\n(program unchanged)" in text
    assert "Pass 4" not in text  # join order runs again only on a program magic sets rewrote


def test_explain_shows_the_magic_rewrite_and_the_setting_turns_it_off(conn, cur):
    cur.execute("DROP TABLE IF EXISTS oj_edge")
    cur.execute("CREATE TABLE oj_edge (src INT, dst INT)")
    cur.executemany("INSERT INTO oj_edge VALUES (?, ?)", [(i, (i * 7 + 1) % 300) for i in range(300)])
    sql = (
        "WITH RECURSIVE r(x, y) AS (SELECT src, dst FROM oj_edge UNION "
        "SELECT r.x, e.dst FROM r JOIN oj_edge e ON r.y = e.src) SELECT y FROM r WHERE x = 3"
    )
    text = explain(cur, sql)
    assert "== Pass 4: order_joins ==" in text
    assert "m_r_bf(X1) :- X1 = 3." in text
    assert re.search(r"== Pass 3: magic_sets ==\nused: estimated \d+ derived facts instead of \d+\n", text)
    text = explain(cur, sql, magic="off")
    assert "m_r_bf" not in text and "== Pass 3: magic_sets ==\noff (recsql.magic)" in text


def test_bindings_pass_from_small_relations_only():
    """A join with a small table binds the recursion (magic sets); a join with a large one does not."""
    sizes = {"e": 1_000_000, "small": 3, "large": 500_000}

    class Catalog:
        def table_columns(self, name):
            return {"e": ("src", "dst"), "small": ("id",), "large": ("id",)}.get(name)

        def view_query(self, name):
            return None

        def table_statistics(self, name):
            rows = sizes[name]
            return TableStatistics(rows, tuple(ColumnStatistics(min(rows, 1000)) for _ in self.table_columns(name)))

    def magic_relations(start_table: str) -> list[str]:
        sql = (
            "WITH RECURSIVE r(x, y) AS (SELECT src, dst FROM e UNION SELECT r.x, e.dst FROM r JOIN e ON r.y = e.src) "
            f"SELECT r.y FROM r JOIN {start_table} s ON r.x = s.id"
        )
        program = translate(dialect.parse_one(sql), Catalog())
        optimized = optimize(program, Catalog(), Settings(), CostModel())
        return [name for name in optimized.program.relations if name.startswith("m_")]

    assert magic_relations("small") == ["m_r_bf"]
    assert magic_relations("large") == []


def test_explain_analyze_counts_facts_per_relation_and_iteration(conn, cur):
    """A chain 0 → 1 → … → 9: the closure has 45 pairs, node 2 reaches 7 nodes."""
    cur.execute("DROP TABLE IF EXISTS ea_chain")
    cur.execute("CREATE TABLE ea_chain (src INT, dst INT)")
    cur.executemany("INSERT INTO ea_chain VALUES (?, ?)", [(i, i + 1) for i in range(9)])
    sql = (
        "WITH RECURSIVE r(x, y) AS (SELECT src, dst FROM ea_chain UNION "
        "SELECT r.x, e.dst FROM r JOIN ea_chain e ON r.y = e.src) SELECT y FROM r WHERE x = 2"
    )
    without = explain(cur, sql, magic="off", analyze=True)
    assert "facts per relation: r 45, answer 7" in without
    assert "total derived facts: 52" in without
    assert re.search(r"^r exit rules: r \+9, \d+\.\d+ s$", without, re.M)
    assert re.search(r"^r iteration 8: r \+1, \d+\.\d+ s$", without, re.M)
    assert "answer rows: 7" in without
    with_magic = explain(cur, sql, magic="on", analyze=True)
    assert "facts per relation: m_r_bf 1, r_bf 7, answer 7" in with_magic
    assert "total derived facts: 15" in with_magic
    assert re.search(r"^r_bf iteration 6: r_bf \+1, ", with_magic, re.M)


def test_explain_records_outer_joins_made_inner_and_passes_switch_off_by_name(conn, cur, three_tables):
    sql = (
        "SELECT oj_a.x, oj_c.name FROM oj_a JOIN oj_b ON oj_a.k = oj_b.k LEFT JOIN oj_c ON oj_c.j = oj_b.j "
        "WHERE oj_c.name = 'n3'"
    )
    expected = sorted(three_tables.execute(sql).fetchall())
    assert "== Pass 1: simplify_outer_joins ==\nouter joins made inner: 1\n% answer(x, name)" in explain(cur, sql)
    cur.execute("SET recsql.disable_passes = simplify_outer_joins, order_joins")  # names, quoted or not
    try:
        text = explain(cur, sql)
        assert "== Pass 1: magic_sets ==" in text and "order_joins ==" not in text and " left oj_c(" in text
        assert "Disabled passes (recsql.disable_passes): simplify_outer_joins, order_joins" in text
        cur.execute(sql)
        assert sorted(cur.fetchall()) == expected
    finally:
        cur.execute("SET recsql.disable_passes = ''")
    cur.execute(sql)
    assert sorted(cur.fetchall()) == expected
    with pytest.raises(recsql.ProgrammingError, match="'magic'.*simplify_outer_joins, order_joins, magic_sets"):
        cur.execute("SET recsql.disable_passes = 'magic'")
