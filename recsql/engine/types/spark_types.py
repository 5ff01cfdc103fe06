"""The column types Spark gives a rule's output, derived in Python from the IR and the input types,
without asking Spark to analyse a plan (each analysis is a round trip to the JVM, and a fixpoint needs
one per relation and iteration).

Only expressions that DuckDB evaluates as Spark does are covered (decimal arithmetic once exact_meaning.py
has told the printer its Spark types): column references, literals, comparisons and boolean logic,
integral / floating / decimal arithmetic, widening casts, CASE, COALESCE, LEAST/GREATEST, LIKE, a date
plus or minus days, months or years, the year / month / day of a date, SUBSTRING from a literal
position, and the aggregates count, sum, min, max, avg. Anything else raises `NotInferred`; the caller
then asks Spark (and keeps that part of the query on Spark). The rules follow Spark's type coercion:
union widening, decimal precision arithmetic (with precision loss allowed, Spark's default), integral
literals as int / bigint (as the fewest digits that hold them beside a decimal), fractional literals as
decimals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import NamedTuple

from pyspark.sql import types as T
from sqlglot import exp

from recsql.engine.types.array_types import ARRAY_FUNCTIONS, array_function_type
from recsql.engine.types.errors import NotInferred
from recsql.engine.types.widening import (
    FRACTIONAL,
    INTEGRAL,
    MAX_PRECISION,
    Row,
    as_decimal,
    bounded,
    numeric_rank,
    wider,
    wider_row,
)
from translator.ir import RAISE_ERROR, WILDCARD, Assignment, Atom, Condition, Rule

AtomTypes = Callable[[int, Atom], Row]  # the column types a body atom (by body position) reads
Scoped = tuple[exp.Expr, Mapping[str, T.DataType]]  # an expression, and its variables' types


# ------------------------------------------------------------------ expressions


CAST_TYPES = {
    exp.DataType.Type.TINYINT: T.ByteType,
    exp.DataType.Type.SMALLINT: T.ShortType,
    exp.DataType.Type.INT: T.IntegerType,
    exp.DataType.Type.BIGINT: T.LongType,
    exp.DataType.Type.FLOAT: T.FloatType,
    exp.DataType.Type.DOUBLE: T.DoubleType,
    exp.DataType.Type.TEXT: T.StringType,
    exp.DataType.Type.VARCHAR: T.StringType,
    exp.DataType.Type.BOOLEAN: T.BooleanType,
    exp.DataType.Type.DATE: T.DateType,
}
COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ)
ARITHMETIC = (exp.Add, exp.Sub, exp.Mul)


def expression_type(expression: exp.Expr, variables: Mapping[str, T.DataType]) -> T.DataType:
    """The Spark type of `expression` over variables of the given types."""
    node = expression
    if isinstance(node, exp.Paren):
        return expression_type(node.this, variables)
    if isinstance(node, exp.Column):
        if node.name not in variables:
            raise NotInferred(f"unbound variable {node.name}")
        return variables[node.name]
    if isinstance(node, exp.Literal):
        return literal_type(node)
    if isinstance(node, exp.Null):
        return T.NullType()
    if isinstance(node, exp.Boolean):
        return T.BooleanType()
    if raises_error(node):
        return T.NullType()
    if isinstance(node, exp.Neg):
        return numeric(expression_type(node.this, variables))
    if isinstance(node, (exp.And, exp.Or, exp.Not)):
        for argument in node.iter_expressions():
            boolean(expression_type(argument, variables))
        return T.BooleanType()
    if isinstance(node, COMPARISONS):
        comparable(expression_type(node.this, variables), expression_type(node.expression, variables))
        return T.BooleanType()
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        expression_type(node.this, variables)
        return T.BooleanType()
    if isinstance(node, exp.In) and not node.args.get("query"):
        operand = expression_type(node.this, variables)
        for item in node.expressions:
            comparable(operand, expression_type(item, variables))
        return T.BooleanType()
    if isinstance(node, exp.Between):
        operand = expression_type(node.this, variables)
        for bound in (node.args["low"], node.args["high"]):
            comparable(operand, expression_type(bound, variables))
        return T.BooleanType()
    if isinstance(node, ARITHMETIC):
        return arithmetic(node, variables)
    if isinstance(node, exp.Div) and not isinstance(node, exp.IntDiv):
        operands = decimal_operands(node, variables)
        if operands is None or isinstance(expression_type(node.this, variables), T.NullType):
            return T.DoubleType()  # an untyped NULL dividend is a double to Spark, whatever the divisor
        return division_type(*operands)
    if isinstance(node, (exp.IntDiv, exp.Mod)):
        numbers = operand_types(node, variables)
        if not all(isinstance(o, INTEGRAL) for o in numbers):
            raise NotInferred(f"{node.key} of non-integral operands")
        return T.LongType() if isinstance(node, exp.IntDiv) else wider(*numbers)
    if isinstance(node, (exp.Cast, exp.TryCast)):
        return cast_type(node, expression_type(node.this, variables))
    if isinstance(node, (exp.Coalesce, exp.Least, exp.Greatest)):
        result: T.DataType = T.NullType()
        for operand in [node.this, *node.expressions]:
            result = wider(result, expression_type(operand, variables))
        return result
    if isinstance(node, exp.Case) and node.this is None:
        result = expression_type(node.args["default"], variables) if node.args.get("default") else T.NullType()
        for branch in node.args["ifs"]:
            boolean(expression_type(branch.this, variables))
            result = wider(result, expression_type(branch.args["true"], variables))
        return result
    if isinstance(node, exp.AggFunc):
        return aggregate_type(node, variables)
    if isinstance(node, exp.DPipe):  # strings joined: NULL if either is, in both engines
        for operand in (node.this, node.expression):
            text(expression_type(operand, variables))
        return T.StringType()
    if isinstance(node, exp.Length) and not node.args.get("binary"):  # a string's characters, in both engines
        text(expression_type(node.this, variables))
        return T.IntegerType()
    if isinstance(node, FUNCTIONS):
        return function_type(node, variables)
    if isinstance(node, ARRAY_FUNCTIONS):
        return array_function_type(node, lambda operand: expression_type(operand, variables), wider)
    raise NotInferred(f"expression {node.sql(dialect='spark')}")


def raises_error(node: exp.Expr) -> bool:
    """`raise_error('message')`: fails the query where it is evaluated (DuckDB's `error`), of no value."""
    return (
        isinstance(node, exp.Anonymous)
        and node.name.lower() == RAISE_ERROR
        and len(node.expressions) == 1
        and isinstance(node.expressions[0], exp.Literal)
        and node.expressions[0].is_string
    )


def literal_type(literal: exp.Literal) -> T.DataType:
    if literal.is_string:
        return T.StringType()
    text = literal.this
    if "e" in text.lower():
        return T.DoubleType()
    value = Decimal(text)
    if "." not in text:
        if -(2**31) <= value < 2**31:
            return T.IntegerType()
        if -(2**63) <= value < 2**63:
            return T.LongType()
    _sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)  # a finite number: not NaN or infinity
    scale = max(-exponent, 0)
    precision = max(len(digits), scale)
    if precision > MAX_PRECISION:
        raise NotInferred(f"literal {text}")
    return T.DecimalType(precision, scale)


def numeric(data_type: T.DataType) -> T.DataType:
    """A number type (arithmetic on untyped NULLs alone takes a type from Spark's coercion rules: avoided)."""
    if numeric_rank(data_type) is None and not isinstance(data_type, T.DecimalType):
        raise NotInferred(f"arithmetic on {data_type.simpleString()}")
    return data_type


def boolean(data_type: T.DataType) -> None:
    if not isinstance(data_type, (T.BooleanType, T.NullType)):
        raise NotInferred(f"{data_type.simpleString()} used as a condition")


def family(data_type: T.DataType) -> str:
    if isinstance(data_type, (*INTEGRAL, *FRACTIONAL, T.DecimalType)):
        return "number"
    if isinstance(data_type, (T.DateType, T.TimestampType)):
        return "time"
    return type(data_type).__name__


def comparable(left: T.DataType, right: T.DataType) -> None:
    """Both sides compare the same way in Spark and DuckDB (no implicit string <-> number casts)."""
    if isinstance(left, T.NullType) or isinstance(right, T.NullType):
        return
    if family(left) != family(right):
        raise NotInferred(f"comparison of {left.simpleString()} with {right.simpleString()}")


def arithmetic(node: exp.Expr, variables: Mapping[str, T.DataType]) -> T.DataType:
    if isinstance(node.expression, exp.Interval) and isinstance(node, (exp.Add, exp.Sub)):
        return date_arithmetic(expression_type(node.this, variables), node.expression)
    operands = decimal_operands(node, variables)
    if operands is None:
        return wider(*operand_types(node, variables))
    a, b = operands
    if isinstance(node, exp.Mul):
        return adjusted(a.precision + b.precision + 1, a.scale + b.scale)
    scale = max(a.scale, b.scale)
    return adjusted(max(a.precision - a.scale, b.precision - b.scale) + scale + 1, scale)


def decimal_operands(node: exp.Expr, variables: Mapping[str, T.DataType]) -> tuple[T.DecimalType, ...] | None:
    """The operands of a binary arithmetic node as the decimals Spark computes it with, when one is a
    decimal and neither is floating point (None otherwise): an integral operand as the decimal that holds
    its type's values, an integral literal as the fewest digits that hold it (Spark's
    literalPickMinimumPrecision)."""
    types = operand_types(node, variables)
    if not any(isinstance(t, T.DecimalType) for t in types) or any(isinstance(t, FRACTIONAL) for t in types):
        return None
    return tuple(decimal_operand(o, t) for o, t in zip((node.this, node.expression), types))


def decimal_operand(node: exp.Expr, data_type: T.DataType) -> T.DecimalType:
    """An operand beside a decimal as a decimal (operand_types let only integral and decimal ones through)."""
    decimal = literal_decimal(node) or as_decimal(data_type)
    if decimal is None:
        raise NotInferred(f"decimal arithmetic with {data_type.simpleString()}")
    return decimal


def operand_types(node: exp.Expr, variables: Mapping[str, T.DataType]) -> tuple[T.DataType, T.DataType]:
    """The number types of a binary arithmetic node's operands: an untyped NULL beside a number takes its
    type, as Spark casts it to the wider of the two (a column of a relation with no facts yet is one)."""
    left, right = (expression_type(o, variables) for o in (node.this, node.expression))
    if isinstance(left, T.NullType) != isinstance(right, T.NullType):
        left, right = (right, right) if isinstance(left, T.NullType) else (left, left)
    return numeric(left), numeric(right)


def literal_decimal(node: exp.Expr) -> T.DecimalType | None:
    """The decimal type Spark gives an integral literal beside a decimal: as many digits as it has."""
    literal = node.this if isinstance(node, exp.Neg) else node
    if not isinstance(literal, exp.Literal) or literal.is_string or not literal.this.isdigit():
        return None
    return T.DecimalType(max(len(literal.this.lstrip("0")), 1), 0)


def division_type(a: T.DecimalType, b: T.DecimalType) -> T.DecimalType:
    """Spark's decimal division: at least 6 fractional digits, more as the operands need."""
    scale = max(6, a.scale + b.precision + 1)
    return adjusted(a.precision - a.scale + b.scale + scale, scale)


def adjusted(precision: int, scale: int) -> T.DecimalType:
    """A decimal result too wide for 38 digits keeps its integral digits and at least 6 fractional
    digits (Spark's adjustPrecisionScale)."""
    if precision <= MAX_PRECISION:
        return T.DecimalType(precision, scale)
    integral_digits = precision - scale
    return T.DecimalType(MAX_PRECISION, max(MAX_PRECISION - integral_digits, min(scale, 6)))


FUNCTIONS = (exp.Like, exp.Extract, exp.Year, exp.Month, exp.Day, exp.Substring)
DATE_PARTS = {"YEAR": exp.Year, "MONTH": exp.Month, "DAY": exp.Day}
INTERVAL_UNITS = ("DAY", "MONTH", "YEAR")


def function_type(node: exp.Expr, variables: Mapping[str, T.DataType]) -> T.DataType:
    """LIKE with a literal pattern (no escapes: Spark's escape character is not DuckDB's), the year,
    month or day of a date, and SUBSTRING from a literal position of 1 or more (Spark and DuckDB count
    positions below 1 differently)."""
    if isinstance(node, exp.Like):
        pattern = node.expression
        if not (isinstance(pattern, exp.Literal) and pattern.is_string and "\\" not in pattern.this) or node.args.get(
            "escape"
        ):
            raise NotInferred(f"LIKE {pattern.sql(dialect='spark')}")
        text(expression_type(node.this, variables))
        return T.BooleanType()
    if isinstance(node, exp.Substring):
        text(expression_type(node.this, variables))
        for bound, least in ((node.args.get("start"), 1), (node.args.get("length"), 0)):
            if bound is not None and not (
                isinstance(bound, exp.Literal) and bound.this.isdigit() and int(bound.this) >= least
            ):
                raise NotInferred(f"SUBSTRING from {bound.sql(dialect='spark')}")
        return T.StringType()
    operand = node.expression if isinstance(node, exp.Extract) else node.this
    if isinstance(operand, exp.TsOrDsToDate):  # year(d) reads d as a date
        operand = operand.this
    part = node.this.name.upper() if isinstance(node, exp.Extract) else node.key.upper()
    if part not in DATE_PARTS or not isinstance(expression_type(operand, variables), (T.DateType, T.NullType)):
        raise NotInferred(f"expression {node.sql(dialect='spark')}")
    return T.IntegerType()


def date_arithmetic(operand: T.DataType, interval: exp.Interval) -> T.DataType:
    """A date plus or minus a whole number of days, months or years is a date."""
    unit = interval.unit.name.upper() if interval.unit is not None else ""
    amount = interval.this.name if isinstance(interval.this, exp.Literal) else ""
    if not isinstance(operand, T.DateType) or unit not in INTERVAL_UNITS or not amount.isdigit():
        raise NotInferred(f"arithmetic on {operand.simpleString()} with {interval.sql(dialect='spark')}")
    return T.DateType()


def text(data_type: T.DataType) -> None:
    if not isinstance(data_type, (T.StringType, T.NullType)):
        raise NotInferred(f"a string function of {data_type.simpleString()}")


def cast_type(node: exp.Cast, source: T.DataType) -> T.DataType:
    """The cast's target, for the casts that convert alike in both engines (a value that does not fit
    is an error in both): a number to a wider number, to a decimal or to double, an integral to a
    string, a string literal to a date, NULL to anything, a type to itself."""
    to = node.args["to"]
    if to.this == exp.DataType.Type.DECIMAL:
        params = [int(p.this.this) for p in to.expressions] or [10, 0]
        target: T.DataType = T.DecimalType(params[0], params[1] if len(params) > 1 else 0)
    elif to.this in CAST_TYPES:
        target = CAST_TYPES[to.this]()
    else:
        raise NotInferred(f"cast to {to.sql(dialect='spark')}")
    if source == target or isinstance(source, T.NullType):
        return target
    exact = isinstance(source, (*INTEGRAL, T.DecimalType))
    if exact and isinstance(target, (T.DecimalType, T.DoubleType)):
        return target
    if isinstance(source, INTEGRAL) and (
        isinstance(target, T.StringType)
        or (isinstance(target, INTEGRAL) and INTEGRAL.index(type(target)) >= INTEGRAL.index(type(source)))
    ):
        return target
    if isinstance(source, T.StringType) and isinstance(target, T.DateType) and isinstance(node.this, exp.Literal):
        return target
    raise NotInferred(f"cast of {source.simpleString()} to {target.simpleString()}")


def aggregate_type(node: exp.AggFunc, variables: Mapping[str, T.DataType]) -> T.DataType:
    if isinstance(node, exp.Count):
        argument = node.this
        if argument is not None and not isinstance(argument, exp.Star):
            operands = argument.expressions if isinstance(argument, exp.Distinct) else [argument]
            for operand in operands:
                expression_type(operand, variables)
        return T.LongType()
    if not isinstance(node, (exp.Sum, exp.Min, exp.Max, exp.Avg, exp.AnyValue)) or isinstance(node.this, exp.Distinct):
        raise NotInferred(f"aggregate {node.sql(dialect='spark')}")
    operand = expression_type(node.this, variables)
    if isinstance(node, (exp.Min, exp.Max, exp.AnyValue)):
        return operand
    if isinstance(node, exp.Sum):
        return sum_type(operand)
    decimal = numeric(operand)
    if isinstance(decimal, T.DecimalType):
        return average_type(decimal)
    return T.DoubleType()


def average_type(operand: T.DecimalType) -> T.DecimalType:
    """avg() of a decimal: four more fractional digits."""
    return bounded(operand.precision + 4, operand.scale + 4)


def sum_type(operand: T.DataType) -> T.DataType:
    """What sum() gives: bigint for integers, double for floating point, ten more digits for decimals."""
    if isinstance(operand, INTEGRAL):
        return T.LongType()
    if isinstance(operand, FRACTIONAL):
        return T.DoubleType()
    if isinstance(operand, T.DecimalType):
        return bounded(operand.precision + 10, operand.scale)
    raise NotInferred(f"sum of {operand.simpleString()}")


# ------------------------------------------------------------------ rules


class RuleExpressions(NamedTuple):
    """Every expression of a rule with the types of the variables it reads."""

    assignments: list[Scoped]
    conditions: list[Scoped]  # WHERE conditions, and join conditions (reading the joined atom too)
    terms: list[Scoped]  # the head's

    def all(self) -> list[Scoped]:
        return self.assignments + self.conditions + self.terms


def rule_types(rule: Rule, atom_types: AtomTypes) -> Row:
    """The types of the facts `rule` derives. Conditions are checked to be inferable too."""
    expressions = rule_expressions(rule, atom_types)
    for condition, variables in expressions.conditions:
        boolean(expression_type(condition, variables))
    return tuple(expression_type(term, variables) for term, variables in expressions.terms)


def rule_expressions(rule: Rule, atom_types: AtomTypes) -> RuleExpressions:
    variables = rule_variables(rule, atom_types)
    conditions: list[Scoped] = []
    for position, literal in enumerate(rule.body):
        if isinstance(literal, Condition):
            conditions.append((literal.expression, variables))
        elif isinstance(literal, Atom) and literal.on is not None:
            scope = dict(variables)
            bind(scope, literal, atom_types(position, literal))
            conditions.append((literal.on, scope))
    assignments: list[Scoped] = [
        (literal.expression, variables) for literal in rule.body if isinstance(literal, Assignment)
    ]
    return RuleExpressions(assignments, conditions, [(term, variables) for term in rule.terms])


def rule_variables(rule: Rule, atom_types: AtomTypes) -> dict[str, T.DataType]:
    """The type of each variable of `rule`, binding each as rules.py's joins do (the first atom binding a
    variable gives its type; outer-joined atoms after the inner ones; assignments as soon as their
    inputs are bound)."""
    variables: dict[str, T.DataType] = {}
    positive = [(i, a) for i, a in enumerate(rule.body) if isinstance(a, Atom) and not a.filters]
    ordered = [p for p in positive if not p[1].optional] + [p for p in positive if p[1].optional]
    for position, atom in ordered:
        bind(variables, atom, atom_types(position, atom))
    assignments = [literal for literal in rule.body if isinstance(literal, Assignment)]
    while assignments:
        ready = [a for a in assignments if a.variables() <= variables.keys()]
        if not ready:
            raise NotInferred(f"rule {rule} binds no variable for {assignments[0]}")
        for assignment in ready:
            variables[assignment.variable] = expression_type(assignment.expression, variables)
            assignments.remove(assignment)
    return variables


def bind(variables: dict[str, T.DataType], atom: Atom, types: Sequence[T.DataType]) -> None:
    for argument, data_type in zip(atom.args, types):
        if argument != WILDCARD:
            variables.setdefault(argument, data_type)


class SparkTypeRules:
    """Spark's types in the terms merge queries tell their result types in (sql/queries.TypeRules)."""

    integer = T.IntegerType()
    string = T.StringType()

    @staticmethod
    def wider(left: Row, right: Row) -> Row:
        return wider_row(left, right)

    @staticmethod
    def total(value: T.DataType) -> T.DataType:
        return sum_type(value)


SPARK_TYPES = SparkTypeRules()
