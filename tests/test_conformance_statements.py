"""Statements around the queries: CREATE TABLE with a column list AS query, a WITH [RECURSIVE] clause on
DELETE, UPDATE, INSERT and MERGE, and statements or clauses that sqlglot parses but recsql does not run,
which must fail as recsql errors naming them (never as a Python exception).

Each write runs on recsql and on an in-memory DuckDB holding the same rows; the tables must agree after
it, as must the rowcounts. Tables carry a `cs_` prefix and a name of their test's own.
"""

from __future__ import annotations

from collections import Counter

import duckdb
import pytest

import recsql

ROWS = [(1, 10), (2, 20), (3, 30), (3, 30), (4, None)]
COUNTDOWN = "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT n + 1 FROM r WHERE n < 3)"


def make_tables(cur, duck: duckdb.DuckDBPyConnection, *names: str) -> None:
    """Tables (a INT, b INT) holding ROWS, on recsql and on DuckDB."""
    values = ", ".join(f"({a}, {'NULL' if b is None else b})" for a, b in ROWS)
    for name in names:
        for target in (cur, duck):
            target.execute(f"CREATE TABLE {name} (a INT, b INT)")
            target.execute(f"INSERT INTO {name} VALUES {values}")


def contents(cur, name: str) -> Counter:
    cur.execute(f"SELECT * FROM {name}")
    return Counter(cur.fetchall())


@pytest.fixture
def duck():
    connection = duckdb.connect()
    yield connection
    connection.close()


# ---------------------------------------------------------------------------------------------------------------
# CREATE TABLE t (names) AS query
# ---------------------------------------------------------------------------------------------------------------


def test_create_table_as_with_column_names_renames_the_query_columns(cur, duck):
    sql = "CREATE TABLE cs_named (x, y) AS SELECT a + 1, b FROM (VALUES (1, 'p'), (2, 'q')) AS v(a, b)"
    cur.execute(sql)
    duck.execute(sql)
    cur.execute("SELECT * FROM cs_named")
    assert [column[0] for column in cur.description] == ["x", "y"]
    assert Counter(cur.fetchall()) == Counter(duck.execute("SELECT * FROM cs_named").fetchall())
    cur.execute("DESCRIBE cs_named")
    assert cur.fetchall() == [("x", "int"), ("y", "string")]


def test_create_table_as_with_column_names_on_a_recursive_query(cur, duck):
    sql = f"CREATE TABLE cs_named_recursive (k) AS {COUNTDOWN} SELECT n FROM r"
    cur.execute(sql)
    duck.execute(sql)
    assert contents(cur, "cs_named_recursive") == Counter(duck.execute("SELECT k FROM cs_named_recursive").fetchall())


def test_create_table_as_with_the_wrong_number_of_names_is_an_error(cur):
    with pytest.raises(recsql.ProgrammingError, match="names 3 columns but the query gives 2"):
        cur.execute("CREATE TABLE cs_too_many (a, b, c) AS SELECT 1, 2")
    with pytest.raises(recsql.ProgrammingError, match="not found"):
        cur.execute("SELECT * FROM cs_too_many")


def test_create_table_as_with_column_types_is_refused(cur):
    with pytest.raises(recsql.NotSupportedError, match="column names without types.*'a'"):
        cur.execute("CREATE TABLE cs_typed (a INT, b INT) AS SELECT 1, 2")
    with pytest.raises(recsql.ProgrammingError, match="not found"):
        cur.execute("SELECT * FROM cs_typed")


def test_create_table_with_a_column_without_a_type_is_an_error(cur):
    with pytest.raises(recsql.ProgrammingError, match="column 'b' needs a type"):
        cur.execute("CREATE TABLE cs_untyped (a INT, b)")


# ---------------------------------------------------------------------------------------------------------------
# WITH [RECURSIVE] on writes
# ---------------------------------------------------------------------------------------------------------------

WRITES_WITH_CTES = {
    "delete": f"{COUNTDOWN} DELETE FROM {{t}} WHERE a IN (SELECT n FROM r)",
    "delete_exists": f"{COUNTDOWN} DELETE FROM {{t}} WHERE EXISTS (SELECT 1 FROM r WHERE r.n = {{t}}.a + 1)",
    "update": f"{COUNTDOWN} UPDATE {{t}} SET b = -a WHERE a IN (SELECT n FROM r)",
    "update_plain_where": "WITH k AS (SELECT 2 AS n) UPDATE {t} SET b = 0 WHERE a > 1",
    "insert_after_with": f"{COUNTDOWN} INSERT INTO {{t}} SELECT n, n * 100 FROM r",
    "insert_with_in_query": f"INSERT INTO {{t}} {COUNTDOWN} SELECT n, n * 100 FROM r",
    "insert_with_both": "WITH k AS (SELECT 7 AS n) INSERT INTO {t} WITH m AS (SELECT n + 1 AS n FROM k) "
    "SELECT n, n FROM m",
    "insert_values": f"{COUNTDOWN} INSERT INTO {{t}} VALUES (9, 9)",
    "merge_update": f"{COUNTDOWN} MERGE INTO {{t}} USING r ON {{t}}.a = r.n "
    "WHEN MATCHED THEN UPDATE SET b = r.n * 7 WHEN NOT MATCHED THEN INSERT (a, b) VALUES (r.n, 0)",
    "merge_delete": "WITH s AS (SELECT a FROM {t} WHERE b IS NULL) MERGE INTO {t} USING s ON {t}.a = s.a "
    "WHEN MATCHED THEN DELETE",
}


@pytest.mark.parametrize("statement", WRITES_WITH_CTES.values(), ids=WRITES_WITH_CTES.keys())
def test_write_reads_the_queries_of_its_with_clause(cur, duck, request, statement):
    table = f"cs_with_{request.node.callspec.id}"
    make_tables(cur, duck, table)
    sql = statement.format(t=table)
    assert cur.execute(sql).rowcount == duck.execute(sql).fetchone()[0]
    assert contents(cur, table) == Counter(duck.execute(f"SELECT * FROM {table}").fetchall())


def test_explain_analyze_of_a_write_with_a_recursive_with_clause(cur, duck):
    make_tables(cur, duck, "cs_explained")
    write = f"{COUNTDOWN} DELETE FROM cs_explained WHERE a IN (SELECT n FROM r)"
    cur.execute(f"EXPLAIN ANALYZE {write}")
    duck.execute(write)
    assert cur.fetchall()[0] == ("rows changed: 4",)
    assert contents(cur, "cs_explained") == Counter(duck.execute("SELECT * FROM cs_explained").fetchall())


def test_with_query_named_as_the_changed_table_is_refused(cur, duck):
    make_tables(cur, duck, "cs_shadowed")
    with pytest.raises(recsql.NotSupportedError, match="WITH cs_shadowed: .* cannot take the name") as raised:
        cur.execute(
            "WITH cs_shadowed AS (SELECT 1 AS a) DELETE FROM cs_shadowed WHERE a IN (SELECT a FROM cs_shadowed)"
        )
    assert (raised.value.line, raised.value.column) == (1, 6)
    assert contents(cur, "cs_shadowed") == Counter(ROWS)


def test_scalar_subquery_with_its_own_with_clause(cur, duck):
    sql = "SELECT (WITH k AS (SELECT 1 AS x UNION ALL SELECT 4) SELECT max(x) FROM k) + 1 AS m"
    cur.execute(sql)
    assert cur.fetchall() == duck.execute(sql).fetchall() == [(5,)]


# ---------------------------------------------------------------------------------------------------------------
# Spark's multi-table insert
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["", COUNTDOWN + " "], ids=["plain", "with_recursive"])
def test_multi_table_insert_is_refused_and_changes_nothing(cur, duck, prefix):
    source, first, second = (f"cs_multi_{part}_{'with' if prefix else 'plain'}" for part in ("src", "one", "two"))
    make_tables(cur, duck, source, first, second)
    reading = "r" if prefix else source
    column = "n" if prefix else "a"
    with pytest.raises(recsql.NotSupportedError, match=r"multi-table insert\) is not supported"):
        cur.execute(
            f"{prefix}FROM {reading} INSERT INTO {first} SELECT {column}, {column} WHERE {column} > 1 "
            f"INSERT INTO {second} SELECT {column}, 0 WHERE {column} = 1"
        )
    assert contents(cur, first) == contents(cur, second) == Counter(ROWS)


# ---------------------------------------------------------------------------------------------------------------
# unknown functions; statements and clauses recsql does not run
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.spark
def test_unknown_function_is_a_programming_error_at_its_call(cur):
    with pytest.raises(recsql.ProgrammingError) as raised:
        cur.execute("SELECT 1 AS one,\n       current_setting('x') AS setting")
    assert raised.value.message == "unknown function current_setting"
    assert (raised.value.line, raised.value.column) == (2, 8)


@pytest.mark.spark
def test_unknown_function_in_an_insert_names_the_table(cur, duck):
    make_tables(cur, duck, "cs_unknown_function")
    with pytest.raises(recsql.ProgrammingError) as raised:
        cur.execute("INSERT INTO cs_unknown_function SELECT a, no_such_fn(b) FROM cs_unknown_function")
    assert raised.value.message == "INSERT INTO cs_unknown_function: unknown function no_such_fn"
    assert (raised.value.line, raised.value.column) == (1, 43)
    assert contents(cur, "cs_unknown_function") == Counter(ROWS)


REFUSED = {
    "TRUNCATE TABLE {t}": "TRUNCATE statements are not supported",
    "CREATE INDEX cs_index ON {t}(a)": "CREATE INDEX is not supported",
    "ALTER TABLE {t} ADD COLUMN c INT": "ALTER statements are not supported",
    "INSERT OVERWRITE TABLE {t} SELECT * FROM {t}": "OVERWRITE in INSERT is not supported",
    "INSERT INTO {t} VALUES (1, 2) ON CONFLICT DO NOTHING": "ON CONFLICT in INSERT is not supported",
    "INSERT INTO {t} BY NAME SELECT 1 AS a, 2 AS b": "BY NAME in INSERT is not supported",
    "INSERT INTO {t} REPLACE WHERE a = 1 SELECT 1, 2": "REPLACE WHERE in INSERT is not supported",
    "DELETE FROM {t} USING {t} AS o WHERE {t}.a = o.a": "USING in DELETE is not supported",
    "DELETE FROM {t} WHERE a = 1 RETURNING a": "RETURNING in DELETE is not supported",
    "UPDATE {t} SET b = 0 RETURNING a": "RETURNING in UPDATE is not supported",
    "DELETE FROM {t} LIMIT 1": "LIMIT in DELETE is not supported",
}


@pytest.mark.parametrize("statement", REFUSED.keys())
def test_statement_or_clause_recsql_does_not_run_is_refused(cur, duck, statement):
    table = f"cs_refused_{list(REFUSED).index(statement)}"
    make_tables(cur, duck, table)
    with pytest.raises(recsql.NotSupportedError) as raised:
        cur.execute(statement.format(t=table))
    assert raised.value.message == REFUSED[statement]
    assert contents(cur, table) == Counter(ROWS)
