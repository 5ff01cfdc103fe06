"""A rule as one SQL query, meaning what render.py's DataFrame means: positive atoms joined on their
shared variables, conditions and assignments applied as soon as their variables are bound, outer joins
after the inner ones, semi- and anti-joins last, then the head's projection or aggregation. `RuleSQL`
writes DuckDB SQL with Spark's semantics (the local evaluator), `SparkRuleSQL` Spark SQL (a rule as one
`spark.sql` call rather than a DataFrame operation per step, each a round trip to the JVM).

Each step of render.py's join_body becomes one nested SELECT whose columns are named after the IR
variables it binds, so expressions (sqlglot trees over variables) render directly to SQL. The tables an
atom reads have positional columns (c0 .. cN; a table function's own names).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sqlglot import exp

from recsql.engine.render import column_names
from recsql.optimizer.join_order import BROADCAST, BROADCAST_LEFT
from translator.ir import WILDCARD, Assignment, Atom, Condition, Rule

AtomSources = Callable[[int, Atom], str]  # the table (name or table function call) a body atom reads


@dataclass(frozen=True)
class Frame:
    """A query and the variables its columns bind, in order."""

    sql: str
    columns: tuple[str, ...]

    def select(self, items: list[str], where: str = "") -> str:
        return f"SELECT {select_list(items)} FROM ({self.sql}) AS f" + (f" WHERE {where}" if where else "")


UNIT = Frame("SELECT 1 AS __unit", ())  # one row, no variables: what a body without atoms reads


def quote(name: str) -> str:
    """`name` as a quoted DuckDB identifier."""
    return '"' + name.replace('"', '""') + '"'


def select_list(items: list[str]) -> str:
    """SQL has no empty SELECT list: a frame binding no variable keeps a placeholder column."""
    return ", ".join(items) or "NULL AS __unit"


class RuleSQL:
    """Renders rules for one dialect setting: under Spark's ANSI mode (its default) a cast that fails and
    a division by zero are errors, as they are on Spark; without it they give NULL."""

    def __init__(self, ansi: bool):
        self.ansi = ansi

    quote = staticmethod(quote)

    def rule(self, rule: Rule, source: AtomSources, extra_terms: tuple[exp.Expression, ...] = ()) -> str:
        """The facts `rule` derives as a query with columns c0 .. cN; `extra_terms` follow the head's
        columns (contributor keys of monotonic sum/count)."""
        return self.project(rule, self.join_body(rule, source), extra_terms)

    def project(self, rule: Rule, frame: Frame, extra_terms: tuple[exp.Expression, ...]) -> str:
        """The head's projection (or aggregation) over the joined body."""
        terms = list(rule.terms) + list(extra_terms)
        items = [f"{self.expression(t)} AS {n}" for t, n in zip(terms, column_names(len(terms)))]
        if not rule.is_aggregate:
            return frame.select(items)
        keys = [self.expression(t) for t in terms if not t.find(exp.AggFunc)]
        return frame.select(items) + (f" GROUP BY {', '.join(keys)}" if keys else "")

    def join_body(self, rule: Rule, source: AtomSources, methods: tuple[str, ...] = ()) -> Frame:
        positive = [(i, lit) for i, lit in enumerate(rule.body) if isinstance(lit, Atom) and not lit.filters]
        pending = [lit for lit in rule.body if isinstance(lit, (Condition, Assignment))]
        filters = [(i, lit) for i, lit in enumerate(rule.body) if isinstance(lit, Atom) and lit.filters]
        frame: Frame | None = None
        # inner joins in body order, then outer joins in written order: their ON conditions read only the
        # atoms before them (the order of inner joins does not change what a rule derives)
        ordered = [p for p in positive if not p[1].optional] + [p for p in positive if p[1].optional]
        for number, (position, atom) in enumerate(ordered):
            right = self.bind_atom(source(position, atom), atom)
            if atom.optional:
                frame = self.left_join(frame or UNIT, right, atom.on)
            elif frame is None:
                frame = right
            else:
                method = methods[number] if number < len(methods) else None
                frame = self.inner_join(frame, right, atom.nulls_equal, method)
            frame, pending = self.apply_ready(frame, pending)
        frame, pending = self.apply_ready(frame or UNIT, pending)
        if pending:
            unbound = set().union(*(literal.variables() for literal in pending)) - set(frame.columns)
            raise ValueError(f"rule {rule} uses unbound variables {sorted(unbound)}")
        for position, atom in filters:
            frame = self.filter_join(frame, self.bind_atom(source(position, atom), atom), atom)
        return frame

    def apply_ready(self, frame: Frame, pending: list) -> tuple[Frame, list]:
        """Apply conditions and assignments whose variables are bound, repeatedly (assignments bind more)."""
        progress = True
        while progress:
            progress = False
            for literal in list(pending):
                if not literal.variables() <= set(frame.columns):
                    continue
                pending.remove(literal)
                progress = True
                columns = [self.quote(c) for c in frame.columns]
                if isinstance(literal, Condition):
                    frame = Frame(frame.select(columns, self.expression(literal.expression)), frame.columns)
                else:
                    item = f"{self.expression(literal.expression)} AS {self.quote(literal.variable)}"
                    frame = Frame(frame.select(columns + [item]), frame.columns + (literal.variable,))
        return frame, pending

    def left_join(self, left: Frame, right: Frame, on: exp.Expression) -> Frame:
        """LEFT JOIN ... ON: a left row without a match keeps NULLs for the atom's variables."""
        extra = tuple(c for c in right.columns if c not in left.columns)
        items = [f"l.{self.quote(c)}" for c in left.columns] + [f"r.{self.quote(c)}" for c in extra]
        condition = self.expression(qualified(on, set(right.columns)))
        return Frame(
            f"SELECT {select_list(items)} FROM ({left.sql}) AS l "
            f"LEFT JOIN ({right.sql}) AS r ON {condition}",
            left.columns + extra,
        )

    def filter_join(self, left: Frame, right: Frame, atom: Atom) -> Frame:
        """Rows of `left` with some (semi-join) or no (anti-join) row of `right` equal on their shared
        variables (NULL equal to NULL for a `nulls_equal` atom); an atom's `on` condition must hold too
        (EXISTS with a condition, NOT IN's null-aware anti-join)."""
        keys = [c for c in right.columns if c in left.columns]
        operator = "IS NOT DISTINCT FROM" if atom.nulls_equal and atom.on is None else "="
        conditions = [f"l.{self.quote(k)} {operator} r.{self.quote(k)}" for k in keys]
        if atom.on is not None:
            local = set(right.columns) - set(keys)
            conditions.insert(0, f"({self.expression(qualified(atom.on, local))})")
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        items = [f"l.{self.quote(c)}" for c in left.columns]
        return Frame(
            f"SELECT {select_list(items)} FROM ({left.sql}) AS l "
            f"WHERE {'' if atom.semi else 'NOT '}EXISTS (SELECT 1 FROM ({right.sql}) AS r{where})",
            left.columns,
        )

    def inner_join(self, left: Frame, right: Frame, nulls_equal: bool, method: str | None = None) -> Frame:
        """Join on the shared variables (a cross product when there are none)."""
        keys = [c for c in right.columns if c in left.columns]
        extra = tuple(c for c in right.columns if c not in left.columns)
        items = [f"l.{self.quote(c)}" for c in left.columns] + [f"r.{self.quote(c)}" for c in extra]
        operator = "IS NOT DISTINCT FROM" if nulls_equal else "="
        on = " AND ".join(f"l.{self.quote(k)} {operator} r.{self.quote(k)}" for k in keys)
        join = f"JOIN ({right.sql}) AS r ON {on}" if keys else f"CROSS JOIN ({right.sql}) AS r"
        return Frame(f"SELECT {select_list(items)} FROM ({left.sql}) AS l {join}", left.columns + extra)

    def bind_atom(self, table: str, atom: Atom) -> Frame:
        """Name a table's columns after the atom's variables; a variable repeated in one atom becomes an
        equality filter, wildcards are dropped."""
        names, seen, equalities = [], [], []
        for i, arg in enumerate(atom.args):
            if arg == WILDCARD or arg in seen:
                names.append(f"__{i}")
                if arg != WILDCARD:
                    equalities.append(f"{self.quote(arg)} = {self.quote(f'__{i}')}")
            else:
                names.append(arg)
                seen.append(arg)
        where = f" WHERE {' AND '.join(equalities)}" if equalities else ""
        aliases = ", ".join(self.quote(n) for n in names)
        items = select_list([self.quote(v) for v in seen])
        return Frame(f"SELECT {items} FROM {table} AS a({aliases}){where}", tuple(seen))

    def expression(self, expression: exp.Expression) -> str:
        return self.spark_semantics(expression).sql(dialect="duckdb", identify=True)

    def spark_semantics(self, expression: exp.Expression) -> exp.Expression:
        """`expression` where sqlglot's DuckDB rendering of it would mean something else than on Spark:
        Spark's CAST (read as TRY_CAST) fails on a bad value under ANSI; a zero divisor of `/`, `div` or
        `%` is an error under ANSI and gives NULL without it (DuckDB's own behaviour varies by version)."""
        def rewrite(node: exp.Expression) -> exp.Expression:
            # a replaced node's children are not visited by transform: rewrite them here
            if self.ansi and isinstance(node, exp.TryCast) and not node.args.get("safe"):
                return exp.Cast(**{**node.args, "this": self.spark_semantics(node.this)})
            if isinstance(node, (exp.Div, exp.IntDiv, exp.Mod)):
                divisor = self.spark_semantics(node.expression)
                zero = exp.EQ(this=divisor.copy(), expression=exp.Literal.number(0))
                error = exp.Anonymous(this="error", expressions=[exp.Literal.string(DIVIDE_BY_ZERO)])
                checked = exp.Case(ifs=[exp.If(this=zero, true=error if self.ansi else exp.Null())], default=divisor)
                return node.__class__(**{**node.args, "this": self.spark_semantics(node.this), "expression": checked,
                                         "safe": False})
            return node

        return expression.transform(rewrite)


DIVIDE_BY_ZERO = "[DIVIDE_BY_ZERO] Division by zero"


def qualified(expression: exp.Expression, right: set[str]) -> exp.Expression:
    """`expression` with each variable read from the right side (`r`) when it is one of `right`, else
    from the left side (`l`)."""
    def qualify(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not node.table:
            return exp.column(node.name, table="r" if node.name in right else "l")
        return node

    return expression.transform(qualify)


class SparkRuleSQL(RuleSQL):
    """Rules as Spark SQL: Spark's own expressions, backquoted identifiers, and a BROADCAST hint on the side
    of a join the optimizer expects small (`rule.joins`)."""

    def __init__(self):
        super().__init__(ansi=True)

    @staticmethod
    def quote(name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    def rule(self, rule: Rule, source: AtomSources, extra_terms: tuple[exp.Expression, ...] = ()) -> str:
        return self.project(rule, self.join_body(rule, source, rule.joins), extra_terms)

    def inner_join(self, left: Frame, right: Frame, nulls_equal: bool, method: str | None = None) -> Frame:
        joined = super().inner_join(left, right, nulls_equal, method)
        side = {BROADCAST: "r", BROADCAST_LEFT: "l"}.get(method or "")
        if side is None:
            return joined
        return Frame(joined.sql.replace("SELECT ", f"SELECT /*+ BROADCAST({side}) */ ", 1), joined.columns)

    def expression(self, expression: exp.Expression) -> str:
        return expression.sql(dialect="spark", identify=True)
