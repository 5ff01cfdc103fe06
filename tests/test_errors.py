"""Every kind of user error comes back as the documented PEP 249 class, says what and where, and carries
no Py4J or Java text."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql.types import DateType

import recsql
from recsql.engine.answer import Answer


@pytest.fixture(scope="module", autouse=True)
def tables(conn):
    conn.register("er_edge", pd.DataFrame({"src": [1, 2, 3, 3], "dst": [2, 3, 1, 4]}))
    conn.register("er_t", pd.DataFrame({"x": [1, 2, 3]}))


def raised(cur, sql, kind, params=None):
    with pytest.raises(kind) as info:
        cur.execute(sql, params)
    error = info.value
    text = str(error).lower()
    assert "py4j" not in text and "java" not in text and "org.apache" not in text, text
    return error


def test_syntax_error_has_position(cur):
    error = raised(cur, "SELECT x\nFROM er_t\nWHERE x = = 1", recsql.ProgrammingError)
    assert "syntax error" in error.message
    assert error.line == 3
    assert error.column is not None and error.column >= 9


def test_unterminated_string(cur):
    error = raised(cur, "SELECT 'abc FROM er_t", recsql.ProgrammingError)
    assert "unterminated" in error.message


def test_unknown_table_names_it_with_position(cur):
    error = raised(cur, "SELECT *\nFROM er_t JOIN nosuch ON er_t.x = nosuch.y", recsql.ProgrammingError)
    assert "nosuch" in error.message and "not found" in error.message
    assert (error.line, error.column) == (2, 16)


def test_unknown_column_lists_the_candidates(cur):
    error = raised(cur, "SELECT er_t.y FROM er_t", recsql.ProgrammingError)
    assert "er_t.y" in error.message and "er_t.x" in error.message
    assert (error.line, error.column) == (1, 8)


def test_unknown_column_inside_recursive_cte(cur):
    error = raised(
        cur,
        "WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM er_edge UNION\n"
        "  SELECT tc.a, er_edge.dst FROM tc JOIN er_edge ON tc.c = er_edge.src) SELECT * FROM tc",
        recsql.ProgrammingError,
    )
    assert "tc.c" in error.message and error.line == 2


def test_ambiguous_column(cur):
    error = raised(cur, "SELECT x FROM er_t a, er_t b", recsql.ProgrammingError)
    assert "ambiguous" in error.message


def test_negation_through_recursion_names_the_cycle(cur):
    error = raised(
        cur,
        "WITH RECURSIVE win(x) AS (SELECT src FROM er_edge WHERE NOT EXISTS "
        "(SELECT 1 FROM win WHERE win.x = er_edge.dst)) SELECT * FROM win",
        recsql.ProgrammingError,
    )
    assert "negation through recursion" in error.message and "win" in error.message


def test_mutual_recursion_through_negation_names_both(cur):
    error = raised(
        cur,
        "WITH RECURSIVE a(x) AS (SELECT x FROM er_t UNION SELECT x FROM b), "
        "b(x) AS (SELECT x FROM er_t EXCEPT SELECT x FROM a) SELECT * FROM a",
        recsql.ProgrammingError,
    )
    assert "a" in error.message and "b" in error.message and "recursi" in error.message


def test_group_by_aggregate_through_recursion(cur):
    error = raised(
        cur,
        "WITH RECURSIVE r(x, c) AS (SELECT x, 1 FROM er_t UNION SELECT x, count(*) FROM r GROUP BY x) SELECT * FROM r",
        recsql.ProgrammingError,
    )
    assert "aggregation through recursion" in error.message and "min() AS" in error.message


@pytest.mark.parametrize(
    "expression",
    ["100 - sp.d", "-sp.d + er_edge.dst", "sp.d * -1"],
)
def test_non_monotone_arithmetic_on_min(cur, expression):
    error = raised(
        cur,
        "WITH RECURSIVE sp(n, min() AS d) AS (SELECT 1, 0) UNION "
        f"(SELECT er_edge.dst, {expression} FROM sp, er_edge WHERE sp.n = er_edge.src) SELECT * FROM sp",
        recsql.ProgrammingError,
    )
    assert "non-monotone" in error.message and "sp" in error.message


def test_non_monotone_condition_on_min(cur):
    error = raised(
        cur,
        "WITH RECURSIVE sp(n, min() AS d) AS (SELECT 1, 0) UNION "
        "(SELECT er_edge.dst, sp.d + 1 FROM sp, er_edge WHERE sp.n = er_edge.src AND sp.d > 2) SELECT * FROM sp",
        recsql.ProgrammingError,
    )
    assert "non-monotone" in error.message and "condition" in error.message


def test_recursive_aggregate_into_plain_column(cur):
    error = raised(
        cur,
        "WITH RECURSIVE sp(n, min() AS d) AS (SELECT 1, 0) UNION "
        "(SELECT sp.d, sp.d + 1 FROM sp, er_edge WHERE sp.n = er_edge.src) SELECT * FROM sp",
        recsql.ProgrammingError,
    )
    assert "not an aggregate" in error.message


def test_monotone_uses_are_accepted(cur):
    cur.execute(
        "WITH RECURSIVE sp(n, min() AS d) AS (SELECT 1, 0) UNION "
        "(SELECT er_edge.dst, sp.d + 2 * er_edge.dst FROM sp, er_edge WHERE sp.n = er_edge.src AND sp.d < 100) "
        "SELECT * FROM sp ORDER BY n"
    )
    assert cur.fetchall() == [(1, 0), (2, 4), (3, 10), (4, 18)]


def test_iteration_limit_names_the_cte_and_the_setting(cur):
    cur.execute("SET recsql.max_iterations = 5")
    try:
        error = raised(
            cur,
            "WITH RECURSIVE counter(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM counter WHERE n < 100) "
            "SELECT max(n) FROM counter",
            recsql.OperationalError,
        )
    finally:
        cur.execute("SET recsql.max_iterations = 10000")
    assert "'counter'" in error.message and "5 iterations" in error.message
    assert "SET recsql.max_iterations" in error.message


def test_cycle_under_union_all_stops_with_an_error(cur):
    cur.execute("SET recsql.max_iterations = 20")
    try:
        error = raised(
            cur,
            "WITH RECURSIVE walk(node) AS (SELECT 1 UNION ALL SELECT er_edge.dst FROM walk JOIN er_edge "
            "ON walk.node = er_edge.src) SELECT count(*) FROM walk",
            recsql.OperationalError,
        )
    finally:
        cur.execute("SET recsql.max_iterations = 10000")
    assert "walk" in error.message and "fixpoint" in error.message


def test_max_recursion_level(cur):
    error = raised(
        cur,
        "WITH RECURSIVE counter(n) MAX RECURSION LEVEL 3 AS (SELECT 1 UNION ALL SELECT n + 1 FROM counter "
        "WHERE n < 10) SELECT * FROM counter",
        recsql.OperationalError,
    )
    assert "MAX RECURSION LEVEL 3" in error.message and "counter" in error.message
    cur.execute(
        "WITH RECURSIVE counter(n) MAX RECURSION LEVEL 3 AS (SELECT 1 UNION ALL SELECT n + 1 FROM counter "
        "WHERE n < 3) SELECT * FROM counter ORDER BY n"
    )
    assert cur.fetchall() == [(1,), (2,), (3,)]


def test_row_limit(cur):
    cur.execute("SET recsql.max_rows = 5")
    try:
        error = raised(
            cur,
            "WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM er_edge UNION "
            "SELECT tc.a, er_edge.dst FROM tc JOIN er_edge ON tc.b = er_edge.src) SELECT * FROM tc",
            recsql.OperationalError,
        )
    finally:
        cur.execute("SET recsql.max_rows = 100000000")
    assert "recsql.max_rows" in error.message and "'tc'" in error.message


def test_unknown_setting(cur):
    error = raised(cur, "SET recsql.no_such_thing = 3", recsql.ProgrammingError)
    assert "recsql.max_iterations" in error.message


@pytest.mark.spark
def test_spark_analysis_error_is_a_programming_error(cur):
    error = raised(cur, "SELECT no_such_function(x) FROM er_t", recsql.ProgrammingError)
    assert "no_such_function" in error.message.lower()


def test_wrong_number_of_parameters(cur):
    error = raised(cur, "SELECT x FROM er_t WHERE x = ?", recsql.ProgrammingError, params=(1, 2))
    assert "1 parameter" in error.message


def test_unsupported_sql_is_not_supported_error(cur):
    error = raised(cur, "SELECT x FROM er_t FOR UPDATE", recsql.NotSupportedError)
    assert "FOR UPDATE" in error.message


def test_cte_branch_width_mismatch(cur):
    error = raised(
        cur, "WITH RECURSIVE r(a, b) AS (SELECT 1, 2 UNION SELECT a FROM r) SELECT * FROM r", recsql.ProgrammingError
    )
    assert "2 columns" in error.message


def test_errors_are_pep249_subclasses():
    for kind in (recsql.ProgrammingError, recsql.OperationalError, recsql.NotSupportedError, recsql.DataError):
        assert issubclass(kind, recsql.DatabaseError) and issubclass(kind, recsql.Error)
    assert issubclass(recsql.InterfaceError, recsql.Error)


@pytest.mark.spark
def test_bad_data_is_a_data_error(cur):
    error = raised(cur, "SELECT CAST('not a number' AS INT) AS n", recsql.DataError)
    assert "not a number" in error.message


@pytest.mark.spark
def test_sql_the_local_evaluator_cannot_bind_goes_to_spark_under_auto(cur):
    """A string anchor incremented by the recursive branch: DuckDB refuses to bind the comparison, Spark
    casts 'x' and fails on its value. Under `auto` the user gets Spark's error; with the local strategy
    forced, the local strategy's limit."""
    sql = "WITH RECURSIVE t(n) AS (SELECT 'x' UNION ALL SELECT n + 1 FROM t WHERE n < 3) SELECT * FROM t"
    cur.execute("SET recsql.strategy = auto")
    assert "'x'" in raised(cur, sql, recsql.DataError).message
    cur.execute("SET recsql.strategy = local")
    assert "the local strategy cannot evaluate" in raised(cur, sql, recsql.NotSupportedError).message


@pytest.mark.parametrize("where", ["recsql.session.translate", "recsql.engine.executor.Executor.result"])
def test_an_internal_failure_is_an_internal_error_naming_the_statement(conn, cur, monkeypatch, where):
    """No exception but recsql's reaches a caller: a bug inside recsql (here one injected where a query is
    translated, or run) is an InternalError carrying the statement, and the connection goes on."""

    def broken(*args, **kwargs):
        raise KeyError("injected")

    sql = "SELECT x FROM er_t WHERE x > 1"
    with monkeypatch.context() as patch:
        patch.setattr(where, broken)
        error = raised(cur, sql, recsql.InternalError)
    assert error.statement == sql and sql in str(error) and "KeyError" in str(error)
    assert isinstance(error.__cause__, KeyError)
    cur.execute(sql)
    assert sorted(cur.fetchall()) == [(2,), (3,)]


def test_a_failure_converting_fetched_rows_is_an_internal_error(cur):
    """Rows are converted to Python values as they are fetched: a failure there (injected: a date no
    Python date holds) is an InternalError too."""
    cur.execute("SELECT x FROM er_t")
    cur._result.answer = Answer(["x"], [DateType()], pa.table({"c0": pa.array([2**31 - 1], pa.date32())}))
    with pytest.raises(recsql.InternalError, match="OverflowError.*SELECT x FROM er_t"):
        cur.fetchall()
