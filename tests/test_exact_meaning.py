"""Expressions the local evaluator computes as Spark does, to the last digit: decimal arithmetic (with
literals, rounded to Spark's result types), decimal division and averages (rounded half up at the
quotient's scale), dates plus intervals, the year / month / day of a date, SUBSTRING, LIKE and `||`. Each query
runs in this process (checked by EXPLAIN) and again with `recsql.spark = always`, on hypothesis-generated
data; the answers (types and rows) must be the same."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest
from explain import explain
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recsql

QUERIES = [
    "SELECT a / b AS q FROM ex_t",
    "SELECT a / 7.0 AS q, b / 3 AS r FROM ex_t",
    "SELECT k, avg(a) AS m, sum(a * (1 - b)) AS s, 100.00 * sum(a) / sum(b) AS share FROM ex_t GROUP BY k",
    "SELECT a * b * (1 + b) AS p, 0.2 * a AS f, -1 * a AS n, a - 5 AS d FROM ex_t",
    "SELECT k, avg(b) AS m FROM ex_t WHERE a > 0.5 * b GROUP BY k HAVING avg(a) > 0",
    "SELECT d + interval '3' month AS m, d - interval '45' day AS e, d + interval '1' year AS y FROM ex_t",
    "SELECT extract(year FROM d) AS y, month(d) AS m, day(d) AS dd, count(*) AS n FROM ex_t GROUP BY 1, 2, 3",
    "SELECT substring(s, 2, 3) AS part, s LIKE '%b%' AS has_b, s NOT LIKE 'a_%' AS not_a FROM ex_t",
    "SELECT sum(CASE WHEN s LIKE 'a%' THEN a ELSE 0 END) / sum(a) AS share FROM ex_t",
    "SELECT s || '/' || CAST(k AS STRING) AS path, s || CAST(NULL AS STRING) AS none, length(s) AS n FROM ex_t",
]
PROPERTY = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def tables(draw):
    size = draw(st.integers(1, 12))
    amounts = st.decimals(min_value=-(10**6), max_value=10**6, places=2)
    rates = st.one_of(st.none(), st.decimals(min_value=-100, max_value=100, places=2).filter(lambda v: v != 0))
    return pa.table(
        {
            "k": pa.array(draw(st.lists(st.integers(0, 2), min_size=size, max_size=size)), pa.int32()),
            "a": pa.array(draw(st.lists(amounts, min_size=size, max_size=size)), pa.decimal128(15, 2)),
            "b": pa.array(draw(st.lists(rates, min_size=size, max_size=size)), pa.decimal128(15, 2)),
            "d": pa.array(
                draw(
                    st.lists(
                        st.dates(datetime.date(1990, 1, 1), datetime.date(2030, 12, 31)), min_size=size, max_size=size
                    )
                ),
                pa.date32(),
            ),
            "s": pa.array(draw(st.lists(st.text("abc", min_size=0, max_size=5), min_size=size, max_size=size))),
        }
    )


def answer(cur, sql: str) -> tuple[list, list] | str:
    """The answer's column names and types and its rows; or the class of the error it raises (a division
    by zero is an error in both engines)."""
    try:
        cur.execute(sql)
    except recsql.Error as error:
        return type(error).__name__
    return [column[:2] for column in cur.description], sorted(cur.fetchall(), key=repr)


@pytest.mark.spark
@pytest.mark.parametrize("sql", QUERIES)
@given(table=tables())
@PROPERTY
def test_local_answers_are_spark_answers(conn, cur, sql, table):
    conn.register("ex_t", table)
    settings_ = conn.session.settings
    strategy = settings_.strategy
    settings_.set("recsql.strategy", "auto")
    try:
        plan = explain(cur, sql)
        assert "runs without Spark" in plan, plan
        local = answer(cur, sql)
        settings_.set("recsql.spark", "always")
        assert answer(cur, sql) == local
    finally:
        settings_.set("recsql.spark", "auto")
        settings_.set("recsql.strategy", strategy)


@pytest.mark.spark
def test_a_quotient_past_exact_rounding_is_left_to_spark(conn, cur):
    """A divisor of more digits than the local evaluator rounds exactly: the query runs on Spark instead
    (EXPLAIN ANALYZE says so), with Spark's answer."""
    big = decimal.Decimal("1" + "0" * 33)
    conn.register(
        "ex_big",
        pa.table(
            {"a": pa.array([decimal.Decimal("1.00")], pa.decimal128(38, 2)), "b": pa.array([big], pa.decimal128(38, 2))}
        ),
    )
    settings_ = conn.session.settings
    strategy = settings_.strategy
    settings_.set("recsql.strategy", "auto")
    try:
        assert "run again on Spark" in explain(cur, "SELECT a / b AS q FROM ex_big", analyze=True)
        local = answer(cur, "SELECT a / b AS q FROM ex_big")
        settings_.set("recsql.spark", "always")
        assert answer(cur, "SELECT a / b AS q FROM ex_big") == local
    finally:
        settings_.set("recsql.spark", "auto")
        settings_.set("recsql.strategy", strategy)
