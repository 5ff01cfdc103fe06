"""Spark's types of the array expressions that paths through a recursion are built with: array(...), a[i]
and element_at, array_contains, size, concat of arrays and the functions that keep their operand's type.
An array's elements are taken to be nullable (what Spark's unions and tables give)."""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce

from pyspark.sql import types as T
from sqlglot import exp

from recsql.engine.types.errors import NotInferred

ARRAY_FUNCTIONS = (
    exp.Array,
    exp.Bracket,
    exp.ArrayContains,
    exp.ArraySize,
    exp.Concat,
    exp.ArrayDistinct,
    exp.ArrayRemove,
    exp.Reverse,
)

Typer = Callable[[exp.Expr], T.DataType]
Wider = Callable[[T.DataType, T.DataType], T.DataType]


def array_function_type(node: exp.Expr, type_of: Typer, wider: Wider) -> T.DataType:
    """The type of one of ARRAY_FUNCTIONS, `type_of` giving its operands' and `wider` the type two
    element types meet in."""
    if isinstance(node, exp.Array):
        if not node.expressions:
            raise NotInferred("an empty array()")
        return T.ArrayType(reduce(wider, (type_of(e) for e in node.expressions)), True)
    if isinstance(node, exp.Concat):
        operands = [array_of(type_of(e), node) for e in node.expressions]
        return T.ArrayType(reduce(wider, (o.elementType for o in operands)), True)
    operand = array_of(type_of(node.this), node)
    if isinstance(node, exp.Bracket):
        return operand.elementType
    if isinstance(node, exp.ArrayContains):
        return T.BooleanType()
    return T.IntegerType() if isinstance(node, exp.ArraySize) else operand


def array_of(data_type: T.DataType, node: exp.Expr) -> T.ArrayType:
    if not isinstance(data_type, T.ArrayType):
        raise NotInferred(f"{node.sql(dialect='spark')} of {data_type.simpleString()}")
    return data_type
