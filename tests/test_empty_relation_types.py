"""Relations that hold no facts are typed by their rules: a recursion that a condition, an empty table or magic
sets leave without facts (in its first iterations, or at its end) answers as any other, with the column types
its rules give, in this process and on Spark, with magic sets or without.

References: DuckDB for the answer of a linear recursion, a semi-naive evaluation in plain Python for mutual
recursion, the queries themselves for their empty answers (`1 = 0`, an empty table); the declared types of the
tables for the answers' types.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from explain import explain
from strategies import under

EDGES = [(0, 1, 2), (1, 2, 3), (2, 0, 1), (2, 3, 4)]
INT = pa.int32()


def edges(rows: list[tuple[int, int, int]]) -> pa.Table:
    return pa.table([pa.array([row[i] for row in rows], INT) for i in range(3)], names=["src", "dst", "w"])


@pytest.fixture(scope="module")
def duck(conn):
    """The tables on recsql (INT columns) and on DuckDB."""
    reference = duckdb.connect()
    for name, table in {"et_edge": edges(EDGES), "et_empty": edges([])}.items():
        conn.register(name, table)
        reference.register(name, table)
    yield reference
    reference.close()


def answer(cur, sql: str, magic: str) -> tuple[list[tuple], list[str]]:
    """The rows and column types of `sql` under recsql.magic = `magic`."""
    cur.execute(f"SET recsql.magic = {magic}")
    try:
        cur.execute(sql)
        return cur.fetchall(), [column[1] for column in cur.description]
    finally:
        cur.execute("SET recsql.magic = auto")


NON_LINEAR = (
    "WITH RECURSIVE r(x, y) AS (SELECT src, dst FROM et_edge UNION SELECT a.x, b.y FROM r a JOIN r b ON a.y = b.x) "
)
MUTUAL = (
    "WITH RECURSIVE odd(x, y) AS (SELECT src, dst FROM et_empty UNION "
    "SELECT ev.x, e.dst FROM even ev JOIN et_edge e ON ev.y = e.src), "
    "even(x, y) AS (SELECT o.x, e.dst FROM odd o JOIN et_edge e ON o.y = e.src), "
    "unused AS (SELECT x, count(*) AS n FROM odd GROUP BY x) "
)
NO_FACTS = [  # (query, the types of its columns: those of the INT columns it computes from)
    pytest.param(NON_LINEAR + "SELECT x + 1 FROM r WHERE 1 = 0 AND y = 3", ["int"], id="closure restricted to nothing"),
    pytest.param(
        NON_LINEAR + "SELECT x, y FROM r WHERE 1 = 0 AND y = 3",
        ["int", "int"],
        id="closure restricted to nothing, its columns",
    ),
    pytest.param(MUTUAL + "SELECT y + 1 FROM even WHERE x = 1", ["int"], id="mutual recursion over an empty table"),
    pytest.param(MUTUAL + "SELECT x, y FROM even", ["int", "int"], id="mutual recursion over an empty table, columns"),
]


@pytest.mark.parametrize("sql, types", NO_FACTS)
@pytest.mark.parametrize("magic", ["on", "off"])
@under("local")
def test_a_recursion_without_facts_answers_nothing_with_its_types(cur, duck, sql, types, magic):
    """No rows (`1 = 0`, a recursion from an empty table), each column of the type of the INT columns it is
    computed from."""
    assert answer(cur, sql, magic) == ([], types)


@pytest.mark.parametrize("sql, types", NO_FACTS[1::2])
@under("distributed")
def test_on_spark_a_recursion_without_facts_has_the_types_of_its_rules(cur, duck, sql, types):
    assert answer(cur, sql, "on") == ([], types)


@under("local")
def test_a_sum_over_a_recursion_without_facts(cur, duck):
    """sum() of no rows is NULL, of Spark's sum type over an INT column (as when there are rows)."""
    assert answer(cur, MUTUAL + "SELECT sum(y) FROM even", "on") == ([(None,)], ["bigint"])
    assert answer(cur, "SELECT sum(dst) FROM et_empty", "on") == ([(None,)], ["bigint"])


def mutual_closure(rows: list[tuple[int, int, int]], bound: int) -> set[int]:
    """even's y values of MUTUAL_SUMS, by a semi-naive evaluation of its rules in plain Python."""
    odd, even = {(s, d) for s, d, _ in rows}, set()
    new_odd, new_even = set(odd), set()
    while new_odd or new_even:
        derived_even = {(x, y + w) for x, y in new_odd for s, _, w in rows if s == y} - even
        derived_odd = {(x, y + w) for x, y in new_even for s, _, w in rows if s == y and y < bound} - odd
        even |= derived_even
        odd |= derived_odd
        new_odd, new_even = derived_odd, derived_even
    return {y for _, y in even}


MUTUAL_SUMS = (
    "WITH RECURSIVE odd(x, y) AS (SELECT src, dst FROM et_edge UNION "
    "SELECT ev.x, ev.y + e.w FROM even ev JOIN et_edge e ON ev.y = e.src WHERE ev.y < 20), "
    "even(x, y) AS (SELECT o.x, o.y + e.w FROM odd o JOIN et_edge e ON o.y = e.src) SELECT y FROM even"
)
# magic sets put the magic relation in the recursion: the closure has no facts before its magic relation has
MAGIC_CLOSURE = (
    "WITH RECURSIVE r(x, y) AS (SELECT src, dst FROM et_edge UNION "
    "SELECT r.x, e.dst + 1 FROM r JOIN et_edge e ON r.y = e.src WHERE e.dst < 10) "
    "SELECT x FROM r WHERE y = 3"
)


@under("local")
def test_arithmetic_over_relations_without_facts_yet_is_typed_in_this_process(cur, duck):
    """Arithmetic over the columns of a relation with no facts yet (untyped until it has some) takes the
    type of the number beside it, as Spark gives it: the types are derived in Python and the whole query runs
    without Spark."""
    evaluation = "runs without Spark: the whole query in this process"
    assert evaluation in explain(cur, MUTUAL_SUMS)
    assert {y for (y,) in answer(cur, MUTUAL_SUMS, "off")[0]} == mutual_closure(EDGES, 20)
    assert evaluation in explain(cur, MAGIC_CLOSURE, magic="on") and "m_r_" in explain(cur, MAGIC_CLOSURE, magic="on")
    assert sorted(answer(cur, MAGIC_CLOSURE, "on")[0]) == sorted(duck.sql(MAGIC_CLOSURE).fetchall())
