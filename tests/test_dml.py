"""DELETE, UPDATE and MERGE INTO on recsql's Delta tables, time travel (VERSION / TIMESTAMP AS OF) and DESCRIBE HISTORY.

Property tests generate small tables (a INT, b INT and c STRING, the last two nullable; duplicate rows and NULLs) and
statements from a small grammar whose text means the same in Spark SQL and in DuckDB, run each statement on recsql
and on an in-memory DuckDB holding the same rows, and compare the tables afterwards (as multisets) and the rowcounts.
DuckDB is the reference for everything but one rule: whether a MERGE violates the cardinality rule. In recsql's
contract, a target row that matches more than one source row fails a MERGE that has any WHEN MATCHED clause. DuckDB
only fails when such a row is actually changed twice. So the test finds these cases with its own query, and expects
recsql.DataError and an unchanged table.

The hand-written tests cover the rest of the contract: rowcounts, subqueries, aliases, INSERT * / UPDATE SET * (by
column name, as in Spark and Delta; DuckDB binds them by position), statements that fail at run time, the versions
and history of a table, and errors that name the table. Their expected rows are worked out by hand from the data.
Tables carry a `dml_` prefix.
"""

from __future__ import annotations

import datetime
import time
from collections import Counter
from dataclasses import dataclass

import duckdb
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import recsql

# ---------------------------------------------------------------------------------------------------------------
# Rows: multisets of tuples, compared sorted with NULLs first
# ---------------------------------------------------------------------------------------------------------------


def null_first(row):
    return tuple((0, 0) if value is None else (1, value) for value in row)


def bag(rows):
    """Rows as a sorted list of tuples (NULLs sort first): equal lists are equal multisets."""
    return sorted((tuple(row) for row in rows), key=null_first)


def rows_of(cur, table, columns="a, b, c"):
    cur.execute(f"SELECT {columns} FROM {table}")
    return bag(cur.fetchall())


def literal(value):
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def create(cur, name, rows, schema="a INT, b INT, c STRING"):
    """`name` afresh: CREATE TABLE (version 0), then its rows with one INSERT ... VALUES (version 1)."""
    cur.execute(f"DROP TABLE IF EXISTS {name}")
    cur.execute(f"CREATE TABLE {name} ({schema})")
    if rows:
        values = ", ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in rows)
        cur.execute(f"INSERT INTO {name} VALUES {values}")
        assert cur.rowcount == len(rows)


def history(cur, table):
    cur.execute(f"DESCRIBE HISTORY {table}")
    return cur.fetchall()


def raised(cur, sql, kinds, names=()):
    """Run `sql`, which must fail with one of `kinds`; the message names every one of `names` and carries no Java."""
    with pytest.raises(kinds) as info:
        cur.execute(sql)
    text = str(info.value)
    assert "py4j" not in text.lower() and "java" not in text.lower() and "org.apache" not in text.lower(), text
    for name in names:
        assert name in text, f"{sql}\nthe error does not name {name!r}: {text}"
    return info.value


# ---------------------------------------------------------------------------------------------------------------
# Generators: tables and statements whose text is valid, with the same meaning, in Spark SQL and DuckDB
# ---------------------------------------------------------------------------------------------------------------

STRINGS = ("a", "b", "p", "x")
VALUES = st.integers(min_value=0, max_value=6)  # a small domain: equal keys, duplicate rows
CONSTANTS = st.integers(min_value=-1, max_value=7)
COMPARISONS = ("=", "<>", "<", "<=", ">", ">=")
ROWS = st.tuples(VALUES, st.none() | VALUES, st.none() | st.sampled_from(STRINGS))


@st.composite
def tables(draw, min_rows=0, max_rows=30):
    """`min_rows` to `max_rows` rows of (a, b, c), some of them repeated exactly (tables are bags)."""
    rows = draw(st.lists(ROWS, min_size=min_rows, max_size=max_rows))
    if rows and len(rows) < max_rows:
        rows += draw(st.lists(st.sampled_from(rows), max_size=min(5, max_rows - len(rows))))
    return draw(st.permutations(rows))


@st.composite
def source_tables(draw):
    """A MERGE source: one row per key a, or (two times in three) any rows: a target row matching several of them
    makes a MERGE with a WHEN MATCHED clause fail."""
    rows = draw(tables(min_rows=1, max_rows=10))
    if draw(st.integers(min_value=0, max_value=2)) == 0:
        rows = list({row[0]: row for row in rows}.values())
    return rows


def predicates(int_columns, string_columns):
    """Boolean SQL over the columns: comparisons, IS [NOT] NULL, [NOT] IN lists (with NULL), [NOT] BETWEEN,
    combined with AND / OR / NOT; every operand in parentheses, so precedence plays no part."""
    int_column = st.sampled_from(int_columns)
    string_column = st.sampled_from(string_columns)
    negation = st.sampled_from(["", "NOT "])
    comparison = st.sampled_from(COMPARISONS)
    int_items = st.lists(CONSTANTS.map(str) | st.just("NULL"), min_size=1, max_size=3)
    string_items = st.lists(st.sampled_from(STRINGS).map(literal), min_size=1, max_size=3)
    atoms = st.one_of(
        st.builds(lambda c, op, n: f"{c} {op} {n}", int_column, comparison, CONSTANTS),
        st.builds(lambda c, op, d: f"{c} {op} {d}", int_column, comparison, int_column),
        st.builds(lambda c, op, s: f"{c} {op} {literal(s)}", string_column, comparison, st.sampled_from(STRINGS)),
        st.builds(lambda c, n: f"{c} IS {n}NULL", st.sampled_from(int_columns + string_columns), negation),
        st.builds(lambda c, n, items: f"{c} {n}IN ({', '.join(items)})", int_column, negation, int_items),
        st.builds(lambda c, n, items: f"{c} {n}IN ({', '.join(items)})", string_column, negation, string_items),
        st.builds(lambda c, n, lo, hi: f"{c} {n}BETWEEN {lo} AND {hi}", int_column, negation, CONSTANTS, CONSTANTS),
    )
    return st.recursive(
        atoms,
        lambda inner: st.one_of(
            st.builds(lambda p, q: f"({p} AND {q})", inner, inner),
            st.builds(lambda p, q: f"({p} OR {q})", inner, inner),
            inner.map(lambda p: f"NOT ({p})"),
        ),
        max_leaves=4,
    )


TABLE_PREDICATES = predicates(["a", "b"], ["c"])
TARGET_PREDICATES = predicates(["t.a", "t.b"], ["t.c"])
SOURCE_PREDICATES = predicates(["s.a", "s.b"], ["s.c"])
PAIR_PREDICATES = predicates(["t.a", "t.b", "s.a", "s.b"], ["t.c", "s.c"])

# right-hand sides, by target column: UPDATE, MERGE's WHEN MATCHED / NOT MATCHED BY SOURCE UPDATE, MERGE's INSERT
UPDATE_EXPRESSIONS = {
    "a": ["a + 1", "a - 2", "a * 2", "b", "coalesce(b, a)", "3"],
    "b": ["NULL", "b + 1", "a", "a + b", "5", "CASE WHEN c IS NULL THEN 0 ELSE b END"],
    "c": ["'x'", "NULL", "c || 'y'", "upper(c)", "CASE WHEN b > 2 THEN 'big' ELSE c END"],
}
MATCHED_EXPRESSIONS = {
    "a": ["s.a", "t.a + 10", "s.b"],
    "b": ["s.b", "t.b + s.b", "NULL", "t.b + 1"],
    "c": ["s.c", "'m'", "t.c || s.c"],
}
BY_SOURCE_EXPRESSIONS = {
    "a": ["t.a + 20"],
    "b": ["NULL", "t.b + 1", "-1"],
    "c": ["'gone'", "NULL", "upper(t.c)"],
}
INSERT_EXPRESSIONS = {
    "a": ["s.a", "s.a + 100"],
    "b": ["s.b", "NULL", "s.a * 2"],
    "c": ["s.c", "'new'"],
}


@st.composite
def assignments(draw, expressions):
    """1 to 3 distinct target columns in any order, each with a right-hand side."""
    columns = draw(st.permutations(["a", "b", "c"]))[: draw(st.integers(min_value=1, max_value=3))]
    return tuple((column, draw(st.sampled_from(expressions[column]))) for column in columns)


def optional_where(draw):
    """A predicate three times in four (without WHERE, every row is deleted or updated)."""
    return draw(TABLE_PREDICATES) if draw(st.sampled_from([True, True, True, False])) else None


@st.composite
def updates(draw):
    sets = draw(assignments(UPDATE_EXPRESSIONS))
    where = optional_where(draw)
    return "UPDATE dml_pu SET " + ", ".join(f"{c} = {e}" for c, e in sets) + (f" WHERE {where}" if where else "")


@st.composite
def deletes(draw):
    where = optional_where(draw)
    return "DELETE FROM dml_pd" + (f" WHERE {where}" if where else "")


MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE = "MATCHED", "NOT MATCHED", "NOT MATCHED BY SOURCE"


@dataclass(frozen=True)
class Clause:
    kind: str  # MATCHED, NOT MATCHED or NOT MATCHED BY SOURCE
    condition: str | None
    action: str  # DELETE, UPDATE or INSERT
    assignments: tuple[tuple[str, str], ...] = ()  # (target column, expression); empty with `star`
    star: bool = False  # UPDATE SET * / INSERT *

    @property
    def sql(self) -> str:
        when = f"WHEN {self.kind}" + (f" AND {self.condition}" if self.condition else "")
        if self.action == "DELETE":
            then = "DELETE"
        elif self.action == "UPDATE":
            then = "UPDATE SET *" if self.star else "UPDATE SET " + ", ".join(f"{c} = {e}" for c, e in self.assignments)
        else:
            columns = ", ".join(c for c, _ in self.assignments)
            values = ", ".join(e for _, e in self.assignments)
            then = "INSERT *" if self.star else f"INSERT ({columns}) VALUES ({values})"
        return f"{when} THEN {then}"


@dataclass(frozen=True)
class Merge:
    source: str  # dml_ps or a parenthesized query over it
    on: str
    clauses: tuple[Clause, ...]

    @property
    def sql(self) -> str:
        return f"MERGE INTO dml_pm AS t USING {self.source} AS s ON {self.on} " + " ".join(c.sql for c in self.clauses)

    @property
    def has_matched_clause(self) -> bool:
        return any(clause.kind == MATCHED for clause in self.clauses)

    @property
    def multiple_matches(self) -> str:
        """DuckDB: how many target rows match more than one source row."""
        return (
            f"SELECT count(*) FROM (SELECT t.rowid FROM dml_pm AS t, {self.source} AS s WHERE {self.on} "
            "GROUP BY t.rowid HAVING count(*) > 1)"
        )


@st.composite
def clause_lists(draw, kind, actions, conditions):
    """0 to 2 clauses of one kind; as Spark requires, every one but the last has a condition."""
    count = draw(st.integers(min_value=0, max_value=2))
    clauses = []
    for position in range(count):
        last = position == count - 1
        condition = draw(st.none() | conditions) if last else draw(conditions)
        clauses.append(draw(actions(kind, condition)))
    return clauses


def matched_actions(kind, condition):
    return st.one_of(
        st.just(Clause(kind, condition, "DELETE")),
        st.just(Clause(kind, condition, "UPDATE", star=True)),
        assignments(MATCHED_EXPRESSIONS).map(lambda sets: Clause(kind, condition, "UPDATE", sets)),
    )


def insert_actions(kind, condition):
    return st.one_of(
        st.just(Clause(kind, condition, "INSERT", star=True)),
        assignments(INSERT_EXPRESSIONS).map(lambda sets: Clause(kind, condition, "INSERT", sets)),
    )


def by_source_actions(kind, condition):
    return st.one_of(
        st.just(Clause(kind, condition, "DELETE")),
        assignments(BY_SOURCE_EXPRESSIONS).map(lambda sets: Clause(kind, condition, "UPDATE", sets)),
    )


@st.composite
def merges(draw):
    source = draw(st.sampled_from(["dml_ps", None]))
    if source is None:
        source = f"(SELECT a, b, c FROM dml_ps WHERE {draw(TABLE_PREDICATES)})"
    extra = draw(st.none() | PAIR_PREDICATES)
    on = "t.a = s.a" + (f" AND {extra}" if extra else "")
    clauses = (
        draw(clause_lists(MATCHED, matched_actions, PAIR_PREDICATES))
        + draw(clause_lists(NOT_MATCHED, insert_actions, SOURCE_PREDICATES))
        + draw(clause_lists(NOT_MATCHED_BY_SOURCE, by_source_actions, TARGET_PREDICATES))
    )
    if not clauses:
        clauses = [draw(by_source_actions(NOT_MATCHED_BY_SOURCE, draw(st.none() | TARGET_PREDICATES)))]
    return Merge(source, on, tuple(clauses))


# ---------------------------------------------------------------------------------------------------------------
# The reference: DuckDB with the same rows
# ---------------------------------------------------------------------------------------------------------------


def reference(tables_rows):
    """An in-memory DuckDB with a table (a INTEGER, b INTEGER, c VARCHAR) for every `name: rows`."""
    duck = duckdb.connect()
    for name, rows in tables_rows.items():
        duck.execute(f"CREATE TABLE {name} (a INTEGER, b INTEGER, c VARCHAR)")
        if rows:
            duck.executemany(f"INSERT INTO {name} VALUES (?, ?, ?)", [list(row) for row in rows])
    return duck


def reference_change(duck, sql, table):
    """Run the statement on DuckDB: (its rowcount, the table's rows afterwards)."""
    count = duck.execute(sql).fetchall()[0][0]
    return count, rows_of(duck, table)


def load(cur, name, rows):
    """The generated rows into recsql: CREATE TABLE, then executemany."""
    cur.execute(f"DROP TABLE IF EXISTS {name}")
    cur.execute(f"CREATE TABLE {name} (a INT, b INT, c STRING)")
    if rows:
        cur.executemany(f"INSERT INTO {name} VALUES (?, ?, ?)", rows)
        assert cur.rowcount == len(rows)


def differences(got, expected):
    g, e = Counter(got), Counter(expected)
    return f"missing: {list((e - g).elements())[:10]}\nextra: {list((g - e).elements())[:10]}"


def property_settings(examples):
    return settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------------------------------------------------
# Property tests against DuckDB
# ---------------------------------------------------------------------------------------------------------------


def check_against_duckdb(conn, table: str, rows: list[tuple], sql: str) -> None:
    """Run one DELETE / UPDATE on `rows` in DuckDB and in recsql: the same rowcount, the same rows."""
    duck = reference({table: rows})
    try:
        expected_count, expected = reference_change(duck, sql, table)
    finally:
        duck.close()
    cur = conn.cursor()
    try:
        load(cur, table, rows)
        cur.execute(sql)
        assert cur.rowcount == expected_count, sql
        got = rows_of(cur, table)
        assert got == expected, f"{sql}\n{differences(got, expected)}"
    finally:
        cur.close()


@property_settings(4)
@given(rows=tables(min_rows=3), sql=deletes())
@example(rows=[], sql="DELETE FROM dml_pd WHERE a > 2")
def test_delete_matches_duckdb(conn, rows, sql):
    check_against_duckdb(conn, "dml_pd", rows, sql)


@pytest.mark.spark
@property_settings(4)
@given(rows=tables(min_rows=3), sql=updates())
@example(rows=[], sql="UPDATE dml_pu SET a = a + 1")
def test_update_matches_duckdb(conn, rows, sql):
    check_against_duckdb(conn, "dml_pu", rows, sql)


@pytest.mark.spark
@property_settings(6)
@given(target=tables(min_rows=2), source=source_tables(), merge=merges())
@example(
    target=[],
    source=[(1, 2, "x"), (1, 2, "x")],
    merge=Merge(  # no target row: both duplicates are inserted
        "dml_ps", "t.a = s.a", (Clause(MATCHED, None, "DELETE"), Clause(NOT_MATCHED, None, "INSERT", star=True))
    ),
)
def test_merge_matches_duckdb(conn, target, source, merge):
    duck = reference({"dml_pm": target, "dml_ps": source})
    try:
        violation = merge.has_matched_clause and duck.execute(merge.multiple_matches).fetchall()[0][0] > 0
        if violation:  # the contract: DataError, and the table stays as it was
            expected_count, expected = None, bag(target)
        else:  # every target row matches at most one source row: DuckDB's MERGE is the contract's
            expected_count, expected = reference_change(duck, merge.sql, "dml_pm")
    finally:
        duck.close()
    cur = conn.cursor()
    try:
        load(cur, "dml_pm", target)
        load(cur, "dml_ps", source)
        if violation:
            raised(cur, merge.sql, recsql.DataError)
        else:
            cur.execute(merge.sql)
            assert cur.rowcount == expected_count, merge.sql
        got = rows_of(cur, "dml_pm")
        assert got == expected, f"{merge.sql}\n{differences(got, expected)}"
    finally:
        cur.close()


# ---------------------------------------------------------------------------------------------------------------
# Rowcounts, DELETE, UPDATE
# ---------------------------------------------------------------------------------------------------------------


def test_rowcount_of_each_statement(cur):
    """INSERT ... SELECT and MERGE here; the tests of DELETE and UPDATE check their rowcounts."""
    create(cur, "dml_rc", [(1, 1, "a"), (2, 2, "b"), (3, None, "c")])
    cur.execute("INSERT INTO dml_rc SELECT 4, 0, CAST(NULL AS STRING) FROM dml_rc WHERE a >= 2")
    assert cur.rowcount == 2
    # 1 is deleted, both 4s updated, 9 inserted; 3 matches but no clause applies to it, 2 matches nothing
    cur.execute(
        "MERGE INTO dml_rc AS t USING (SELECT 1 AS a UNION ALL SELECT 4 UNION ALL SELECT 9 UNION ALL SELECT 3) AS s "
        "ON t.a = s.a WHEN MATCHED AND t.a = 1 THEN DELETE WHEN MATCHED AND t.a = 4 THEN UPDATE SET c = 'm' "
        "WHEN NOT MATCHED THEN INSERT (a) VALUES (s.a)"
    )
    assert cur.rowcount == 1 + 2 + 1
    assert rows_of(cur, "dml_rc") == bag([(2, 2, "b"), (3, None, "c"), (4, 0, "m"), (4, 0, "m"), (9, None, None)])


def test_delete_keeps_rows_where_the_predicate_is_null_and_without_where_empties_the_table(cur):
    create(cur, "dml_del", [(1, 1, "a"), (2, None, "b"), (3, 3, None), (3, 3, None), (4, None, None)])
    cur.execute("DELETE FROM dml_del WHERE b > 1")
    assert cur.rowcount == 2
    assert rows_of(cur, "dml_del") == bag([(1, 1, "a"), (2, None, "b"), (4, None, None)])
    cur.execute("DELETE FROM dml_del")
    assert cur.rowcount == 3
    cur.execute("SELECT count(*) FROM dml_del")
    assert cur.fetchall() == [(0,)]


def test_delete_with_in_and_exists_subqueries(cur):
    create(cur, "dml_dsub", [(1, 10, "a"), (2, 20, "b"), (3, 30, "c"), (4, None, "d"), (5, 50, None)])
    create(cur, "dml_dkeys", [(2,), (4,), (None,)], schema="x INT")
    cur.execute("DELETE FROM dml_dsub WHERE a IN (SELECT x FROM dml_dkeys)")
    assert cur.rowcount == 2
    cur.execute("DELETE FROM dml_dsub WHERE a NOT IN (SELECT x FROM dml_dkeys)")  # NULL among the keys: NULL
    assert cur.rowcount == 0
    assert rows_of(cur, "dml_dsub") == bag([(1, 10, "a"), (3, 30, "c"), (5, 50, None)])
    cur.execute("DELETE FROM dml_dsub WHERE EXISTS (SELECT 1 FROM dml_dkeys k WHERE k.x + 1 = dml_dsub.a)")
    assert cur.rowcount == 2  # 3 (key 2) and 5 (key 4)
    assert rows_of(cur, "dml_dsub") == [(1, 10, "a")]


@pytest.mark.spark
def test_update_right_hand_sides_see_the_old_row_and_duplicates_stay(cur):
    create(cur, "dml_upd", [(1, 10, "p"), (1, 10, "p"), (2, 20, "q"), (3, None, None)])
    cur.execute("UPDATE dml_upd SET a = b, b = a, c = c || '!' WHERE a < 3")
    assert cur.rowcount == 3
    assert rows_of(cur, "dml_upd") == bag([(10, 1, "p!"), (10, 1, "p!"), (20, 2, "q!"), (3, None, None)])


def test_update_with_subqueries_in_where(cur):
    create(cur, "dml_usub", [(1, 1, "a"), (2, 2, "b"), (3, 3, "c"), (3, 3, "c")])
    create(cur, "dml_ukeys", [(1, "one"), (3, "three")], schema="x INT, tag STRING")
    cur.execute("UPDATE dml_usub SET b = b * 100 WHERE a IN (SELECT x FROM dml_ukeys)")
    assert cur.rowcount == 3
    cur.execute("UPDATE dml_usub SET c = 'none' WHERE NOT EXISTS (SELECT 1 FROM dml_ukeys k WHERE k.x = dml_usub.a)")
    assert cur.rowcount == 1
    assert rows_of(cur, "dml_usub") == bag([(1, 100, "a"), (2, 2, "none"), (3, 300, "c"), (3, 300, "c")])


# ---------------------------------------------------------------------------------------------------------------
# MERGE
# ---------------------------------------------------------------------------------------------------------------


def test_merge_with_a_subquery_source_and_aliases(cur):
    create(cur, "dml_mt", [(1, 10, "p"), (2, 20, "q"), (3, None, "r"), (4, 40, None), (4, 40, None)])
    create(
        cur,
        "dml_msrc",
        [(1, -1, "neg"), (2, 22, "pos"), (5, 55, "new"), (6, None, "nullv"), (7, 77, None)],
        schema="k INT, v INT, note STRING",
    )
    cur.execute(
        "MERGE INTO dml_mt AS x USING (SELECT k AS a, v, note FROM dml_msrc WHERE v IS NOT NULL) AS y ON x.a = y.a "
        "WHEN MATCHED AND y.v < 0 THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET b = y.v, c = y.note "
        "WHEN NOT MATCHED AND y.note IS NOT NULL THEN INSERT (a, c) VALUES (y.a, y.note) "
        "WHEN NOT MATCHED BY SOURCE AND x.b IS NULL THEN DELETE "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET b = x.b + 1"
    )
    # deleted: 1 (v < 0), 3 (by source, b NULL); updated: 2, both 4s (by source); inserted: 5 (7 has no note;
    # 6 is filtered out of the source), its b NULL as INSERT lists no b
    assert cur.rowcount == 2 + 3 + 1
    assert rows_of(cur, "dml_mt") == bag([(2, 22, "pos"), (4, 41, None), (4, 41, None), (5, None, "new")])


def test_merge_insert_star_and_update_set_star_go_by_column_name(cur):
    create(cur, "dml_star", [(1, 10, "p"), (2, 20, "q")])
    cur.execute(
        "MERGE INTO dml_star AS t USING (SELECT 'new' AS c, 30 AS b, 3 AS a UNION ALL SELECT 'upd', 11, 1) AS s "
        "ON t.a = s.a WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    assert cur.rowcount == 2
    assert rows_of(cur, "dml_star") == bag([(1, 11, "upd"), (2, 20, "q"), (3, 30, "new")])


CARDINALITY_TARGET = [(1, 10, "p"), (2, 20, "q")]
CARDINALITY_SOURCE = [(1, 1, "x"), (1, 2, "y"), (3, 3, "z")]  # two source rows for target row 1


@pytest.mark.parametrize(
    "clauses",
    [
        # unconditional and alone, a DELETE would be unambiguous (Delta allows it): the contract does not
        "WHEN MATCHED THEN DELETE",
        # only one of the two matches satisfies the condition: still a violation (DuckDB would accept it)
        "WHEN MATCHED AND s.b = 2 THEN UPDATE SET b = s.b WHEN NOT MATCHED THEN INSERT *",
        # neither match satisfies the condition: the statement has a WHEN MATCHED clause all the same
        "WHEN MATCHED AND t.b > 100 THEN DELETE WHEN NOT MATCHED BY SOURCE THEN DELETE",
    ],
    ids=["delete", "condition_for_one_match", "condition_for_no_match"],
)
def test_merge_cardinality_violation_is_a_data_error_and_changes_nothing(cur, clauses):
    create(cur, "dml_card", CARDINALITY_TARGET)
    create(cur, "dml_card_src", CARDINALITY_SOURCE)
    before = history(cur, "dml_card")
    raised(cur, f"MERGE INTO dml_card AS t USING dml_card_src AS s ON t.a = s.a {clauses}", recsql.DataError)
    assert rows_of(cur, "dml_card") == bag(CARDINALITY_TARGET)
    assert history(cur, "dml_card") == before  # no version was added


@pytest.mark.parametrize(
    "clauses, rowcount, rows",
    [
        ("WHEN NOT MATCHED THEN INSERT *", 1, CARDINALITY_TARGET + [(3, 3, "z")]),
        ("WHEN NOT MATCHED BY SOURCE THEN DELETE", 1, [(1, 10, "p")]),
    ],
    ids=["insert", "by_source_delete"],
)
def test_merge_multiple_matches_without_a_matched_clause_are_allowed(cur, clauses, rowcount, rows):
    create(cur, "dml_card", CARDINALITY_TARGET)
    create(cur, "dml_card_src", CARDINALITY_SOURCE)
    cur.execute(f"MERGE INTO dml_card AS t USING dml_card_src AS s ON t.a = s.a {clauses}")
    assert cur.rowcount == rowcount
    assert rows_of(cur, "dml_card") == bag(rows)


# ---------------------------------------------------------------------------------------------------------------
# A failing statement changes nothing
# ---------------------------------------------------------------------------------------------------------------

FAIL_ROWS = [(1, 10, "p"), (2, None, "q"), (3, 30, None), (4, 40, "r"), (4, 40, "r")]
FAIL_SOURCE = [(1, 5, "x"), (3, 6, "y"), (9, 7, "z")]


@pytest.mark.spark
@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE dml_fail SET a = assert_true(a < 0)",
        "UPDATE dml_fail SET b = CAST(c AS INT)",  # 'p' is no number (a run-time type error)
        "UPDATE dml_fail SET b = array(1, 2)",  # no array into an INT column (a type error found before running)
        "DELETE FROM dml_fail WHERE assert_true(a < 3) IS NULL",
        # the matched rows are updated without error, the source row 9 then fails the insert
        (
            "MERGE INTO dml_fail AS t USING dml_fail_src AS s ON t.a = s.a WHEN MATCHED THEN UPDATE SET c = 'changed' "
            "WHEN NOT MATCHED THEN INSERT (a, b) VALUES (s.a, CASE WHEN assert_true(s.a < 0) IS NULL THEN 1 END)"
        ),
        "INSERT INTO dml_fail SELECT a + 10, b, c FROM dml_fail WHERE assert_true(a < 3) IS NULL",
        "CREATE OR REPLACE TABLE dml_fail AS SELECT a, b, c FROM dml_fail WHERE assert_true(a < 3) IS NULL",
    ],
    ids=["update_set", "update_cast", "update_type", "delete", "merge_insert", "insert_select", "create_or_replace"],
)
def test_failing_statement_leaves_the_table_unchanged(cur, sql):
    create(cur, "dml_fail", FAIL_ROWS)
    create(cur, "dml_fail_src", FAIL_SOURCE)
    before = history(cur, "dml_fail")
    raised(cur, sql, recsql.Error)
    assert rows_of(cur, "dml_fail") == bag(FAIL_ROWS)
    assert history(cur, "dml_fail") == before  # no version was added
    cur.execute("DESCRIBE dml_fail")
    assert cur.fetchall() == [("a", "int"), ("b", "int"), ("c", "string")]


# ---------------------------------------------------------------------------------------------------------------
# Time travel and history
# ---------------------------------------------------------------------------------------------------------------

# (statement, its operation in DESCRIBE HISTORY, the table's rows after it): version k is the k-th statement
VERSIONS = [
    ("CREATE TABLE dml_tt (a INT, b INT, c STRING)", "CREATE TABLE", []),
    (
        "INSERT INTO dml_tt VALUES (1, 10, 'p'), (2, 20, 'q'), (3, NULL, 'r'), (3, NULL, 'r')",
        "INSERT",
        [(1, 10, "p"), (2, 20, "q"), (3, None, "r"), (3, None, "r")],
    ),
    (
        "UPDATE dml_tt SET b = a * 100 WHERE a >= 2",
        "UPDATE",
        [(1, 10, "p"), (2, 200, "q"), (3, 300, "r"), (3, 300, "r")],
    ),
    ("DELETE FROM dml_tt WHERE a = 1", "DELETE", [(2, 200, "q"), (3, 300, "r"), (3, 300, "r")]),
    (
        (
            "MERGE INTO dml_tt AS t USING (SELECT 2 AS a, 'merged' AS c UNION ALL SELECT 4, 'new') AS s ON t.a = s.a "
            "WHEN MATCHED THEN UPDATE SET c = s.c WHEN NOT MATCHED THEN INSERT (a, c) VALUES (s.a, s.c)"
        ),
        "MERGE",
        [(2, 200, "merged"), (3, 300, "r"), (3, 300, "r"), (4, None, "new")],
    ),
    (
        "CREATE OR REPLACE TABLE dml_tt AS SELECT a, b, c FROM dml_tt WHERE a < 4",
        "CREATE OR REPLACE TABLE",
        [(2, 200, "merged"), (3, 300, "r"), (3, 300, "r")],
    ),
    (
        "INSERT INTO dml_tt SELECT a + 10, b, c FROM dml_tt WHERE a = 2",
        "INSERT",
        [(2, 200, "merged"), (3, 300, "r"), (3, 300, "r"), (12, 200, "merged")],
    ),
]
LATEST = len(VERSIONS) - 1
PAUSE = 0.3  # seconds on each side of an instant taken between two commits (timestamps are in milliseconds)


def local_text(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")


def as_local(value) -> datetime.datetime:
    """A history timestamp as a naive local datetime (whether it comes as naive, aware or text)."""
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value)
    assert isinstance(value, datetime.datetime), type(value)
    return value.astimezone().replace(tzinfo=None) if value.tzinfo is not None else value


@dataclass
class TimeTravel:
    windows: list  # per version: (local time before the statement, local time after it)
    instants: list  # per version but the latest: a local time after its commit and before the next one


@pytest.fixture(scope="module")
def time_travel(conn):
    """dml_tt through the statements of VERSIONS, about 2 * PAUSE seconds apart."""
    cur = conn.cursor()
    try:
        cur.execute("DROP TABLE IF EXISTS dml_tt")
        windows, instants = [], []
        for version, (sql, _, _) in enumerate(VERSIONS):
            if version:
                time.sleep(PAUSE)
                instants.append(datetime.datetime.now())
                time.sleep(PAUSE)
            started = datetime.datetime.now()
            cur.execute(sql)
            windows.append((started, datetime.datetime.now()))
        return TimeTravel(windows, instants)
    finally:
        cur.close()


def test_version_as_of_reads_each_version(cur, time_travel):
    for version, (_, _, rows) in enumerate(VERSIONS):
        assert rows_of(cur, f"dml_tt VERSION AS OF {version}") == bag(rows), version
    assert rows_of(cur, "dml_tt") == bag(VERSIONS[LATEST][2])


def test_version_as_of_with_aliases_and_joined_with_the_current_table(cur, time_travel):
    cur.execute("SELECT count(*) FROM dml_tt VERSION AS OF 1")
    assert cur.fetchall() == [(len(VERSIONS[1][2]),)]
    assert rows_of(cur, "dml_tt VERSION AS OF 4 AS v WHERE v.c = 'new'", "v.a, v.b, v.c") == [(4, None, "new")]
    assert rows_of(cur, "dml_tt VERSION AS OF 2 v WHERE v.b > 100", "v.a, v.b, v.c") == bag(
        [row for row in VERSIONS[2][2] if row[1] is not None and row[1] > 100]
    )
    cur.execute("SELECT o.a, o.b, o.c, n.c FROM dml_tt VERSION AS OF 2 AS o JOIN dml_tt AS n ON o.a = n.a")
    expected = [old + (new[2],) for old in VERSIONS[2][2] for new in VERSIONS[LATEST][2] if old[0] == new[0]]
    assert bag(cur.fetchall()) == bag(expected)
    cur.execute("SELECT n.a FROM dml_tt n LEFT JOIN dml_tt VERSION AS OF 1 o ON n.a = o.a WHERE o.a IS NULL")
    assert bag(cur.fetchall()) == bag(
        [(row[0],) for row in VERSIONS[LATEST][2] if row[0] not in {old[0] for old in VERSIONS[1][2]}]
    )


def test_timestamp_as_of_between_two_commits(cur, time_travel):
    for version, instant in enumerate(time_travel.instants):
        expected = bag(VERSIONS[version][2])
        assert rows_of(cur, f"dml_tt TIMESTAMP AS OF '{local_text(instant)}'") == expected, (version, instant)
    instant = local_text(time_travel.instants[2])
    assert rows_of(cur, f"dml_tt TIMESTAMP AS OF '{instant}' AS w WHERE w.b > 100", "w.a, w.b, w.c") == bag(
        [row for row in VERSIONS[2][2] if row[1] is not None and row[1] > 100]
    )


def test_describe_history_lists_the_versions_newest_first(cur, time_travel):
    cur.execute("DESCRIBE HISTORY dml_tt")
    assert [column[0] for column in cur.description] == ["version", "timestamp", "operation", "statement"]
    rows = cur.fetchall()
    assert [(version, operation, statement) for version, _, operation, statement in rows] == [
        (version, VERSIONS[version][1], VERSIONS[version][0]) for version in range(LATEST, -1, -1)
    ]
    stamps = [as_local(stamp) for _, stamp, _, _ in rows]
    assert stamps == sorted(stamps, reverse=True) and len(set(stamps)) == len(stamps), stamps
    slack = datetime.timedelta(seconds=1)  # a file system's coarse modification times
    for (version, _, _, _), stamp in zip(rows, stamps):
        started, finished = time_travel.windows[version]
        assert started - slack <= stamp <= finished + slack, (version, stamp, started, finished)


def test_timestamp_as_of_a_history_timestamp_reads_that_version(cur, time_travel):
    for version, stamp, _, _ in history(cur, "dml_tt"):
        assert rows_of(cur, f"dml_tt TIMESTAMP AS OF '{local_text(as_local(stamp))}'") == bag(VERSIONS[version][2])


@pytest.mark.parametrize(
    "clause",
    [f"VERSION AS OF {LATEST + 1}", "VERSION AS OF 1000", "TIMESTAMP AS OF '2000-01-01 00:00:00'"],
    ids=["next_version", "far_version", "before_creation"],
)
def test_a_version_that_does_not_exist_is_an_error_naming_the_table(cur, time_travel, clause):
    raised(cur, f"SELECT a, b, c FROM dml_tt {clause}", recsql.ProgrammingError, ["dml_tt"])


def test_create_or_replace_reading_the_table_itself(cur):
    original = [(100, 1, "x"), (499, 2, None), (500, 3, "y"), (900, None, "z"), (100, 1, "x")]
    create(cur, "dml_self", original)
    sql = "CREATE OR REPLACE TABLE dml_self AS SELECT a, b FROM dml_self WHERE a < 500"
    cur.execute(sql)
    assert rows_of(cur, "dml_self", "a, b") == bag([(100, 1), (100, 1), (499, 2)])
    cur.execute("DESCRIBE dml_self")
    assert cur.fetchall() == [("a", "int"), ("b", "int")]
    assert rows_of(cur, "dml_self VERSION AS OF 1") == bag(original)
    assert [(version, operation) for version, _, operation, _ in history(cur, "dml_self")] == [
        (2, "CREATE OR REPLACE TABLE"),
        (1, "INSERT"),
        (0, "CREATE TABLE"),
    ]
    assert history(cur, "dml_self")[0][3] == sql


def test_create_table_as_select_is_version_zero(cur):
    cur.execute("DROP TABLE IF EXISTS dml_ctas")
    sql = "CREATE TABLE dml_ctas AS SELECT id AS a, id * 2 AS b FROM range(3)"
    cur.execute(sql)
    assert [(version, operation, statement) for version, _, operation, statement in history(cur, "dml_ctas")] == [
        (0, "CREATE TABLE AS SELECT", sql)
    ]
    assert rows_of(cur, "dml_ctas VERSION AS OF 0", "a, b") == [(0, 0), (1, 2), (2, 4)]


# ---------------------------------------------------------------------------------------------------------------
# Errors name the table
# ---------------------------------------------------------------------------------------------------------------

ERROR_BASE = [(1, 10, "p"), (2, 20, "q")]


@pytest.fixture(scope="module")
def error_tables(conn):
    cur = conn.cursor()
    try:
        cur.execute("DROP VIEW IF EXISTS dml_err_view")
        create(cur, "dml_err_base", ERROR_BASE)
        cur.execute("CREATE VIEW dml_err_view AS SELECT a, b, c FROM dml_err_base")
        for name in ("dml_nowhere", "dml_nowhere_src"):
            cur.execute(f"DROP TABLE IF EXISTS {name}")
    finally:
        cur.close()


@pytest.mark.parametrize(
    "sql, name",
    [
        ("DELETE FROM dml_nowhere WHERE a = 1", "dml_nowhere"),
        ("DELETE FROM dml_nowhere", "dml_nowhere"),
        ("UPDATE dml_nowhere SET a = 1", "dml_nowhere"),
        ("MERGE INTO dml_nowhere AS t USING dml_err_base AS s ON t.a = s.a WHEN MATCHED THEN DELETE", "dml_nowhere"),
        (
            "MERGE INTO dml_err_base AS t USING dml_nowhere_src AS s ON t.a = s.a WHEN MATCHED THEN DELETE",
            "dml_nowhere_src",
        ),
        ("DESCRIBE HISTORY dml_nowhere", "dml_nowhere"),
        ("SELECT * FROM dml_nowhere VERSION AS OF 0", "dml_nowhere"),
    ],
    ids=["delete_where", "delete", "update", "merge_target", "merge_source", "history", "version_as_of"],
)
def test_a_missing_table_is_named(cur, error_tables, sql, name):
    raised(cur, sql, recsql.ProgrammingError, [name])


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM dml_err_base WHERE nosuch = 1",
        "UPDATE dml_err_base SET b = 0 WHERE nosuch = 1",
    ],
    ids=["delete", "update"],
)
def test_an_unknown_column_offers_the_tables_columns_and_nothing_internal(cur, error_tables, sql):
    error = raised(cur, sql, recsql.ProgrammingError, ["nosuch", "dml_err_base.a", "dml_err_base.c"])
    assert "__recsql" not in str(error), str(error)
    assert rows_of(cur, "dml_err_base") == bag(ERROR_BASE)


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM dml_err_view WHERE a = 1",
        "UPDATE dml_err_view SET b = 0",
        "MERGE INTO dml_err_view AS t USING dml_err_base AS s ON t.a = s.a WHEN MATCHED THEN DELETE",
    ],
    ids=["delete", "update", "merge"],
)
def test_changing_a_view_is_an_error_naming_it(cur, error_tables, sql):
    raised(cur, sql, (recsql.ProgrammingError, recsql.NotSupportedError), ["dml_err_view"])
    assert rows_of(cur, "dml_err_base") == bag(ERROR_BASE)
    assert rows_of(cur, "dml_err_view") == bag(ERROR_BASE)


def test_vacuum_removes_the_files_only_older_versions_read(cur):
    """An insert, a delete and an update each leave files only older versions read; VACUUM ... RETAIN 0
    HOURS removes them (the current version reads on), a version that read them can no longer be."""
    cur.execute("DROP TABLE IF EXISTS dml_vacuum")
    cur.execute("CREATE TABLE dml_vacuum (a INT, b INT, c STRING)")
    cur.execute("INSERT INTO dml_vacuum VALUES (1, 10, 'x'), (2, 20, 'y'), (3, 30, 'z')")
    cur.execute("DELETE FROM dml_vacuum WHERE a = 2")
    cur.execute("UPDATE dml_vacuum SET c = 'w' WHERE a = 3")
    cur.execute("VACUUM dml_vacuum RETAIN 0 HOURS")
    assert cur.rowcount >= 2
    assert rows_of(cur, "dml_vacuum") == bag([(1, 10, "x"), (3, 30, "w")])
    with pytest.raises(recsql.ProgrammingError, match="VACUUM removed its files"):
        cur.execute("SELECT * FROM dml_vacuum VERSION AS OF 1")
    cur.execute("VACUUM dml_vacuum")
    assert cur.rowcount == 0


# ---------------------------------------------------------------------------------------------------------------
# INSERT with a column list: the values go to the columns listed, in the list's order; the others get NULL
# ---------------------------------------------------------------------------------------------------------------

LISTED_INSERTS = [
    "INSERT INTO {t} (c, a) VALUES ('x', 1), ('y', 2)",
    "INSERT INTO {t} (b, a, c) VALUES (7, 3, NULL)",
    "INSERT INTO {t} (a) SELECT a + 10 FROM {t} WHERE a < 3",
    "INSERT INTO {t} (c, b, a) SELECT c, a, b FROM {t} WHERE b IS NOT NULL",
]


@pytest.mark.strategies("local", "distributed")
def test_insert_with_a_column_list_matches_duckdb(cur, strategy):
    reference = duckdb.connect()
    create = "CREATE TABLE {t} (a INT, b INT, c VARCHAR)"
    cur.execute("DROP TABLE IF EXISTS dml_listed")
    cur.execute(create.format(t="dml_listed").replace("VARCHAR", "STRING"))
    reference.execute(create.format(t="dml_listed"))
    for statement in LISTED_INSERTS:
        cur.execute(statement.format(t="dml_listed"))
        reference.execute(statement.format(t="dml_listed"))
        cur.execute("SELECT a, b, c FROM dml_listed")
        assert bag(cur.fetchall()) == bag(reference.execute("SELECT a, b, c FROM dml_listed").fetchall()), statement


def test_executemany_with_a_column_list(cur):
    cur.execute("DROP TABLE IF EXISTS dml_listed_many")
    cur.execute("CREATE TABLE dml_listed_many (a INT, b INT, c STRING)")
    cur.executemany("INSERT INTO dml_listed_many (c, a) VALUES (?, ?)", [("p", 1), ("q", 2), (None, 3)])
    cur.execute("SELECT a, b, c FROM dml_listed_many ORDER BY a")
    assert cur.fetchall() == [(1, None, "p"), (2, None, "q"), (3, None, None)]


@pytest.mark.parametrize(
    "statement, message",
    [
        ("INSERT INTO dml_listed_bad (a, d) VALUES (1, 2)", "lists column 'd', which the table does not have"),
        ("INSERT INTO dml_listed_bad (a, a) VALUES (1, 2)", "lists column 'a' twice"),
        (
            "INSERT INTO dml_listed_bad (a, b) VALUES (1, 2, 3)",
            "row 1 has 3 values but INSERT INTO dml_listed_bad lists",
        ),
        ("INSERT INTO dml_listed_bad (a, b) SELECT 1", "the query gives 1 values but INSERT INTO dml_listed_bad"),
    ],
)
def test_a_bad_column_list_is_refused_and_changes_nothing(cur, statement, message):
    cur.execute("CREATE TABLE IF NOT EXISTS dml_listed_bad (a INT, b INT, c STRING)")
    with pytest.raises(recsql.ProgrammingError, match=message):
        cur.execute(statement)
    cur.execute("SELECT count(*) FROM dml_listed_bad")
    assert cur.fetchall() == [(0,)]
