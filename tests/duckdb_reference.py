"""DuckDB as the independent reference for the SQL tests: building the reference connection and comparing answers.

Nothing here imports recsql. The tests load the same pandas DataFrames into recsql and into an in-memory DuckDB set
to Spark's NULL ordering (NULLS FIRST for ASC, NULLS LAST for DESC), run a query on both, and compare the answers
after normalization: as multisets unless the query orders its result totally, in which case the order must match.
"""

from __future__ import annotations

import math
from collections import Counter
from decimal import Decimal

import duckdb
import pytest


def register_tables(target, tables):
    """Register every `name: table` of `tables` on `target` (a recsql or a DuckDB connection)."""
    for name, table in tables.items():
        target.register(name, table)
    return target


def reference_fixtures(tables, name, autouse=False):
    """A module's two fixtures: `duck`, DuckDB holding `tables` (name: DataFrame), and `name`, the same tables
    registered on the session's recsql connection (`conn`); assign them to the module's names
    (`duck, rc_tables = reference_fixtures(TABLES, "rc_tables")`)."""

    @pytest.fixture(scope="module", name="duck")
    def duck():
        con = connect(tables)
        yield con
        con.close()

    @pytest.fixture(scope="module", name=name, autouse=autouse)
    def registered(conn):
        return register_tables(conn, tables)

    return duck, registered


def connect(tables):
    """An in-memory DuckDB connection with Spark's NULL ordering and `tables` (name: DataFrame) registered."""
    con = duckdb.connect()
    con.execute("SET default_null_order = 'nulls_first_on_asc_last_on_desc'")  # Spark's NULL ordering
    return register_tables(con, tables)


def register_both(conn, duck, name, table):
    """Register `table` as `name` on the recsql connection and on DuckDB."""
    conn.register(name, table)
    duck.register(name, table)


def normalize_value(value):
    """Decimals as floats, floats rounded to 6 places (and -0.0 as 0.0), NaN as a string so that it equals itself."""
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return round(value, 6) + 0.0
    return value


def normalize(rows):
    return [tuple(normalize_value(v) for v in row) for row in rows]


def multiset_diff(got, expected):
    """What tells two multisets of rows apart: the row counts and (up to ten of) the rows missing and extra."""
    g, e = Counter(got), Counter(expected)
    missing = list((e - g).elements())[:10]
    extra = list((g - e).elements())[:10]
    return (
        f"recsql {len(got)} rows, DuckDB {len(expected)} rows\n"
        f"missing (in DuckDB, not recsql): {missing}\nextra (in recsql, not DuckDB): {extra}"
    )


def check(cur, duck, sql, duck_sql=None, params=None, ordered=False, allow_empty=False, names=False):
    """Run `sql` on recsql and `duck_sql` (default: the same text) on DuckDB; assert equal answers."""
    cur.execute(sql, params)
    got_raw = cur.fetchall()
    description = cur.description

    ref = duck.execute(duck_sql or sql, list(params)) if params else duck.execute(duck_sql or sql)
    expected = normalize(ref.fetchall())
    if not allow_empty:
        assert expected, f"reference answer is empty; the test is vacuous: {duck_sql or sql}"

    assert isinstance(got_raw, list), type(got_raw)
    assert all(isinstance(row, tuple) for row in got_raw), got_raw[:3]
    got = normalize(got_raw)

    assert description is not None, "cursor.description is None after a query"
    assert len(description) == len(ref.description), (description, ref.description)
    assert all(len(row) == len(description) for row in got), got[:3]
    if names:
        assert [c[0].lower() for c in description] == [c[0].lower() for c in ref.description]

    if ordered:
        assert got == expected, f"{sql}\nrecsql: {got}\nduckdb: {expected}"
    else:
        assert Counter(got) == Counter(expected), f"{sql}\n{multiset_diff(got, expected)}"
    return got


def q(sql, duck=None, *, params=None, ordered=False, allow_empty=False, names=False, id=None):
    """One catalogue case: a pytest param holding `check`'s keyword arguments (`duck`: DuckDB's text, if other)."""
    return pytest.param(
        dict(sql=sql, duck_sql=duck, params=params, ordered=ordered, allow_empty=allow_empty, names=names), id=id
    )
