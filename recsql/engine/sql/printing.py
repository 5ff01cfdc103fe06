"""Query trees printed for the engine that runs them: Spark SQL as it is, DuckDB SQL with Spark's meaning.

The trees (rules.py, queries.py) hold the one definition of each rule and merge; the DuckDB printer
rewrites the few expressions whose DuckDB rendering would mean something else than on Spark, so the
local evaluator gives Spark's answers.
"""

from __future__ import annotations

from enum import Enum
from typing import Mapping, Sequence

from sqlglot import exp

DIVIDE_BY_ZERO = "[DIVIDE_BY_ZERO] Division by zero"


class Dialect(str, Enum):
    SPARK = "spark"
    DUCKDB = "duckdb"


class Printer:
    """Prints trees for one engine. `ansi`: Spark's ANSI mode (its default), under which a cast that fails
    and a division by zero are errors; without it they give NULL."""

    def __init__(self, dialect: Dialect, ansi: bool = True):
        self.dialect = dialect
        self.ansi = ansi

    def sql(self, tree: exp.Expression) -> str:
        if self.dialect is Dialect.DUCKDB:
            tree = self.spark_semantics(without_hints(tree))
        return tree.sql(dialect=self.dialect.value, identify=True)

    def quote(self, name: str) -> str:
        """`name` as a quoted identifier of this dialect."""
        return exp.to_identifier(name, quoted=True).sql(dialect=self.dialect.value)

    def with_inputs(self, sql: str, inline: Mapping[str, str]) -> str:
        """`sql` reading the printed queries of `inline` as named inputs (common table expressions)."""
        if not inline:
            return sql
        ctes = ", ".join(f"{self.quote(name)} AS ({text})" for name, text in inline.items())
        return f"WITH {ctes} {sql}"

    @staticmethod
    def union_all(parts: Sequence[str]) -> str:
        """The printed queries' rows together (their columns by position)."""
        return " UNION ALL ".join(f"({part})" for part in parts)

    def spark_semantics(self, tree: exp.Expression) -> exp.Expression:
        """`tree` where sqlglot's DuckDB rendering would mean something else than on Spark: Spark's CAST
        (read as TRY_CAST) fails on a bad value under ANSI; a zero divisor of `/`, `div` or `%` is an error
        under ANSI and gives NULL without it (DuckDB's own behaviour varies by version)."""
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

        return tree.transform(rewrite)


def without_hints(tree: exp.Expression) -> exp.Expression:
    """Join hints are Spark's: DuckDB plans joins itself."""
    if not any(True for _ in tree.find_all(exp.Hint)):
        return tree
    tree = tree.copy()
    for hint in list(tree.find_all(exp.Hint)):
        hint.pop()
    return tree


def renamed(tree: exp.Expression, names: Mapping[str, str]) -> exp.Expression:
    """`tree` reading each table named in `names` under its new name."""
    def rename(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier) and node.name in names:
            node = node.copy()
            node.set("this", exp.to_identifier(names[node.name], quoted=True))
        return node

    return tree.transform(rename) if names else tree


def inlined(tree: exp.Expression, queries: Mapping[str, exp.Query]) -> exp.Expression:
    """`tree` reading each table named in `queries` as that query (a subquery under the table's alias)."""
    def inline(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier) and node.name in queries:
            alias = node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(node.name, quoted=True))
            return exp.Subquery(this=queries[node.name].copy(), alias=alias.copy())
        return node

    return tree.transform(inline)
