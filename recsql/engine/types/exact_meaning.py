"""What the DuckDB printer must know to compute a plan's expressions exactly as Spark does: the Spark type of
each decimal result (Spark rounds a product or quotient to its type, half up), the operand types of a
decimal division or average (computed exactly, in 128-bit integers), and which sums are dates plus an
interval (a date in Spark, a timestamp in DuckDB), and which indexes and reversals are of arrays (not of maps
or strings: Spark's array indexes count differently and fail out of bounds).

`annotate` records them in the expression nodes' `meta` (plain numbers: the printer knows no Spark
types), for a plan that runs in this process. Only non-recursive relations are annotated: a recursive
relation's types may change from one iteration to the next, so a recursion holding a decimal division
or average is left to Spark; an array stays an array, so array operands are marked in every relation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from pyspark.sql import types as T
from sqlglot import exp

from recsql.engine.sql.arrays import ARRAY
from recsql.engine.sql.printing import AVERAGE, DATE_ARITHMETIC, DECIMAL, DIVISION
from recsql.engine.types.errors import NotInferred
from recsql.engine.types.result_types import outside_types
from recsql.engine.types.spark_types import (
    decimal_operands,
    division_type,
    expression_type,
    rule_expressions,
)
from recsql.engine.types.widening import Row
from recsql.planner.plan import Plan
from translator.ir import Rule


def annotate(plan: Plan, types: Mapping[str, Row]) -> None:
    """Annotate the rules of the plan's non-recursive relations; NotInferred for a recursion whose rules
    divide or average decimals."""
    program = plan.program
    for stratum in plan.strata:
        rules = [rule for name in stratum.relations for rule in program.rules_for(name)]
        if not stratum.component.recursive:
            annotate_rules(rules, types.__getitem__)
            continue
        for rule in rules:
            for expression, variables in rule_expressions(
                rule, lambda _, atom: outside_types(types.__getitem__, atom)
            ).all():
                for node in expression.walk():
                    mark_array(node, variables)
                    refuse_inexact(node, variables)


def annotate_rules(rules: Iterable[Rule], types: Callable[[str], Row]) -> None:
    """Annotate rules that read only relations whose types are known (`types`): a non-recursive
    relation's, or a recursion's exit rules that the tasks of a one-job strategy evaluate. NotInferred
    where Python does not derive a type."""
    for rule in rules:
        for expression, variables in rule_expressions(rule, lambda _, atom: outside_types(types, atom)).all():
            for node in expression.walk():
                mark_array(node, variables)
                annotate_node(node, variables)


def annotate_node(node: exp.Expr, variables: Mapping[str, T.DataType]) -> None:
    if isinstance(node, (exp.Add, exp.Sub)) and isinstance(node.expression, exp.Interval):
        node.meta[DATE_ARITHMETIC] = True
    elif isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Sum)):
        result = expression_type(node, variables)
        if isinstance(result, T.DecimalType):
            node.meta[DECIMAL] = (result.precision, result.scale)
    elif isinstance(node, exp.Div) and not isinstance(node, exp.IntDiv):
        operands = decimal_operands(node, variables)
        if operands is not None:
            result = division_type(*operands)
            node.meta[DIVISION] = (*decimal(operands[0]), *decimal(operands[1]), *decimal(result))
    elif isinstance(node, exp.Avg):
        operand = expression_type(node.this, variables)
        if isinstance(operand, T.DecimalType):
            node.meta[AVERAGE] = (*decimal(operand), *decimal(expression_type(node, variables)))


def mark_array(node: exp.Expr, variables: Mapping[str, T.DataType]) -> None:
    if isinstance(node, (exp.Bracket, exp.Reverse)) and isinstance(expression_type(node.this, variables), T.ArrayType):
        node.meta[ARRAY] = True


def refuse_inexact(node: exp.Expr, variables: Mapping[str, T.DataType]) -> None:
    division = isinstance(node, exp.Div) and not isinstance(node, exp.IntDiv) and decimal_operands(node, variables)
    average = isinstance(node, exp.Avg) and isinstance(expression_type(node.this, variables), T.DecimalType)
    if division or average:
        raise NotInferred(f"decimal {'division' if division else 'average'} inside a recursion")


def decimal(data_type: T.DataType) -> tuple[int, int]:
    assert isinstance(data_type, T.DecimalType)
    return data_type.precision, data_type.scale
