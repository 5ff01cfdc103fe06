"""Random small databases and random SQL over them, for the differential tests (tests/test_differential.py).

Nothing here imports recsql. A database is 2-4 tables of INT, BIGINT and STRING columns (no floating point): edge
tables `dq_e*` (src, dst, w) over a few nodes, with NULLs, cycles, self-loops, parallel edges (same ends, another
weight) and duplicate rows, and plain tables `dq_t*` (a, b, s). Three kinds of query are drawn over it:

- `queries`: SQL whose answer DuckDB computes the way recsql documents it: chained CTEs, linear recursion under
  UNION (every value of a recursive column comes from a finite domain, so it terminates on cycles) and under a
  bound (a counter column and `WHERE r.n < k`, UNION ALL or UNION), joins, grouping, DISTINCT, subqueries of every
  kind, negation over relations computed before the recursion, set operations, ORDER BY every column with an
  explicit NULL order, LIMIT / OFFSET; the answer's columns may be DOUBLE (`/` of integers, avg: compared
  rounded). `Query.spark_sql` is for recsql, `Query.duck_sql` the same query in DuckDB's spelling (`a div b` is
  `a // b` there: both truncate toward zero).
- `programs`: mutual and non-linear recursion under UNION (DuckDB gives another answer there), a `Program` of
  Datalog-like rules that renders as SQL and evaluates itself as a plain-Python least fixpoint.
- `header_aggregates`: RaSQL's `min()` / `max()` / `count()` / `sum()` in a recursive CTE's header over
  non-negative weights (`max`, `count` and `sum` on acyclic edges only: they diverge on a cycle), with their
  answer from a plain-Python fixpoint.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
from hypothesis import strategies as st

INT, STR, DOUBLE = "int", "str", "double"  # DOUBLE: only in the answer's columns (`/`, avg), never compared
ARROW = {"INT": pa.int32(), "BIGINT": pa.int64(), "STRING": pa.string()}
KIND = {"INT": INT, "BIGINT": INT, "STRING": STR}
DIV = "\x00div\x00"  # integer division: `div` in Spark SQL, `//` in DuckDB

NODES = st.integers(0, 5)
WEIGHTS = st.integers(0, 9)
STRINGS = st.sampled_from(["a", "b", "ab", "B", "", "x y"])


def nullable(values: st.SearchStrategy) -> st.SearchStrategy:
    """`values` or NULL (about one value in four)."""
    return st.one_of(values, values, values, st.none())


# ---------------------------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    name: str
    types: tuple[tuple[str, str], ...]  # (column, SQL type)
    rows: tuple[tuple, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.types)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(KIND[sql_type] for _, sql_type in self.types)

    def arrow(self) -> pa.Table:
        return pa.table(
            {
                name: pa.array([row[i] for row in self.rows], ARROW[sql_type])
                for i, (name, sql_type) in enumerate(self.types)
            }
        )

    def __str__(self) -> str:
        header = ", ".join(f"{name} {sql_type}" for name, sql_type in self.types)
        return f"{self.name}({header}): {list(self.rows)}"


EDGE_TYPES = (("src", "INT"), ("dst", "INT"), ("w", "BIGINT"))
PLAIN_TYPES = (("a", "INT"), ("b", "BIGINT"), ("s", "STRING"))


@st.composite
def edge_rows(
    draw, nulls: bool = True, acyclic: bool = False, min_size: int = 0, max_size: int = 12
) -> tuple[tuple, ...]:
    """(src, dst, w) rows: random edges over NODES (cycles and self-loops come by themselves on six nodes), plus
    parallel edges (an edge again with another weight) and exact duplicates of some; w never NULL (>= 0).
    `acyclic`: every edge goes from a smaller node to a larger one."""
    node = nullable(NODES) if nulls else NODES
    pairs = draw(st.lists(st.tuples(node, node), min_size=min_size, max_size=max_size))
    if acyclic:
        pairs = [(a, b) if a is None or b is None or a < b else (b, a) if b < a else (a, a + 1) for a, b in pairs]
    rows = [(a, b, draw(WEIGHTS)) for a, b in pairs]
    if rows:
        copies = draw(st.lists(st.tuples(st.integers(0, len(rows) - 1), st.booleans()), max_size=3))
        rows += [rows[i][:2] + ((draw(WEIGHTS),) if reweigh else rows[i][2:]) for i, reweigh in copies]
    return tuple(rows[:max_size])


@st.composite
def plain_rows(draw) -> tuple[tuple, ...]:
    """(a, b, s) rows with NULLs and duplicates; `a` shares its values with the nodes of the edge tables."""
    row = st.tuples(nullable(st.integers(-1, 6)), nullable(st.integers(0, 20)), nullable(STRINGS))
    rows = draw(st.lists(row, max_size=10))
    if rows:
        rows += [rows[i] for i in draw(st.lists(st.integers(0, len(rows) - 1), max_size=2))]
    return tuple(rows)


@st.composite
def databases(draw) -> tuple[Table, ...]:
    """1-2 edge tables and 1-2 plain tables."""
    edges = [Table(f"dq_e{i + 1}", EDGE_TYPES, draw(edge_rows())) for i in range(draw(st.integers(1, 2)))]
    plain = [Table(f"dq_t{i + 1}", PLAIN_TYPES, draw(plain_rows())) for i in range(draw(st.integers(1, 2)))]
    return tuple(edges + plain)


# ---------------------------------------------------------------------------------------------------------------
# Queries compared with DuckDB
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Relation:
    """What a FROM may read: a table or a CTE, its columns and their kinds (INT or STR)."""

    name: str
    columns: tuple[str, ...]
    kinds: tuple[str, ...]

    def of(self, kind: str) -> list[str]:
        return [c for c, k in zip(self.columns, self.kinds) if k == kind]


@dataclass(frozen=True)
class Query:
    sql: str
    ordered: bool

    @property
    def duck_sql(self) -> str:
        return self.sql.replace(DIV, "//")

    @property
    def spark_sql(self) -> str:
        return self.sql.replace(DIV, "div")


Scope = list[tuple[str, Relation]]  # (alias, relation) visible to an expression


def columns_of(scope: Scope, kind: str) -> list[str]:
    return [f"{alias}.{column}" for alias, relation in scope for column in relation.of(kind)]


def clamp(expr: str) -> str:
    """An integer expression bounded to -9..9 (NULL stays NULL): a finite domain for recursion under UNION."""
    return f"CASE WHEN {expr} > 9 THEN 9 WHEN {expr} < -9 THEN -9 ELSE {expr} END"


class QueryBuilder:
    """Draws one query over `relations` (the database's tables); every choice is a hypothesis draw, so it shrinks.

    Expressions are typed by kind; `finite` asks for a value drawn from a finite domain (+ - * clamped, strings
    cut to 3 characters), as the columns of a recursion under UNION need; `rels` are the relations a FROM or a
    subquery may read (never the recursive CTE being defined: its only reference is the recursive branch's FROM)."""

    def __init__(self, draw: Callable, relations: list[Relation]):
        self.draw = draw
        self.tables = relations
        self.aliases = itertools.count(1)
        # `||`, length(), upper() and IS DISTINCT FROM send the relation reading them to Spark (recsql derives
        # no Spark type for them in process): in some queries only, so that most run in process, and fast
        self.spark_functions = self.chance(0.3)

    def alias(self) -> str:
        return f"x{next(self.aliases)}"

    def choose(self, options: list):
        return self.draw(st.sampled_from(options))

    def chance(self, p: float) -> bool:
        """True with about probability `p` (shrinks to False)."""
        return self.draw(st.integers(0, 99)) < p * 100

    # -- expressions ------------------------------------------------------------------------------------------

    def expr(self, kind: str, scope: Scope, rels: list[Relation], depth: int = 2, finite: bool = False) -> str:
        if kind == DOUBLE:  # Spark's `/` of integers is a DOUBLE, and so is DuckDB's
            return f"({self.int_expr(scope, rels, depth, finite)} / {self.choose([2, 3, -4])})"
        return (self.int_expr if kind == INT else self.str_expr)(scope, rels, depth, finite)

    def int_expr(self, scope: Scope, rels: list[Relation], depth: int, finite: bool) -> str:
        columns = columns_of(scope, INT)
        leaves = ["column"] * 4 * bool(columns) + ["literal", "null"]
        inner = ["arith", "arith", "div", "mod", "neg", "case", "coalesce"] + ["length"] * self.spark_functions
        choice = self.choose(leaves + (inner + ["scalar"] * bool(rels) if depth > 0 else []))
        sub = lambda kind=INT: self.expr(kind, scope, rels, depth - 1, finite)  # noqa: E731
        if choice == "column":
            return self.choose(columns)
        if choice == "literal":
            return str(self.draw(st.integers(-2, 6)))
        if choice == "null":
            return "CAST(NULL AS INT)"
        if choice == "arith":
            expr = f"({sub()} {self.choose(['+', '-', '*'])} {sub()})"
            return clamp(expr) if finite else expr
        if choice == "div":
            return f"({sub()} {DIV} {self.choose([2, 3, -2])})"
        if choice == "mod":
            return f"({sub()} % {self.choose([2, 3, -4])})"
        if choice == "neg":
            return f"(- {sub()})"
        if choice == "case":
            return self.case(INT, scope, rels, depth, finite)
        if choice == "coalesce":
            return f"coalesce({sub()}, {sub()})"
        if choice == "length":
            return f"length({sub(STR)})"
        return self.scalar_subquery(INT, scope, rels)

    def str_expr(self, scope: Scope, rels: list[Relation], depth: int, finite: bool) -> str:
        columns = columns_of(scope, STR)
        leaves = ["column"] * 4 * bool(columns) + ["literal", "null"]
        inner = ["case", "coalesce", "cast", "cut"] + ["concat", "upper"] * self.spark_functions
        choice = self.choose(leaves + (inner + ["scalar"] * bool(rels) if depth > 0 else []))
        sub = lambda kind=STR: self.expr(kind, scope, rels, depth - 1, finite)  # noqa: E731
        if choice == "column":
            return self.choose(columns)
        if choice == "literal":
            return "'" + self.draw(STRINGS) + "'"
        if choice == "null":
            return "CAST(NULL AS STRING)"
        if choice == "concat":
            expr = f"({sub()} || {sub()})"
            return f"substr({expr}, 1, 3)" if finite else expr
        if choice == "cut":
            return f"substr({sub()}, 1, {self.draw(st.integers(0, 2))})"
        if choice == "case":
            return self.case(STR, scope, rels, depth, finite)
        if choice == "coalesce":
            return f"coalesce({sub()}, {sub()})"
        if choice == "cast":
            return f"CAST({sub(INT)} AS STRING)"
        if choice == "upper":
            return f"upper({sub()})"
        return self.scalar_subquery(STR, scope, rels)

    def case(self, kind: str, scope: Scope, rels: list[Relation], depth: int, finite: bool) -> str:
        # recsql refuses EXISTS / IN but as a condition of WHERE: in a CASE, rarely
        conditions = rels if self.chance(0.1) else []
        whens = " ".join(
            f"WHEN {self.pred(scope, conditions, depth - 1)} THEN {self.expr(kind, scope, rels, depth - 1, finite)}"
            for _ in range(self.draw(st.integers(1, 2)))
        )
        otherwise = f" ELSE {self.expr(kind, scope, rels, depth - 1, finite)}" if self.chance(0.7) else ""
        return f"CASE {whens}{otherwise} END"

    def pred(self, scope: Scope, rels: list[Relation], depth: int = 1) -> str:
        """A condition (three-valued: NULLs everywhere)."""
        choices = ["compare"] * 4 + ["is_null", "between", "in_list"] + ["distinct"] * self.spark_functions
        if depth > 0:
            choices += ["and", "or", "not"]
            if rels:
                choices += ["exists", "exists", "in_query", "in_query", "scalar_compare"]
        choice = self.choose(choices)
        kind = self.choose([INT, INT, STR])
        sub = lambda: self.expr(kind, scope, rels, max(depth - 1, 0))  # noqa: E731
        if choice == "compare":
            left, op, right = sub(), self.choose(["=", "<>", "<", "<=", ">", ">="]), sub()
            if right == left and self.chance(0.75):  # with few columns, `x = x` would be most comparisons
                right = sub()
            return f"{left} {op} {right}"
        if choice == "is_null":
            return f"{sub()} IS {self.choose(['', 'NOT '])}NULL"
        if choice == "between":
            return f"{sub()} BETWEEN {sub()} AND {sub()}"
        if choice == "in_list":
            items = ", ".join(sub() for _ in range(self.draw(st.integers(1, 3))))
            return f"{sub()} {self.choose(['', 'NOT '])}IN ({items})"
        if choice == "distinct":
            return f"{sub()} IS {self.choose(['', 'NOT '])}DISTINCT FROM {sub()}"
        if choice in ("and", "or"):
            return f"({self.pred(scope, rels, depth - 1)} {choice.upper()} {self.pred(scope, rels, depth - 1)})"
        if choice == "not":
            return f"NOT ({self.pred(scope, rels, depth - 1)})"
        if choice == "exists":
            return f"{self.choose(['', 'NOT '])}EXISTS ({self.subquery(kind, scope, rels)})"
        if choice == "in_query":
            return f"{sub()} {self.choose(['', 'NOT '])}IN ({self.subquery(kind, scope, rels)})"
        op = self.choose(["=", "<>", "<", ">="])
        return f"{sub()} {op} {self.scalar_subquery(kind, scope, rels)}"

    # -- subqueries -------------------------------------------------------------------------------------------

    def subquery(self, kind: str, outer: Scope, rels: list[Relation]) -> str:
        """A one-column subquery for [NOT] EXISTS / [NOT] IN: uncorrelated, correlated through an equality, or
        through any condition on both scopes; sometimes with a WITH of its own."""
        relation, prefix = self.subquery_source(outer, rels)
        alias = self.alias()
        inner: Scope = [(alias, relation)]
        conditions = []
        if outer and self.chance(0.6):
            conditions.append(self.correlation(inner, outer, rels, equality=self.chance(0.7)))
        if self.chance(0.5):
            conditions.append(self.pred(inner, [], 1))
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        return f"{prefix}SELECT {self.expr(kind, inner, [], 1)} FROM {relation.name} {alias}{where}"

    def scalar_subquery(self, kind: str, outer: Scope, rels: list[Relation]) -> str:
        """An aggregate over a relation, correlated through an equality or not (one row, always)."""
        relation, prefix = self.subquery_source(outer, rels)
        alias = self.alias()
        inner: Scope = [(alias, relation)]
        conditions = []
        if outer and self.chance(0.6):
            conditions.append(self.correlation(inner, outer, rels, equality=True))
        if self.chance(0.4):
            conditions.append(self.pred(inner, [], 1))
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        return f"({prefix}SELECT {self.aggregate(kind, inner)} FROM {relation.name} {alias}{where})"

    def subquery_source(self, outer: Scope, rels: list[Relation]) -> tuple[Relation, str]:
        """The relation a subquery reads, and its own `WITH ... ` if it has one (a CTE over a relation, which may
        read the outer query's columns in a WHERE equality)."""
        relation = self.choose(rels)
        if not self.chance(0.15):
            return relation, ""
        alias = self.alias()
        scope: Scope = [(alias, relation)]
        kinds = [self.choose([INT, STR]) for _ in range(self.draw(st.integers(1, 2)))]
        items = ", ".join(self.expr(k, scope, [], 1) for k in kinds)
        conditions = [self.pred(scope, [], 1)] if self.chance(0.5) else []
        if outer and self.chance(0.5):
            conditions.append(self.correlation(scope, outer, [], equality=True))
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        name = f"w{next(self.aliases)}"
        columns = tuple(f"c{i}" for i in range(len(kinds)))
        cte = f"WITH {name}({', '.join(columns)}) AS (SELECT {items} FROM {relation.name} {alias}{where}) "
        return Relation(name, columns, tuple(kinds)), cte

    def correlation(self, inner: Scope, outer: Scope, rels: list[Relation], equality: bool) -> str:
        """A condition tying the subquery to the outer query: inner column = outer column (what recsql
        decorrelates everywhere), or any condition over both."""
        kinds = [k for k in (INT, STR) if columns_of(inner, k) and columns_of(outer, k)]
        if not equality or not kinds:
            return self.pred(inner + outer, [], 1)
        kind = kinds[0] if self.chance(0.8) else kinds[-1]
        return f"{self.choose(columns_of(inner, kind))} = {self.choose(columns_of(outer, kind))}"

    def aggregate(self, kind: str, scope: Scope) -> str:
        if kind == DOUBLE:
            return self.choose([f"avg({self.expr(INT, scope, [], 1)})", f"sum({self.expr(DOUBLE, scope, [], 1)})"])
        arg = self.expr(kind, scope, [], 1)
        if kind == STR:
            return f"{self.choose(['min', 'max'])}({arg})"
        choice = self.choose(["count(*)", "count", "count_distinct", "sum", "min", "max"])
        if choice == "count(*)":
            return choice
        if choice == "count_distinct":
            return f"count(DISTINCT {arg})"
        return f"{choice}({arg})"

    # -- SELECT blocks ----------------------------------------------------------------------------------------

    def from_clause(self, rels: list[Relation]) -> tuple[str, Scope]:
        """One relation, or two joined (inner with ON, LEFT with ON, or a comma and the condition in WHERE)."""
        first, alias = self.choose(rels), self.alias()
        scope: Scope = [(alias, first)]
        text = f"{first.name} {alias}"
        if self.chance(0.45):
            second, other = self.choose(rels), self.alias()
            joined: Scope = scope + [(other, second)]
            join = self.choose(["JOIN", "LEFT JOIN", ","] * 3 + ["FULL JOIN", "RIGHT JOIN"])
            if join == ",":
                text += f", {second.name} {other}"
            elif join in ("FULL JOIN", "RIGHT JOIN"):  # run as Spark SQL, which takes no subquery in their ON
                text += f" {join} {second.name} {other} ON {self.equality(scope, [(other, second)])}"
            else:
                text += f" {join} {second.name} {other} ON {self.join_condition(scope, [(other, second)], rels)}"
            scope = joined
        return text, scope

    def join_condition(self, left: Scope, right: Scope, rels: list[Relation]) -> str:
        """An equality of columns (integers where both sides have some), maybe with another condition."""
        kinds = [k for k in (INT, STR) if columns_of(left, k) and columns_of(right, k)]
        if not kinds:
            return self.pred(left + right, [], 1)
        condition = f"{self.choose(columns_of(left, kinds[0]))} = {self.choose(columns_of(right, kinds[0]))}"
        if self.chance(0.25):  # a subquery in ON: rarely (recsql refuses them in a LEFT JOIN's)
            condition += f" AND {self.pred(left + right, rels if self.chance(0.1) else [], 1)}"
        return condition

    def equality(self, left: Scope, right: Scope) -> str:
        """An equality of a column of each side (TRUE where they share no kind)."""
        kinds = [k for k in (INT, STR) if columns_of(left, k) and columns_of(right, k)]
        if not kinds:
            return "TRUE"
        return f"{self.choose(columns_of(left, kinds[0]))} = {self.choose(columns_of(right, kinds[0]))}"

    def window(self, scope: Scope) -> str:
        """An integer window function whose value ties cannot change: a rank, or an aggregate over a partition
        (its whole, or its rows up to the current one's peers)."""
        partition = f"PARTITION BY {self.choose(columns_of(scope, INT) + columns_of(scope, STR))}"
        order = f"ORDER BY {self.expr(INT, scope, [], 1)} {self.choose(['ASC', 'DESC'])}"
        call = self.choose(["rank()", "dense_rank()", "count(*)", f"sum({self.expr(INT, scope, [], 1)})"])
        if call in ("rank()", "dense_rank()"):  # a rank needs an order
            over = self.choose([order, f"{partition} {order}"])
        else:
            over = self.choose([partition, order, f"{partition} {order}"])
        return f"{call} OVER ({over})"

    def select(self, rels: list[Relation], kinds: list[str], distinct: bool = True) -> str:
        """SELECT [DISTINCT] of `kinds` columns named c0, c1, ..., plain or grouped; an integer column may be a
        window function."""
        from_text, scope = self.from_clause(rels)
        where = f" WHERE {self.pred(scope, rels, 2)}" if self.chance(0.5) else ""
        if self.chance(0.3):
            return self.grouped(scope, rels, kinds, from_text, where)
        items = ", ".join(
            f"{self.window(scope) if k == INT and self.chance(0.1) else self.expr(k, scope, rels)} AS c{i}"
            for i, k in enumerate(kinds)
        )
        unique = "DISTINCT " if distinct and self.chance(0.2) else ""
        return f"SELECT {unique}{items} FROM {from_text}{where}"

    def grouped(self, scope: Scope, rels: list[Relation], kinds: list[str], from_text: str, where: str) -> str:
        """GROUP BY some output columns (none: one row), the others aggregates; maybe a HAVING."""
        items, groups = [], []
        for i, kind in enumerate(kinds):
            if columns_of(scope, kind) and self.chance(0.5):
                expr = self.group_key(kind, scope)
                groups.append(expr)
                items.append(f"{expr} AS c{i}")
            else:
                items.append(f"{self.aggregate(kind, scope)} AS c{i}")
        group_by = f" GROUP BY {', '.join(groups)}" if groups else ""
        having = ""
        if self.chance(0.3):
            op, bound = self.choose([">", "<=", "<>"]), self.draw(st.integers(0, 3))
            having = f" HAVING {self.aggregate(INT, scope)} {op} {bound}"
        if groups and self.chance(0.2):  # grouping sets: subtotals, and the total
            keys = ", ".join(groups)
            group_by = " GROUP BY " + self.choose(
                [f"ROLLUP ({keys})", f"CUBE ({keys})", f"GROUPING SETS (({keys}), ({groups[0]}), ())"]
            )
            # over no rows the total is one row in DuckDB (as the standard has it), none in Spark
            having = f"{having} AND count(*) > 0" if having else " HAVING count(*) > 0"
        return f"SELECT {', '.join(items)} FROM {from_text}{where}{group_by}{having}"

    def group_key(self, kind: str, scope: Scope) -> str:
        """A column, or an expression of one (never a bare integer, which GROUP BY reads as a position)."""
        column = self.choose(columns_of(scope, kind))
        return self.choose(
            [
                column,
                column,
                f"coalesce({column}, {self.expr(kind, [], [], 0)})",
                f"({column} % 3)" if kind == INT else f"upper({column})",
            ]
        )

    def set_expression(self, rels: list[Relation], kinds: list[str]) -> str:
        """One SELECT, or two or three combined with UNION [ALL] / INTERSECT / EXCEPT (the first two sometimes in
        parentheses; else INTERSECT binds tighter, as in Spark and DuckDB)."""
        parts = [self.select(rels, kinds) for _ in range(self.choose([1, 1, 2, 2, 3]))]
        text = parts[0]
        for i, part in enumerate(parts[1:]):
            op = self.choose(["UNION", "UNION ALL", "INTERSECT", "EXCEPT"] * 3 + ["INTERSECT ALL", "EXCEPT ALL"])
            if i == 1 and self.chance(0.5):
                text = f"({text})"
            text = f"{text} {op} {part}"
        return text

    # -- CTEs -------------------------------------------------------------------------------------------------

    def plain_cte(self, name: str, rels: list[Relation]) -> tuple[str, Relation]:
        kinds = self.kinds()
        body = self.set_expression(rels, kinds)
        return self.cte_text(name, kinds, body), Relation(name, self.names(kinds), tuple(kinds))

    def recursive_cte(self, name: str, rels: list[Relation], bounded: bool) -> tuple[str, Relation]:
        """A linear recursion: base UNION recursive branch, every recursive column drawn from a finite domain
        (under UNION it ends on cycles; under UNION ALL values do not grow past the integers). Bounded: a counter
        column n (the last) and `r.n < k` in the recursive branch, under UNION ALL or UNION."""
        kinds = [INT] + self.kinds()[1:]
        columns = self.names(kinds) + (("n",) if bounded else ())
        relation = Relation(name, columns, tuple(kinds) + ((INT,) if bounded else ()))
        base = self.select(rels, kinds, distinct=False)
        if bounded:
            base = f"SELECT q.*, {self.draw(st.integers(0, 1))} AS n FROM ({base}) q"
        branch = self.recursive_branch(relation, kinds, rels, bounded)
        union = self.choose(["UNION ALL", "UNION"]) if bounded else "UNION"
        return f"{name}({', '.join(columns)}) AS ({base} {union} {branch})", relation

    def recursive_branch(self, relation: Relation, kinds: list[str], rels: list[Relation], bounded: bool) -> str:
        """SELECT over the recursive CTE (once) joined with a relation computed before it; filters, negation
        (NOT EXISTS / NOT IN / EXCEPT) over relations computed before it."""
        me = self.alias()
        scope: Scope = [(me, relation)]
        other, other_alias = self.choose(rels), self.alias()
        shape = self.choose(["join", "join", "comma", "flipped", "left", "alone"])
        on = lambda: self.join_condition(scope, [(other_alias, other)], rels)  # noqa: E731
        conditions = []
        if shape == "alone":
            from_text = f"{relation.name} {me}"
        else:
            scope = scope + [(other_alias, other)]
            if shape == "join":
                from_text = f"{relation.name} {me} JOIN {other.name} {other_alias} ON {on()}"
            elif shape == "left":
                from_text = f"{relation.name} {me} LEFT JOIN {other.name} {other_alias} ON {on()}"
            elif shape == "flipped":
                from_text = f"{other.name} {other_alias} JOIN {relation.name} {me} ON {on()}"
            else:
                from_text = f"{relation.name} {me}, {other.name} {other_alias}"
                conditions.append(on())
        if bounded:
            conditions.append(f"{me}.n < {self.draw(st.integers(1, 3))}")
        if self.chance(0.5):
            conditions.append(self.pred(scope, rels, 1))
        items = [self.expr(k, scope, rels, 2, finite=True) for k in kinds]
        if bounded:
            items.append(f"{me}.n + 1")
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        branch = f"SELECT {', '.join(items)} FROM {from_text}{where}"
        if not bounded and self.chance(0.15):
            branch = f"({branch} EXCEPT {self.select(rels, kinds)})"
        return branch

    def kinds(self, doubles: bool = False) -> list[str]:
        return [self.choose([INT, INT, STR] + [DOUBLE] * doubles) for _ in range(self.draw(st.integers(1, 3)))]

    @staticmethod
    def names(kinds: list[str]) -> tuple[str, ...]:
        return tuple(f"c{i}" for i in range(len(kinds)))

    @staticmethod
    def cte_text(name: str, kinds: list[str], body: str) -> str:
        return f"{name}({', '.join(f'c{i}' for i in range(len(kinds)))}) AS ({body})"

    # -- the query --------------------------------------------------------------------------------------------

    def query(self) -> Query:
        rels = list(self.tables)
        ctes, recursive = [], False
        for i in range(self.draw(st.integers(0, 3))):
            kind = self.choose(["plain", "recursive", "recursive", "bounded"])
            if kind == "plain":
                text, relation = self.plain_cte(f"p{i}", rels)
            else:
                text, relation = self.recursive_cte(f"r{i}", rels, bounded=kind == "bounded")
                recursive = True
            ctes.append(text)
            rels.append(relation)
        with_clause = f"WITH {'RECURSIVE ' * recursive}{', '.join(ctes)} " if ctes else ""
        kinds = self.kinds(doubles=True)
        # the answer reads the last CTEs most of the time (else they would mostly be computed for nothing)
        body = self.set_expression(rels[-2:] if ctes and self.chance(0.6) else rels, kinds)
        ordered = self.chance(0.3)
        if ordered:
            body += " ORDER BY " + ", ".join(
                f"{i + 1} {self.choose(['ASC', 'DESC'])} NULLS {self.choose(['FIRST', 'LAST'])}"
                for i in range(len(kinds))
            )
            if self.chance(0.6):
                body += f" LIMIT {self.draw(st.integers(0, 6))}"
                if self.chance(0.3):
                    body += f" OFFSET {self.draw(st.integers(1, 3))}"
        return Query(with_clause + body, ordered)


def relations_of(tables: tuple[Table, ...]) -> list[Relation]:
    return [Relation(t.name, t.columns, t.kinds) for t in tables]


@st.composite
def queries(draw, tables: tuple[Table, ...]) -> Query:
    """A query over `tables` whose answer DuckDB gives as recsql should (see the module's docstring)."""
    return QueryBuilder(draw, relations_of(tables)).query()


@st.composite
def databases_and_queries(draw) -> tuple[tuple[Table, ...], Query]:
    tables = draw(databases())
    return tables, draw(queries(tables))


# ---------------------------------------------------------------------------------------------------------------
# Mutual and non-linear recursion, against a plain-Python least fixpoint
# ---------------------------------------------------------------------------------------------------------------

COMPARISONS: dict[str, Callable] = {
    "=": lambda a, b: a == b,
    "<>": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
}


@dataclass(frozen=True)
class Atom:
    """relation(first, second): a binary relation (an edge table's src and dst, a CTE's c0 and c1) over
    variables."""

    relation: str
    variables: tuple[str, str]


@dataclass(frozen=True)
class Rule:
    """head :- atoms, comparisons (variable op variable-or-integer), NOT EXISTS of each negated atom (its
    variables bound by the atoms)."""

    head: tuple[str, str]
    atoms: tuple[Atom, ...]
    comparisons: tuple[tuple[str, str, str | int], ...] = ()
    negated: tuple[Atom, ...] = ()


@dataclass(frozen=True)
class Program:
    """CTEs defined by rules over edge tables: `lower`, non-recursive and first, then `recursive`, one WITH
    RECURSIVE over them all; the query reads `answer`."""

    tables: tuple[Table, ...]
    lower: tuple[tuple[str, tuple[Rule, ...]], ...]
    recursive: tuple[tuple[str, tuple[Rule, ...]], ...]
    answer: str

    @property
    def sql(self) -> str:
        ctes = ", ".join(
            f"{name}(c0, c1) AS ({' UNION '.join(rule_sql(rule, self.columns) for rule in rules)})"
            for name, rules in self.lower + self.recursive
        )
        return f"WITH RECURSIVE {ctes} SELECT c0, c1 FROM {self.answer}"

    def columns(self, relation: str) -> tuple[str, str]:
        return ("src", "dst") if relation.startswith("dq_") else ("c0", "c1")

    def expected(self) -> list[tuple]:
        """The least fixpoint: the lower CTEs, then all the recursive ones together, naively to the end."""
        facts = {t.name: {row[:2] for row in t.rows} for t in self.tables}
        for group in (self.lower, self.recursive):
            facts.update({name: set() for name, _ in group})
            while True:
                new = {name: set().union(*(derive(rule, facts) for rule in rules)) for name, rules in group}
                if all(new[name] <= facts[name] for name in new):
                    break
                for name, found in new.items():
                    facts[name] |= found
        return sorted(facts[self.answer], key=null_safe_key)


def rule_sql(rule: Rule, columns: Callable) -> str:
    """SELECT the head FROM the atoms JOINed on their shared variables, WHERE the comparisons and negations."""
    bound: dict[str, str] = {}
    from_parts, where = [], []
    for i, atom in enumerate(rule.atoms):
        alias, conditions = f"a{i}", []
        for column, variable in zip(columns(atom.relation), atom.variables):
            if variable in bound:
                conditions.append(f"{alias}.{column} = {bound[variable]}")
            else:
                bound[variable] = f"{alias}.{column}"
        if i == 0:
            from_parts.append(f"{atom.relation} {alias}")
            where += conditions
        elif conditions:
            from_parts.append(f"JOIN {atom.relation} {alias} ON {' AND '.join(conditions)}")
        else:
            from_parts.append(f"CROSS JOIN {atom.relation} {alias}")
    for variable, op, other in rule.comparisons:
        where.append(f"{bound[variable]} {op} {bound[other] if isinstance(other, str) else other}")
    for atom in rule.negated:
        tests = " AND ".join(
            f"n.{column} = {bound[variable]}"
            for column, variable in zip(columns(atom.relation), atom.variables)
            if variable
        )
        where.append(f"NOT EXISTS (SELECT 1 FROM {atom.relation} n WHERE {tests})")
    where_text = f" WHERE {' AND '.join(where)}" if where else ""
    return f"SELECT {bound[rule.head[0]]}, {bound[rule.head[1]]} FROM {' '.join(from_parts)}{where_text}"


def derive(rule: Rule, facts: dict[str, set]) -> set[tuple]:
    """The heads of `rule` over `facts`, with SQL's NULLs: a NULL equals nothing, a comparison with it fails."""
    bindings = [{}]
    for atom in rule.atoms:
        bindings = [
            extended
            for binding in bindings
            for fact in facts[atom.relation]
            if (extended := bind(binding, atom.variables, fact)) is not None
        ]
    found = set()
    for binding in bindings:
        if all(
            compare(op, binding[variable], binding[other] if isinstance(other, str) else other)
            for variable, op, other in rule.comparisons
        ) and not any(matches(atom, binding, facts[atom.relation]) for atom in rule.negated):
            found.add((binding[rule.head[0]], binding[rule.head[1]]))
    return found


def bind(binding: dict, variables: tuple[str, str], fact: tuple) -> dict | None:
    extended = dict(binding)
    for variable, value in zip(variables, fact):
        if variable in extended:
            if value is None or extended[variable] is None or extended[variable] != value:
                return None
        else:
            extended[variable] = value
    return extended


def compare(op: str, left, right) -> bool:
    return left is not None and right is not None and COMPARISONS[op](left, right)


def matches(atom: Atom, binding: dict, facts: set) -> bool:
    """Whether a fact of the negated `atom` agrees with `binding` on its (non-empty) variables."""
    return any(
        all(variable is None or compare("=", value, binding[variable]) for variable, value in zip(atom.variables, fact))
        for fact in facts
    )


def null_safe_key(row: tuple) -> tuple:
    return tuple((value is not None, value) for value in row)


class ProgramBuilder:
    """Draws a Program: 1-3 recursive CTEs (non-linear rules, mutual references), maybe a non-recursive CTE
    first that their rules read and negate."""

    def __init__(self, draw: Callable, tables: tuple[Table, ...]):
        self.draw = draw
        self.edge_tables = tables
        self.tables = [t.name for t in tables]

    def program(self) -> Program:
        draw = self.draw
        lower = ()
        if draw(st.booleans()):
            lower = (("low", (self.base_rule(),)),)
        lowers = [name for name, _ in lower]
        names = [f"r{i}" for i in range(draw(st.integers(1, 3)))]
        recursive = []
        for i, name in enumerate(names):
            rules = [self.base_rule()] if i == 0 or draw(st.booleans()) else []
            # each CTE reads the next one (mutual recursion through all of them) and maybe itself twice
            partner = names[(i + 1) % len(names)]
            rules.append(self.recursive_rule([partner], names + lowers, lowers))
            rules += [self.recursive_rule([name, name], names + lowers, lowers) for _ in range(draw(st.integers(0, 1)))]
            recursive.append((name, tuple(rules)))
        return Program(self.edge_tables, lower, tuple(recursive), draw(st.sampled_from(names)))

    def base_rule(self) -> Rule:
        table = self.draw(st.sampled_from(self.tables))
        head = self.draw(st.sampled_from([("x", "y"), ("y", "x"), ("x", "x")]))
        return Rule(head, (Atom(table, ("x", "y")),), self.comparisons(["x", "y"]))

    def recursive_rule(self, required: list[str], relations: list[str], lowers: list[str]) -> Rule:
        """A chain of two or three atoms, the first ones `required`, over x, y, z, u."""
        draw = self.draw
        count = max(len(required), draw(st.integers(2, 3)))
        chosen = required + [draw(st.sampled_from(relations + self.tables)) for _ in range(count - len(required))]
        chosen = draw(st.permutations(chosen))
        variables = ["x", "y", "z", "u"]
        atoms = tuple(
            Atom(
                relation,
                (variables[i], variables[i + 1]) if draw(st.integers(0, 3)) else (variables[i + 1], variables[i]),
            )
            for i, relation in enumerate(chosen)
        )
        used = variables[: count + 1]
        head = (draw(st.sampled_from(used)), draw(st.sampled_from(used)))
        negated = ()
        if draw(st.integers(0, 3)) == 0:
            relation = draw(st.sampled_from(lowers + self.tables))
            negated = (Atom(relation, (draw(st.sampled_from(used)), draw(st.sampled_from(used + [None])))),)
        return Rule(head, atoms, self.comparisons(used), negated)

    def comparisons(self, variables: list[str]) -> tuple:
        found = []
        for _ in range(self.draw(st.sampled_from([0, 0, 0, 1, 2]))):  # mostly none: else most answers are empty
            left = self.draw(st.sampled_from(variables))
            right = self.draw(st.one_of(st.sampled_from(variables), st.integers(0, 5)))
            found.append((left, self.draw(st.sampled_from(sorted(COMPARISONS))), right))
        return tuple(found)


@st.composite
def programs(draw) -> Program:
    """Mutual and non-linear recursion over 1-2 edge tables (see ProgramBuilder)."""
    tables = tuple(
        Table(f"dq_e{i + 1}", EDGE_TYPES, draw(edge_rows(min_size=3, max_size=10)))
        for i in range(draw(st.integers(1, 2)))
    )
    return ProgramBuilder(draw, tables).program()


# ---------------------------------------------------------------------------------------------------------------
# Aggregates in a recursive CTE's header, against a plain-Python fixpoint
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeaderAggregate:
    table: Table
    sql: str
    expected: tuple[tuple, ...]


@st.composite
def header_aggregates(draw) -> HeaderAggregate:
    """min() over any edges (weights >= 0); max(), count(), sum() over acyclic ones. Single source (a node, or
    the edges out of one for min and max) or every pair (min and max); `min` may bound the distance."""
    aggregate = draw(st.sampled_from(["min", "min", "max", "count", "sum"]))
    rows = draw(edge_rows(acyclic=aggregate != "min"))
    table = Table("dq_e1", EDGE_TYPES, rows)
    sources = sorted({src for src, _, _ in rows if src is not None})
    start = draw(st.sampled_from(sources) if sources and draw(st.integers(0, 3)) else NODES)
    least_weight = draw(st.sampled_from([None, 1, 3]))
    edge_filter = f" AND e.w >= {least_weight}" if least_weight is not None else ""
    usable = [row for row in rows if least_weight is None or row[2] >= least_weight]
    if aggregate in ("count", "sum"):
        step = "g.v" if aggregate == "count" else "g.v + e.w"
        sql = (
            f"WITH RECURSIVE g(node, {aggregate}() AS v) AS (SELECT {start}, 1) UNION "
            f"(SELECT e.dst, {step} FROM g, dq_e1 e WHERE g.node = e.src{edge_filter}) SELECT node, v FROM g"
        )
        return HeaderAggregate(table, sql, roll_up(usable, start, aggregate == "sum"))
    pairs = draw(st.booleans())
    bound = draw(st.sampled_from([None, 4, 9])) if aggregate == "min" else None
    bound_filter = f" AND g.v + e.w <= {bound}" if bound is not None else ""
    if pairs:
        base_sql = "SELECT src, dst, w FROM dq_e1"
        base = list(rows)
        key, step_key = "a, node", "g.a, e.dst"
    elif draw(st.booleans()):
        base_sql, base = f"SELECT {start}, 0", [(start, 0)]
        key, step_key = "node", "e.dst"
    else:
        base_sql = f"SELECT dst, w FROM dq_e1 WHERE src = {start}"
        base = [(dst, w) for src, dst, w in rows if src == start]
        key, step_key = "node", "e.dst"
    sql = (
        f"WITH RECURSIVE g({key}, {aggregate}() AS v) AS ({base_sql}) UNION "
        f"(SELECT {step_key}, g.v + e.w FROM g, dq_e1 e WHERE g.node = e.src{edge_filter}{bound_filter}) "
        f"SELECT {key}, v FROM g"
    )
    return HeaderAggregate(table, sql, best_paths(base, usable, min if aggregate == "min" else max, bound))


def best_paths(base: list[tuple], edges: list[tuple], better: Callable, bound: int | None) -> tuple[tuple, ...]:
    """Bellman-Ford: each group's min (or max, on acyclic edges) over every derivation; a group is its base
    row's leading columns, then (..., the edge's dst); a step must stay within `bound`."""
    values: dict[tuple, int] = {}
    for *key, value in base:
        values[tuple(key)] = better(values.get(tuple(key), value), value)
    changed = True
    while changed:
        changed = False
        for key, value in list(values.items()):
            for src, dst, w in edges:
                if src is None or src != key[-1] or (bound is not None and value + w > bound):
                    continue
                target = key[:-1] + (dst,)
                if target not in values or better(values[target], value + w) != values[target]:
                    values[target] = value + w
                    changed = True
    return tuple(sorted((key + (value,) for key, value in values.items()), key=null_safe_key))


def roll_up(edges: list[tuple], start: int, weighted: bool) -> tuple[tuple, ...]:
    """count() of the paths from `start` to each node, or sum() of each path's (value + w) steps, on acyclic
    edges (a smaller node before a larger, NULL last): every distinct edge row, parallel ones too, adds its
    contribution (a table's duplicate rows are one row, as the README says of sum() and count())."""
    values = {start: 1}
    distinct = sorted(set(edges), key=null_safe_key)
    for node in sorted({dst for _, dst, _ in edges} | {start}, key=lambda n: (n is None, n)):
        for src, dst, w in distinct:
            if dst == node and src is not None and src in values:
                values[node] = values.get(node, 0) + values[src] + (w if weighted else 0)
    return tuple(sorted(values.items(), key=null_safe_key))
