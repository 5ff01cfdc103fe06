"""Random SQL (tests/random_sql.py) through recsql, under each strategy, against independent references: DuckDB for
what it computes as recsql documents it (linear recursion, plain SQL), a plain-Python least fixpoint for mutual and
non-linear recursion and for aggregates in a recursive CTE's header.

In the suite the examples are derandomized: the same few hundred queries each run (a red run is a regression, never
luck), about three minutes in all, most of them in process (`local`), fewer on Spark; a failing example is reported
as found, not shrunk (shrinking one takes minutes). A long run explores new examples:
RECSQL_DIFFERENTIAL_EXAMPLES=N runs N examples of each test under each strategy, from a random seed (pick strategies
with -k, e.g. `-k local`), shrinks what fails, and keeps it in hypothesis's example database to replay it.

A recsql.NotSupportedError is a deliberate refusal: the example is discarded (`assume`). Any other exception fails,
and so does a wrong answer. Answers are compared as multisets, or as lists where the query orders every column.
"""

from __future__ import annotations

import os
from collections import Counter

import duckdb
import pytest
import random_sql
from duckdb_reference import multiset_diff, normalize
from hypothesis import HealthCheck, Phase, assume, given, note, settings
from strategies import Runs, module_under

import recsql

pytestmark = module_under("local", "decomposed", "distributed")

LONG_RUN = int(os.environ.get("RECSQL_DIFFERENTIAL_EXAMPLES", "0"))
# examples per test in the suite, by strategy: a query in process costs a fraction of one on Spark (0.3-1 s)
EXAMPLES = {
    "queries": {"local": 100, "decomposed": 15, "distributed": 25},  # decomposed: a Parquet file per task
    "programs": {"local": 40, "decomposed": 6, "distributed": 6},
    "header_aggregates": {"local": 40, "decomposed": 8, "distributed": 8},
}


def examples(test: str, runs: Runs) -> settings:
    """Hypothesis' settings for `test` under the strategy `runs` are for: the suite's fixed examples, reported as
    found (shrinking one can take minutes), or a long run's new ones, shrunk."""
    return settings(
        max_examples=LONG_RUN or EXAMPLES[test][runs.strategy],
        derandomize=not LONG_RUN,
        database=settings.default.database if LONG_RUN else None,
        phases=list(Phase) if LONG_RUN else [Phase.explicit, Phase.generate],
        deadline=None,
        print_blob=True,
        suppress_health_check=list(HealthCheck),
    )


@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    con.execute("SET default_null_order = 'nulls_first_on_asc_last_on_desc'")  # Spark's NULL ordering
    yield con
    con.close()


def register(conn, duck, tables) -> None:
    """The example's tables on recsql's connection and on DuckDB (each replaces the previous example's)."""
    for table in tables:
        data = table.arrow()
        conn.register(table.name, data)
        duck.register(table.name, data)
        note(str(table))


def recsql_answer(conn, sql: str) -> list[tuple]:
    """recsql's rows for `sql`; a deliberate refusal (NotSupportedError) discards the example."""
    note(f"recsql: {sql}")
    cursor = conn.cursor()
    try:
        cursor.execute(sql)
        return cursor.fetchall()
    except recsql.NotSupportedError:
        assume(False)
    finally:
        cursor.close()


def assert_same(got: list[tuple], expected: list[tuple], ordered: bool, sql: str) -> None:
    got, expected = normalize(got), normalize(expected)
    if ordered:
        assert got == expected, f"{sql}\nrecsql: {got}\nexpected: {expected}"
    else:
        assert Counter(got) == Counter(expected), f"{sql}\n{multiset_diff(got, expected)}"


@pytest.mark.spark
def test_queries_match_duckdb(conn, duck, strategy):
    """Plain SQL and linear recursion: recsql's answer is DuckDB's."""

    @examples("queries", strategy)
    @given(case=random_sql.databases_and_queries())
    def run(case):
        tables, query = case
        register(conn, duck, tables)
        note(f"DuckDB: {query.duck_sql}")
        try:
            expected = duck.execute(query.duck_sql).fetchall()
        except duckdb.Error as error:
            raise AssertionError(f"the generator wrote SQL DuckDB refuses: {error}") from error
        assert_same(recsql_answer(conn, query.spark_sql), expected, query.ordered, query.spark_sql)

    run()


def test_mutual_and_nonlinear_recursion_match_python(conn, duck, strategy):
    """Mutual and non-linear recursion under UNION: the least fixpoint, computed in plain Python."""

    @examples("programs", strategy)
    @given(program=random_sql.programs())
    def run(program):
        register(conn, duck, program.tables)
        assert_same(recsql_answer(conn, program.sql), program.expected(), False, program.sql)

    run()


def test_header_aggregates_match_python(conn, duck, strategy):
    """min() / max() / count() / sum() in a recursive CTE's header: each group's value over every derivation."""

    @examples("header_aggregates", strategy)
    @given(case=random_sql.header_aggregates())
    def run(case):
        register(conn, duck, (case.table,))
        assert_same(recsql_answer(conn, case.sql), list(case.expected), False, case.sql)

    run()
