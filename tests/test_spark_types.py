"""The column types recsql derives in Python (recsql/engine/spark_types.py, result_types.py) against Spark's
own analysis: for expressions, hand-picked and random, and for recursive strata iteration by iteration.
Where the derivation declines (NotInferred), the query runs with Spark's analysis instead; where it
answers, it must answer what Spark does."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from recsql.engine.relation_types import SETTLED
from recsql.engine.spark.runner import SparkRun
from recsql.engine.spark.types import DistributedTypes
from recsql.engine.types.result_types import InferredTypes, row_of
from recsql.engine.types.spark_types import NotInferred, expression_type
from recsql.engine.types.type_syntax import UnknownTypeName
from recsql.engine.types.type_syntax import spark_type as named_type
from recsql.planner.plan import Version
from translator import dialect

COLUMNS = {
    "i": T.IntegerType(),
    "l": T.LongType(),
    "s": T.ShortType(),
    "t": T.ByteType(),
    "d": T.DoubleType(),
    "f": T.FloatType(),
    "m": T.DecimalType(10, 2),
    "w": T.DecimalType(38, 10),
    "n": T.DecimalType(5, 0),
    "str": T.StringType(),
    "ok": T.BooleanType(),
    "day": T.DateType(),
}


@pytest.fixture(scope="module")
def typed(conn):
    """A frame with no rows and a column of each type: selectExpr on it asks Spark's analyzer."""
    schema = T.StructType([T.StructField(name, kind) for name, kind in COLUMNS.items()])
    return conn.session.spark.createDataFrame([], schema)


def spark_type(typed, sql: str) -> T.DataType:
    return typed.selectExpr(sql).schema.fields[0].dataType


def inferred_type(sql: str) -> T.DataType:
    return expression_type(dialect.parse(f"SELECT {sql}")[0].expressions[0], COLUMNS)


INFERRED = [
    "i",
    "i + l",
    "s * t",
    "i - s",
    "t + t",
    "d + i",
    "f + f",
    "f * d",
    "m + m",
    "m + i",
    "m * n",
    "w * w",
    "w + m",
    "m - l",
    "m + d",
    "-m",
    "i / l",
    "d / i",
    "i % s",
    "l div i",
    "7",
    "3000000000",
    "1.5",
    "0.05",
    "1e3",
    "'x'",
    "NULL",
    "TRUE",
    "i = l",
    "m < d",
    "str <> 'a'",
    "i IS NULL",
    "NOT ok",
    "ok AND i > 1",
    "i IN (1, 2, l)",
    "i BETWEEN 1 AND l",
    "day < DATE '2024-01-01'",
    "CAST(i AS BIGINT)",
    "CAST(i AS STRING)",
    "CAST(0 AS DECIMAL(10,2))",
    "CAST(l AS DECIMAL(5,1))",
    "CAST(m AS DOUBLE)",
    "CAST(m AS DECIMAL(12,4))",
    "CAST(NULL AS INT)",
    "0.0D",
    "10L",
    "CASE WHEN ok THEN i ELSE l END",
    "CASE WHEN ok THEN m END",
    "CASE WHEN ok THEN m ELSE i END",
    "COALESCE(i, s, l)",
    "COALESCE(m, w)",
    "COALESCE(NULL, d)",
    "COALESCE(w, -(i + w))",
    "CASE WHEN ok THEN w ELSE l + w END",
    "greatest(w, m * m)",
    "least(i, l)",
    "greatest(m, n)",
    "count(*)",
    "count(DISTINCT i)",
    "sum(i)",
    "sum(s)",
    "sum(d)",
    "sum(f)",
    "sum(m)",
    "sum(w)",
    "min(str)",
    "max(m)",
    "avg(i)",
    "avg(d)",
    "sum(i) + 1",
    "max(i) * 2",
    "m / m",
    "m / i",
    "w / n",
    "m / 7.0",
    "m + 1",
    "1 - m",
    "100.00 * m",
    "-1 * m",
    "m * 3000000000",
    "avg(m)",
    "avg(w)",
    "0.2 * avg(m)",
    "sum(m) / sum(n)",
    "day + interval '3' month",
    "day - interval '90' day",
    "day + interval '1' year",
    "extract(year FROM day)",
    "month(day)",
    "day(day)",
    "substring(str, 1, 2)",
    "str || 'x'",
    "length(str)",
    "length(str || 'é')",
    "str || CAST(i AS STRING) || NULL",
    "substr(str, 3)",
    "str LIKE 'a%'",
    "str NOT LIKE '%b_'",
    "NULL / m",
    "m / NULL",
    "NULL / i",
    "i / NULL",
    "NULL * m",
    "NULL + m",
    "m - NULL",
    "NULL + i",
    "NULL / w",
    "i + (NULL / m)",
    "-((i + (NULL / m)))",
]

DECLINED = [
    "concat(str, 'x')",
    "str || i",
    "str || d",
    "date_add(day, 1)",
    "CAST(str AS INT)",
    "CAST(d AS INT)",
    "substring(str, 0, 2)",
    "substring(str, i, 2)",
    "str LIKE 'a\\\\%'",
    "str LIKE str",
    "day + interval '1' hour",
    "extract(hour FROM day)",
    "i = str",
    "str + 1",
    "f * i",
    "upper(str)",
    "CASE WHEN ok THEN i ELSE str END",
    "sum(DISTINCT i)",
]


@pytest.mark.spark
@pytest.mark.parametrize("sql", INFERRED)
def test_inferred_type_is_spark_type(typed, sql):
    assert inferred_type(sql) == spark_type(typed, sql)


@pytest.mark.parametrize("sql", DECLINED)
def test_declines_what_it_does_not_cover(sql):
    with pytest.raises(NotInferred):
        inferred_type(sql)


@pytest.mark.parametrize("name", ["DECIMAL(x, 2)", "DECIMAL(10, y)", "DECIMAL(p)"])
def test_a_type_parameter_that_is_not_a_number_is_left_to_spark(name):
    """Python reads only numbers as a type's parameters; any other name goes to Spark's parser (CREATE TABLE)."""
    with pytest.raises(UnknownTypeName):
        named_type(dialect.parse_one(f"SELECT CAST(NULL AS {name})").expressions[0].to)


NUMERIC = ["i", "l", "s", "t", "d", "f", "m", "w", "n"]


def expressions(depth: int) -> st.SearchStrategy[str]:
    leaves = st.sampled_from(NUMERIC + ["1", "7", "3000000000", "2.5", "0.125", "NULL", "1e2"])
    if depth == 0:
        return leaves
    inner = expressions(depth - 1)
    return st.one_of(
        leaves,
        st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "%", "div"]), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        st.tuples(inner, inner, inner).map(lambda t: f"CASE WHEN {t[0]} > 0 THEN {t[1]} ELSE {t[2]} END"),
        st.tuples(inner, inner).map(lambda t: f"coalesce({t[0]}, {t[1]})"),
        st.tuples(inner, st.sampled_from(["INT", "BIGINT", "DOUBLE", "DECIMAL(12,3)", "STRING"])).map(
            lambda t: f"CAST({t[0]} AS {t[1]})"
        ),
        inner.map(lambda e: f"-({e})"),
    )


@pytest.mark.spark
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sql=expressions(3))
def test_random_expressions(typed, sql):
    for expression in [sql] + [f"{aggregate}({sql})" for aggregate in ("sum", "min", "avg", "count")]:
        try:
            inferred = inferred_type(expression)
        except NotInferred:
            continue
        assert inferred == spark_type(typed, expression), expression


# --- recursive strata, iteration by iteration ---------------------------------------------------------------

TABLES = {
    "ty_edge": pa.table(
        {
            "src": pa.array([1, 2, 3, 4, 2], pa.int32()),
            "dst": pa.array([2, 3, 4, 5, 5], pa.int32()),
            "w": pa.array([1, 2, 3, 1, 7], pa.int32()),
            "big": pa.array([10, 20, 30, 40, 50], pa.int64()),
            "dbl": pa.array([0.5, 1.25, 2.0, 0.125, 1.0]),
            "dec": pa.array([Decimal(x) for x in ("1.10", "2.25", "0.05", "3.00", "1.00")], pa.decimal128(10, 2)),
        }
    ),
}

# a cycle of three relations, one of them double from its exit rule: each delta's type turns with the cycle
CYCLE = (
    "WITH RECURSIVE a(x) AS (SELECT src FROM ty_edge UNION SELECT x FROM c), b(x) AS (SELECT dbl FROM ty_edge "
    "UNION SELECT x FROM a), c(x) AS (SELECT x FROM b) SELECT * FROM c"
)
STRATA = [
    "WITH RECURSIVE r(x, y) AS (SELECT src, dst FROM ty_edge UNION SELECT r.x, e.dst FROM r JOIN ty_edge e "
    "ON r.y = e.src) "
    "SELECT * FROM r WHERE x = "
    "1",
    "WITH RECURSIVE sp(n, min() AS d) AS (SELECT 1, 0 UNION SELECT e.dst, sp.d + e.big FROM sp, "
    "ty_edge e WHERE sp.n = e.src) "
    "SELECT * FROM sp",
    "WITH RECURSIVE sp(n, min() AS d) AS (SELECT 1, CAST(0 AS DECIMAL(10,2)) UNION SELECT e.dst, sp.d + e.dec "
    "FROM sp, ty_edge e WHERE sp.n = e.src) SELECT * FROM sp",
    "WITH RECURSIVE c(n, count() AS k) AS (SELECT 1, 1 UNION SELECT e.dst, c.k FROM c, ty_edge e WHERE c.n = e.src) "
    "SELECT * FROM c",
    "WITH RECURSIVE s(n, sum() AS v) AS (SELECT dst, dec FROM ty_edge UNION SELECT e.src, s.v FROM s, ty_edge e "
    "WHERE s.n = e.dst) SELECT * FROM s",
    "WITH RECURSIVE s(n, sum() AS v) AS (SELECT dst, dbl FROM ty_edge UNION SELECT e.src, s.v * 0.5 FROM s, "
    "ty_edge e "
    "WHERE s.n = e.dst) SELECT * FROM s",
    "WITH RECURSIVE m(n, max() AS v) AS (SELECT 1, 0 UNION SELECT e.dst, m.v + e.w FROM m, ty_edge e "
    "WHERE m.n = e.src) "
    "SELECT * FROM "
    "m",
    "WITH RECURSIVE p(n, k) AS (SELECT 1, 0 UNION ALL SELECT e.dst, p.k + e.big FROM p JOIN ty_edge e ON e.src = p.n) "
    "SELECT * FROM p",
    "WITH RECURSIVE a(x, y) AS (SELECT src, dst FROM ty_edge UNION SELECT b.x, e.dst FROM b JOIN "
    "ty_edge e ON b.y = e.src), "
    "b(x, y) AS (SELECT x, y FROM a UNION SELECT a.x, e.dst * 2 FROM a JOIN ty_edge e ON a.y = e.src) SELECT * FROM b",
    "WITH RECURSIVE r(n, v) AS (SELECT id, 0 FROM range(3) UNION SELECT r.n + 1, r.v + 1 FROM r WHERE r.n < 5) "
    "SELECT * FROM r",
    # arithmetic over a relation the exit rules give no facts (its columns untyped until they do)
    "WITH RECURSIVE a(x, v, q, r) AS (SELECT src, dec, dbl, w FROM ty_edge UNION SELECT b.x, b.v * e.dec, "
    "b.q / e.w, b.r % e.w FROM b JOIN ty_edge e ON b.x = e.src), b(x, v, q, r) AS (SELECT e.dst, a.v + e.w, "
    "a.q - e.big, a.r DIV 2 FROM a JOIN ty_edge e ON a.x = e.src) SELECT * FROM b",
    CYCLE,
]


def recursive_strata_types(conn, sql: str) -> Iterator[tuple[InferredTypes, DistributedTypes]]:
    """For each recursive stratum of `sql`: its types as derived here and as Spark analyses them."""
    for name, table in TABLES.items():
        conn.register(name, table)
    session = conn.session
    plan = session.plan(dialect.parse(sql)[0])
    with session.scratch.statement():
        run = SparkRun(session.spark, session.catalog, session.settings, plan, session.scratch)
        run.answer()  # the relations the strata read from outside, for Spark's analysis
        timezone = session.spark.conf.get("spark.sql.session.timeZone")
        recursive = [stratum for stratum in plan.strata if stratum.component.recursive]
        assert recursive
        for stratum in recursive:
            inferred = InferredTypes(plan.program, stratum, lambda name: row_of(run.schema(name)), timezone)
            yield inferred, DistributedTypes(run, plan.program, stratum, timezone)


@pytest.mark.spark
@pytest.mark.parametrize("sql", STRATA)
def test_stratum_types_follow_spark_iteration_by_iteration(conn, sql):
    """Each relation's full, delta and old types after each of the first iterations and once settled:
    derived == analysed."""
    for inferred, analysed in recursive_strata_types(conn, sql):
        for iteration in (*range(8), SETTLED):
            assert inferred.at(iteration) == analysed.at(iteration), f"iteration {iteration}"


@pytest.mark.spark
def test_types_that_turn_with_a_cycle_are_stepped_once_round_it(conn):
    """Types that repeat with a period longer than one iteration stop being stepped once round the period,
    however far on they are asked for (Spark's analysis of each step is costly)."""
    ((inferred, analysed),) = recursive_strata_types(conn, CYCLE)
    deltas = [inferred.at(iteration)["a"][Version.DELTA] for iteration in range(1, 4)]
    assert len(set(deltas)) > 1  # the delta's types turn
    for types in (inferred, analysed):
        assert types.at(SETTLED + 2) == types.at(SETTLED - 1)
        assert len(types.steps) < 8
