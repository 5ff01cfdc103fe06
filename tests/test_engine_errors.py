"""Errors raised by the engines recsql runs on (DuckDB in this process, Spark, Arrow) reach the user in recsql's
words: the problem named without another engine's kind of error ("Invalid Input Error: ", "Conversion Error: "),
its condition tags, SQLSTATE or type names, as the PEP 249 class the problem belongs to (DataError for bad
values).

References: DuckDB's own class for the same bad value (its ConversionException is a PEP 249 DataError); for a
division by zero, which DuckDB answers with NULL, the SQL standard's data exception that Spark raises.
"""

from __future__ import annotations

import re

import duckdb
import pyarrow as pa
import pytest
from strategies import under

import recsql

ENGINE_WORDS = re.compile(r"\b[A-Za-z]+ Error: |\b\w+(Exception|Error): |\[[A-Z_.]+\]|SQLSTATE|\bU?INT(8|16|32|64)\b")


@pytest.fixture(scope="module", autouse=True)
def tables(conn):
    conn.register("ee_numbers", pa.table({"a": pa.array([1, 0], pa.int32()), "s": ["x", "12"]}))
    cur = conn.cursor()
    cur.execute("CREATE OR REPLACE TABLE ee_target (a INT, s STRING)")
    yield
    cur.execute("DROP TABLE ee_target")
    cur.close()


def raised(cur, sql: str, kind: type[recsql.Error]) -> str:
    """The message of the error `sql` raises, of class `kind`, checked to be in recsql's words."""
    with pytest.raises(kind) as info:
        cur.execute(sql)
    message = info.value.message
    assert ENGINE_WORDS.search(message) is None, message
    return message


@pytest.mark.parametrize(
    "sql, problem",
    [
        ("SELECT 1 / 0", "Division by zero"),
        ("SELECT 1 / a FROM ee_numbers", "Division by zero"),
        ("SELECT 7 % a FROM ee_numbers", "Remainder by zero"),
    ],
)
@under("local", "distributed")
def test_division_by_zero(cur, sql, problem):
    assert raised(cur, sql, recsql.DataError).startswith(problem)


@under("local")
def test_an_index_past_an_array(cur):
    assert "out of bounds" in raised(cur, "SELECT element_at(array(1, 2), a + 4) FROM ee_numbers", recsql.DataError)


CAST_IN_RECURSION = (
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT CAST(concat('x', n) AS INT) FROM r WHERE n < 5) SELECT * FROM r"
)


@pytest.mark.spark
@under("local", "decomposed")
def test_a_bad_cast_inside_a_recursion(cur):
    """Evaluated by DuckDB, in this process or in Spark's tasks: its class for the same cast is a DataError."""
    with pytest.raises(duckdb.DataError):
        duckdb.sql("SELECT CAST('x1' AS INT)").fetchall()
    message = raised(cur, CAST_IN_RECURSION, recsql.DataError)
    assert "'x1'" in message and "INT" in message


@pytest.mark.spark
@under("local")
def test_sql_the_local_evaluator_cannot_run(cur):
    """A string anchor the recursive branch increments: DuckDB does not bind it, which the local strategy says."""
    sql = "WITH RECURSIVE t(n) AS (SELECT 'x' UNION ALL SELECT n + 1 FROM t WHERE n < 3) SELECT * FROM t"
    assert "the local strategy cannot evaluate" in raised(cur, sql, recsql.NotSupportedError)


@under("local")
def test_a_value_a_table_column_cannot_hold(cur):
    """Rows computed in this process and written by Arrow: the column and the value named, a DataError (not
    Arrow's own exception)."""
    message = raised(cur, "INSERT INTO ee_target SELECT 'abc', 'x'", recsql.DataError)
    assert "'ee_target'" in message and "column 'a'" in message and "'abc'" in message
    message = raised(cur, "INSERT INTO ee_target SELECT 99999999999, 'x'", recsql.DataError)
    assert "column 'a'" in message and "99999999999" in message
