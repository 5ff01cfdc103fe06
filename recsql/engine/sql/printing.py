"""Query trees printed for the engine that runs them: Spark SQL as it is, DuckDB SQL with Spark's meaning.

The trees (rules.py, queries.py) hold the one definition of each rule and merge; the DuckDB printer
rewrites the few expressions whose DuckDB rendering would mean something else than on Spark, so the
local evaluator gives Spark's answers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from typing import TypeVar

from sqlglot import exp
from sqlglot.errors import ErrorLevel, UnsupportedError

from recsql.engine.sql.arrays import spark_array
from recsql.errors import NotSupportedError
from translator.ir import RAISE_ERROR

DIVIDE_BY_ZERO = "[DIVIDE_BY_ZERO] Division by zero"
REMAINDER_BY_ZERO = "[REMAINDER_BY_ZERO] Remainder by zero"  # Spark's for %
# what types/exact_meaning.py tells the DuckDB printer in a node's meta
DECIMAL = "spark_decimal"  # (precision, scale): Spark's type of a decimal result, which Spark rounds to
DIVISION = "spark_division"  # (p, s) of the dividend, of the divisor and of the quotient: decimals
AVERAGE = "spark_average"  # (p, s) of the operand and of the average: decimals
DATE_ARITHMETIC = "spark_date"  # a date plus or minus an interval: a date
MAX_DIGITS = 38
INEXACT = "recsql: a decimal division past the digits the local evaluator rounds exactly"


class LocalLimit(NotSupportedError):
    """SQL the local evaluator cannot run (DuckDB does not know it, or binds it otherwise than Spark would,
    such as a comparison of a string with a number): a limit of the local strategy, not of the query.
    Under recsql.strategy = auto, Spark evaluates the query instead (and gives Spark's answer or error)."""

    @classmethod
    def because(cls, detail: str) -> LocalLimit:
        return cls(
            f"the local strategy cannot evaluate this query ({detail}); "
            "SET recsql.strategy = distributed runs it on Spark"
        )


class Dialect(str, Enum):
    SPARK = "spark"
    DUCKDB = "duckdb"


QUOTE_MARKS = {Dialect.SPARK: "`", Dialect.DUCKDB: '"'}


class Printer:
    """Prints trees for one engine. `ansi`: Spark's ANSI mode (its default), under which a cast that fails
    and a division by zero are errors; without it they give NULL."""

    def __init__(self, dialect: Dialect, ansi: bool = True):
        self.dialect = dialect
        self.ansi = ansi

    def sql(self, tree: exp.Expr) -> str:
        """The tree's SQL; an error where sqlglot writes it for this engine only by losing part of its meaning
        (RANDOM with seed in DuckDB): for DuckDB a LocalLimit (Spark runs it instead)."""
        if self.dialect is Dialect.DUCKDB:
            tree = self.spark_semantics(without_hints(tree))
        try:
            return tree.sql(dialect=self.dialect.value, identify=True, unsupported_level=ErrorLevel.RAISE)
        except UnsupportedError as error:
            if self.dialect is Dialect.DUCKDB:
                raise LocalLimit.because(str(error)) from None
            raise NotSupportedError(f"Spark SQL cannot express this query: {error}") from None

    def quote(self, name: str) -> str:
        """`name` as a quoted identifier of this dialect (as sqlglot quotes it, without a generator each time)."""
        mark = QUOTE_MARKS[self.dialect]
        return mark + name.replace(mark, mark + mark) + mark

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

    def spark_semantics(self, tree: exp.Expr) -> exp.Expr:
        """`tree` where sqlglot's DuckDB rendering would mean something else than on Spark: Spark's CAST
        (read as TRY_CAST) fails on a bad value under ANSI; a zero divisor of `/`, `div` or `%` is an error
        under ANSI and gives NULL without it (DuckDB's own behaviour varies by version); and what the
        nodes' meta says of their Spark types (a decimal result rounded to its type, a decimal division
        or average rounded half up at the quotient's scale, a date plus an interval a date); Spark's
        array functions (arrays.py); and Spark's raise_error, DuckDB's error."""

        def rewrite(node: exp.Expr) -> exp.Expr:
            # a replaced node's children are not visited by transform: rewrite them here
            typed = self.typed(node)
            if typed is not None:
                return typed
            array = spark_array(node, self.spark_semantics, self.ansi)
            if array is not None:
                return array
            if isinstance(node, exp.Anonymous) and node.name.lower() == RAISE_ERROR:
                return exp.Anonymous(this="error", expressions=[self.spark_semantics(e) for e in node.expressions])
            if self.ansi and isinstance(node, exp.TryCast) and not node.args.get("safe"):
                return exp.Cast(**{**node.args, "this": self.spark_semantics(node.this)})
            if isinstance(node, (exp.Div, exp.IntDiv, exp.Mod)):
                divisor = self.spark_semantics(node.expression)
                zero = exp.EQ(this=divisor.copy(), expression=exp.Literal.number(0))
                message = REMAINDER_BY_ZERO if isinstance(node, exp.Mod) else DIVIDE_BY_ZERO
                error = exp.Anonymous(this="error", expressions=[exp.Literal.string(message)])
                checked = exp.Case(ifs=[exp.If(this=zero, true=error if self.ansi else exp.Null())], default=divisor)
                return node.__class__(
                    **{**node.args, "this": self.spark_semantics(node.this), "expression": checked, "safe": False}
                )
            return node

        return tree.transform(rewrite)

    def typed(self, node: exp.Expr) -> exp.Expr | None:
        """The DuckDB rendering of a node whose meta gives its Spark types; None for any other node."""
        meta = node.meta if node.meta else {}
        if DIVISION in meta:
            pa_, sa, pb, sb, p, s = meta[DIVISION]
            dividend, divisor = (
                decimal_cast(self.spark_semantics(o), *ps)
                for o, ps in ((node.this, (pa_, sa)), (node.expression, (pb, sb)))
            )
            return exact_quotient(dividend, sa, divisor, sb, p, s, self.ansi)
        if AVERAGE in meta:
            po, so, p, s = meta[AVERAGE]
            values = decimal_cast(self.spark_semantics(node.this), po, so)
            total = exp.Sum(this=values.copy())
            count = exp.Count(this=values)
            return exact_quotient(total, so, count, 0, p, s, self.ansi, zero_is_null=True)
        if DECIMAL in meta or DATE_ARITHMETIC in meta:
            plain = node.copy()
            plain.meta.pop(DECIMAL, None)
            plain.meta.pop(DATE_ARITHMETIC, None)
            for key, child in list(plain.args.items()):
                if isinstance(child, exp.Expression):
                    plain.set(key, self.spark_semantics(child))
            if DATE_ARITHMETIC in meta:
                return exp.Cast(this=plain, to=exp.DataType.build("DATE"))
            return decimal_cast(plain, *meta[DECIMAL])
        return None


def decimal_cast(node: exp.Expr, precision: int, scale: int) -> exp.Expr:
    return exp.Cast(this=node, to=exp.DataType.build(f"DECIMAL({precision}, {scale})"))


def power_of_ten(exponent: int, kind: str = "HUGEINT") -> exp.Expr:
    return exp.Cast(this=exp.Literal.string("1" + "0" * exponent), to=exp.DataType.build(kind))


def exact_quotient(
    dividend: exp.Expr,
    dividend_scale: int,
    divisor: exp.Expr,
    divisor_scale: int,
    precision: int,
    scale: int,
    ansi: bool,
    zero_is_null: bool = False,
) -> exp.Expr:
    """dividend / divisor as Spark computes decimals: the quotient at `scale` fractional digits rounded
    half up, as DECIMAL(precision, scale); from the operands' unscaled values in 128-bit integers. Spark
    divides to 39 digits and rounds that to `scale`, which can differ from rounding once only for a
    divisor of 38 - scale digits or more: such a divisor stops the evaluation (Spark then computes it),
    as does an integer overflow (DuckDB's error)."""
    shift = scale - dividend_scale + divisor_scale
    numerator = unscaled(dividend, dividend_scale)
    denominator = unscaled(divisor, divisor_scale)
    if shift >= 0:
        numerator = exp.Mul(this=numerator, expression=power_of_ten(shift))
    else:
        denominator = exp.Mul(this=denominator, expression=power_of_ten(-shift))
    numerator, denominator = exp.Paren(this=numerator), exp.Paren(this=denominator)

    def absolute(value: exp.Expr) -> exp.Expr:
        return exp.Abs(this=value.copy())

    doubled = exp.Mul(this=exp.Literal.number(2), expression=absolute(denominator))
    rounded = exp.IntDiv(
        this=exp.Paren(
            this=exp.Add(
                this=exp.Mul(this=exp.Literal.number(2), expression=absolute(numerator)),
                expression=absolute(denominator),
            )
        ),
        expression=exp.Paren(this=doubled),
    )
    signed = exp.Mul(
        this=exp.Mul(this=exp.Sign(this=numerator.copy()), expression=exp.Sign(this=denominator.copy())),
        expression=exp.Paren(this=rounded),
    )
    step = exp.Cast(
        this=exp.Literal.string(f"0.{'0' * (scale - 1)}1" if scale else "1"),
        to=exp.DataType.build(f"DECIMAL({scale + 1}, {scale})"),
    )
    quotient = decimal_cast(exp.Mul(this=decimal_cast(signed, MAX_DIGITS, 0), expression=step), precision, scale)
    zero = exp.EQ(this=denominator.copy(), expression=exp.Literal.number(0))
    on_zero = (
        exp.Null()
        if zero_is_null or not ansi
        else exp.Anonymous(this="error", expressions=[exp.Literal.string(DIVIDE_BY_ZERO)])
    )
    too_long = exp.GTE(this=absolute(denominator), expression=power_of_ten(MAX_DIGITS - scale))
    inexact = exp.Anonymous(this="error", expressions=[exp.Literal.string(INEXACT)])
    return exp.Case(ifs=[exp.If(this=zero, true=on_zero), exp.If(this=too_long, true=inexact)], default=quotient)


def unscaled(value: exp.Expr, scale: int) -> exp.Expr:
    """A decimal of `scale` fractional digits as the integer of its digits (HUGEINT)."""
    shifted = exp.Mul(this=value, expression=power_of_ten(scale, f"DECIMAL({scale + 1}, 0)")) if scale else value
    return exp.Cast(this=shifted, to=exp.DataType.build("HUGEINT"))


def without_hints(tree: exp.Expr) -> exp.Expr:
    """Join hints are Spark's: DuckDB plans joins itself."""
    if not any(True for _ in tree.find_all(exp.Hint)):
        return tree
    tree = tree.copy()
    for hint in list(tree.find_all(exp.Hint)):
        hint.pop()
    return tree


def renamed(tree: exp.Expr, names: Mapping[str, str]) -> exp.Expr:
    """`tree` reading each table named in `names` under its new name."""

    def rename(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier) and node.name in names:
            node = node.copy()
            node.set("this", exp.to_identifier(names[node.name], quoted=True))
        return node

    return tree.transform(rename) if names else tree


Node = TypeVar("Node", bound=exp.Expr)


def inlined(tree: Node, queries: Mapping[str, exp.Query]) -> Node:
    """`tree` reading each table named in `queries` as that query (a subquery under the table's alias)."""

    def inline(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier) and node.name in queries:
            alias = node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(node.name, quoted=True))
            return exp.Subquery(this=queries[node.name].copy(), alias=alias.copy())
        return node

    result = tree.transform(inline)
    assert isinstance(result, type(tree))  # only tables below the root are replaced
    return result
