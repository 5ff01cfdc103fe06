"""SQL at the edges of the dialect: functions whose values only Spark gives (they run on Spark, and are refused
where recsql.strategy = local forbids it), other databases' recursive syntax (DuckDB's USING KEY, PostgreSQL's
CREATE RECURSIVE VIEW) and clauses recsql has no meaning for (FOR UPDATE): each an answer as DuckDB gives it, or a
NotSupportedError naming the construct, never a parse error, an internal message or a warning on stderr."""

from __future__ import annotations

import logging

import pandas as pd
import pytest
from duckdb_reference import check, reference_fixtures
from strategies import under

import recsql
from translator.dialect import RecSQL, parse_one

TABLES = {"de_t": pd.DataFrame({"x": [1, 2, 3, 4, 5]})}
duck, de_tables = reference_fixtures(TABLES, "de_tables", autouse=True)

RANDOM_WALK = (
    "WITH RECURSIVE r(n, v) AS (SELECT 1, rand(7) UNION ALL SELECT n + 1, rand(8) FROM r WHERE n < 3) "
    "SELECT n, v FROM r"
)


def refused(cur, sql: str) -> recsql.NotSupportedError:
    with pytest.raises(recsql.NotSupportedError) as info:
        cur.execute(sql)
    return info.value


def sqlglot_warnings(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name.startswith("sqlglot")]


@under("auto")
@pytest.mark.parametrize("call", ["rand(7)", "rand()", "randn(3) * 0 + 0.5", "uniform(0.0, 1.0, 3)"])
def test_random_values_come_from_spark(cur, duck, call):
    cur.execute(f"SELECT x, {call} AS r FROM de_t")
    rows = cur.fetchall()
    assert sorted(x for x, _ in rows) == [x for (x,) in duck.execute("SELECT x FROM de_t ORDER BY x").fetchall()]
    assert all(0 <= r < 1 for _, r in rows), rows
    cur.execute(f"EXPLAIN SELECT x, {call} AS r FROM de_t")
    plan = "\n".join(line for (line,) in cur.fetchall())
    assert f"{call.split('(')[0]}() takes its values from Spark" in plan.split("== Evaluation ==")[1], plan


@under("auto", "decomposed", "distributed")
def test_recursion_with_random_values_runs_on_spark_each_iteration(cur):
    cur.execute(RANDOM_WALK)
    rows = sorted(cur.fetchall())
    assert [n for n, _ in rows] == [1, 2, 3] and all(0 <= v < 1 for _, v in rows), rows
    cur.execute(f"EXPLAIN {RANDOM_WALK}")
    plan = [line.strip() for (line,) in cur.fetchall()]
    stratum = next(i for i, line in enumerate(plan) if "(recursive:" in line)
    assert "distributed on Spark (a job per iteration)" in plan[stratum], plan
    assert plan[stratum + 1] == "strategy: rand() takes its values from Spark", plan


@under("auto")
def test_recursion_filtered_by_random_values_ends(cur):
    cur.execute("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE rand() < 0.5) SELECT n FROM r")
    numbers = sorted(n for (n,) in cur.fetchall())
    assert numbers == list(range(1, len(numbers) + 1)), numbers


@pytest.mark.parametrize(
    "call, named",
    [
        ("rand(7)", "rand()"),
        ("uuid()", "uuid()"),
        ("shuffle(array(1, 2))", "shuffle()"),
        ("monotonically_increasing_id()", "monotonically_increasing_id()"),
    ],
)
@under("local")
def test_local_strategy_refuses_values_only_spark_gives(cur, caplog, call, named):
    error = refused(cur, f"SELECT x,\n  {call} AS r FROM de_t")
    assert error.message.startswith(f"{named} takes its values from Spark"), error.message
    assert "recsql.strategy = auto" in error.message and (error.line, error.column) == (2, 3)
    error = refused(
        cur,
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r "
        f"WHERE n < 3 AND {call} IS NOT NULL) SELECT n FROM r",
    )
    assert error.message.startswith(f"{named} takes its values from Spark"), error.message
    assert not sqlglot_warnings(caplog)


@pytest.mark.spark
@under("local")
def test_local_strategy_refuses_what_sqlglot_cannot_write_for_duckdb(cur, caplog):
    """DuckDB has no soundex: sqlglot cannot write the call for it and says so, as the local strategy's limit
    (not as a warning on stderr)."""
    error = refused(
        cur,
        "WITH RECURSIVE r(n, s) AS (SELECT 1, 'abc' UNION ALL SELECT n + 1, soundex(s) FROM r "
        "WHERE n < 3) SELECT * FROM r",
    )
    assert "SOUNDEX" in error.message and "the local strategy cannot evaluate" in error.message, error.message
    assert not sqlglot_warnings(caplog)


def test_unsupported_statement_is_refused_by_its_keyword_without_a_warning(cur, caplog):
    caplog.set_level(logging.WARNING)
    error = refused(cur, "CALL some_procedure(1)")
    assert error.message == "CALL statements are not supported"
    assert not sqlglot_warnings(caplog)


def test_using_key_prints_back_as_written():
    sql = (
        "WITH RECURSIVE t(a, b)\n  USING KEY (a) AS (SELECT 1, 2 UNION SELECT a + 1, b FROM t WHERE a < 3) "
        "SELECT * FROM t"
    )
    statement = parse_one(sql)
    printed = statement.sql(dialect=RecSQL)
    assert "t(a, b) USING KEY (a) AS (" in printed and parse_one(printed) == statement


def test_recurring_reference_outside_a_using_key_recursion_says_where(cur):
    sql = "WITH RECURSIVE t(a) AS (SELECT 1 UNION SELECT r.a + 1 FROM recurring.t r WHERE r.a < 3) SELECT * FROM t"
    with pytest.raises(recsql.ProgrammingError) as info:
        cur.execute(sql)
    error = info.value
    assert "'recurring.t' reads a USING KEY recursive CTE within its own recursive branches only" in error.message
    assert (error.line, error.column) == (1, sql.index("recurring") + 1)


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE RECURSIVE VIEW de_v(n) AS SELECT min(x) FROM de_t UNION ALL SELECT n + 1 FROM de_v WHERE n < 4",
        "CREATE OR REPLACE RECURSIVE VIEW de_v (n, total) AS\n"
        "  SELECT x, x FROM de_t WHERE x = 1 UNION SELECT n + 1, total + n + 1 FROM de_v JOIN de_t ON x = n + 1",
    ],
)
def test_recursive_view_is_a_view_of_its_recursive_query(cur, duck, sql):
    cur.execute(sql)
    duck.execute(sql)
    try:
        check(cur, duck, "SELECT * FROM de_v")
        check(cur, duck, "SELECT count(*) FROM de_v JOIN de_t ON n = x")
    finally:
        cur.execute("DROP VIEW de_v")
        duck.execute("DROP VIEW de_v")


def test_recursive_view_needs_its_column_list(cur):
    with pytest.raises(recsql.ProgrammingError, match="column list after the name of a RECURSIVE VIEW"):
        cur.execute("CREATE RECURSIVE VIEW de_w AS SELECT 1")


@pytest.mark.parametrize(
    "sql, kind",
    [
        ("SELECT x FROM de_t FOR UPDATE", "UPDATE"),
        ("SELECT * FROM (SELECT x FROM de_t FOR SHARE) s", "SHARE"),
    ],
)
def test_locking_reads_are_refused(cur, caplog, sql, kind):
    error = refused(cur, sql)
    assert error.message.startswith(f"SELECT ... FOR {kind} is not supported"), error.message
    assert not sqlglot_warnings(caplog)
