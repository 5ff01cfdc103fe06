"""Spark's array functions printed for DuckDB with Spark's meaning.

DuckDB's list functions differ from Spark's array functions in NULLs (a NULL element makes Spark's
membership tests unknown, not false), in order (Spark keeps the first occurrences in their order), in
positions (Spark's `a[i]` counts from 0, a lambda's index too) and in errors (an index out of bounds is an
error under ANSI). Each rewrite is a DuckDB template whose :name placeholders stand for the call's
arguments, themselves already printed with Spark's meaning.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import sqlglot
from sqlglot import exp

ARRAY = "spark_array"  # in a node's meta (types/exact_meaning.py): its operand is an array, not a map or string
INDEX_OF_ZERO = (
    "[INVALID_INDEX_OF_ZERO] The index 0 is invalid. An index shall be either < 0 or > 0 (the first "
    "element has index 1)."
)
OUT_OF_BOUNDS = "'[{condition}] The index ' || :i || ' is out of bounds. The array has ' || len(:a) || ' elements.'"

HAS_NULL = "list_count({list}) < len({list})"
# the elements of :a kept at their first occurrence, in order, where `keep` holds of the element _e
FIRST_OCCURRENCES = "list_filter({list}, lambda _e, _i: list_position({list}, _e) = _i{keep})"
# an index counted from 1, from the end when negative: element_at's
ELEMENT_AT = (
    "CASE WHEN :i = 0 THEN error('"
    + INDEX_OF_ZERO
    + "') WHEN abs(:i) > len(:a) THEN {out} ELSE list_extract(:a, :i) END"
)
# an index counted from 0: a[i]'s and get's
ZERO_BASED = "CASE WHEN :i < 0 OR :i >= len(:a) THEN {out} ELSE list_extract(:a, :i + 1) END"
# Spark's three-valued search: found, else unknown when a NULL might have matched, else not found
SEARCH = "CASE WHEN {null} THEN NULL WHEN {found} THEN TRUE WHEN {unknown} THEN NULL ELSE FALSE END"
NULL_IF = "CASE WHEN {null} THEN NULL ELSE {value} END"
# Spark's exists(a, f), of which forall(a, f) is NOT exists(a, NOT f)
EXISTS = SEARCH.format(
    null=":a IS NULL",
    found="list_bool_or(list_transform(:a, :f))",
    unknown=HAS_NULL.format(list="list_transform(:a, :f)"),
)

TEMPLATES: dict[type[exp.Expr] | str, str] = {
    exp.ArrayContains: SEARCH.format(
        null=":a IS NULL OR :v IS NULL", found="list_contains(:a, :v)", unknown=HAS_NULL.format(list=":a")
    ),
    "arrays_overlap": SEARCH.format(
        null=":a IS NULL OR :b IS NULL",
        found="list_has_any(:a, :b)",
        unknown=f"len(:a) > 0 AND len(:b) > 0 AND ({HAS_NULL.format(list=':a')} OR {HAS_NULL.format(list=':b')})",
    ),
    exp.ArrayDistinct: FIRST_OCCURRENCES.format(list=":a", keep=""),
    exp.ArrayExcept: NULL_IF.format(
        null=":b IS NULL", value=FIRST_OCCURRENCES.format(list=":a", keep=" AND list_position(:b, _e) IS NULL")
    ),
    exp.ArrayIntersect: NULL_IF.format(
        null=":b IS NULL", value=FIRST_OCCURRENCES.format(list=":a", keep=" AND list_position(:b, _e) IS NOT NULL")
    ),
    "array_union": NULL_IF.format(
        null=":a IS NULL OR :b IS NULL", value=FIRST_OCCURRENCES.format(list="list_concat(:a, :b)", keep="")
    ),
    exp.ArrayPosition: NULL_IF.format(null=":a IS NULL OR :v IS NULL", value="coalesce(list_position(:a, :v), 0)"),
    exp.ArrayRemove: NULL_IF.format(null=":v IS NULL", value="list_filter(:a, lambda _e: _e IS DISTINCT FROM :v)"),
    exp.Flatten: NULL_IF.format(null=HAS_NULL.format(list=":a"), value="flatten(:a)"),
    exp.ArrayToString: "array_to_string(list_filter(:a, lambda _e: _e IS NOT NULL), :d)",
    "array_repeat": "list_transform(range(:n), lambda _i: :v)",
    "get": ZERO_BASED.format(out="NULL"),
    exp.GenerateSeries: (
        "CASE WHEN :s <= :e THEN generate_series(:s, :e) ELSE list_reverse(generate_series(:e, :s)) END"
    ),
    exp.Reverse: "list_reverse(:a)",
    exp.ArrayInsert: (
        "CASE WHEN :a IS NULL OR :p IS NULL THEN NULL WHEN :p = 0 THEN error('" + INDEX_OF_ZERO + "') "
        "WHEN :p > 0 THEN list_concat(list_slice(:a, 1, :p - 1), {nulls_before}, [:v], list_slice(:a, :p, len(:a))) "
        "ELSE list_concat(list_slice(:a, 1, greatest(len(:a) + :p + 1, 0)), [:v], {nulls_after}, "
        "list_slice(:a, greatest(len(:a) + :p + 2, 1), len(:a))) END"
    ).format(
        nulls_before="list_transform(range(greatest(:p - 1 - len(:a), 0)), lambda _i: NULL)",
        nulls_after="list_transform(range(greatest(-:p - 1 - len(:a), 0)), lambda _i: NULL)",
    ),
    "zip_with": NULL_IF.format(
        null=":a IS NULL OR :b IS NULL",
        value=("list_transform(range(1, greatest(len(:a), len(:b)) + 1), lambda _i: :f)"),
    ),
}


def spark_array(node: exp.Expr, recurse: Callable[[exp.Expr], exp.Expr], ansi: bool) -> exp.Expr | None:
    """The DuckDB rendering of an array function whose DuckDB meaning differs from Spark's (its arguments
    printed by `recurse`); None for any other node."""
    if isinstance(node, exp.Bracket):
        return bracket(node, recurse, ansi) if node.meta.get(ARRAY) else None
    if isinstance(node, (exp.Transform, exp.ArrayFilter)) and len(node.expression.expressions) == 2:
        return node.__class__(this=recurse(node.this), expression=counted_from_zero(recurse(node.expression)))
    if isinstance(node, exp.Anonymous) and node.name.lower() == "forall":
        array, function = node.expressions
        negated = exp.Lambda(this=exp.Not(this=exp.Paren(this=function.this.copy())), expressions=function.expressions)
        return exp.Not(this=exp.Paren(this=template(EXISTS, a=recurse(array), f=recurse(negated))))
    if isinstance(node, exp.Anonymous) and node.name.lower() == "zip_with":
        return zip_with(node, recurse)
    if isinstance(node, exp.Reduce) and node.args.get("finish") is not None:
        finish = node.args["finish"]
        reduced = node.__class__(**{**node.args, "finish": None})
        return substituted(finish.this, {finish.expressions[0].name: exp.Paren(this=recurse(reduced))})
    key = node.name.lower() if isinstance(node, exp.Anonymous) else type(node)
    arguments = ARGUMENTS[key](node) if key in ARGUMENTS and applies(node) else None
    if arguments is None:
        return None
    return template(TEMPLATES[key], **{name: recurse(value) for name, value in arguments.items()})


def applies(node: exp.Expr) -> bool:
    """Whether the template covers this call: reverse of an array (not a string), array_join without a
    NULL replacement, sequence without a step."""
    if isinstance(node, exp.Reverse):
        return bool(node.meta.get(ARRAY))
    if isinstance(node, exp.ArrayToString):
        return node.args.get("null") is None
    if isinstance(node, exp.GenerateSeries):
        return node.args.get("step") is None
    return True


# the arguments of each template, by placeholder (None: a call the template does not cover)
ARGUMENTS: dict[type[exp.Expr] | str, Callable[[exp.Expr], dict[str, exp.Expr] | None]] = {
    exp.ArrayContains: lambda n: {"a": n.this, "v": n.expression},
    "arrays_overlap": lambda n: {"a": n.expressions[0], "b": n.expressions[1]},
    exp.ArrayDistinct: lambda n: {"a": n.this},
    exp.ArrayExcept: lambda n: {"a": n.this, "b": n.expression},
    exp.ArrayIntersect: lambda n: {"a": n.expressions[0], "b": n.expressions[1]} if len(n.expressions) == 2 else None,
    "array_union": lambda n: {"a": n.expressions[0], "b": n.expressions[1]},
    exp.ArrayPosition: lambda n: {"a": n.this, "v": n.expression},
    exp.ArrayRemove: lambda n: {"a": n.this, "v": n.expression},
    exp.Flatten: lambda n: {"a": n.this},
    exp.ArrayToString: lambda n: {"a": n.this, "d": n.expression},
    "array_repeat": lambda n: {"v": n.expressions[0], "n": n.expressions[1]},
    "get": lambda n: {"a": n.expressions[0], "i": n.expressions[1]},
    exp.GenerateSeries: lambda n: {"s": n.args["start"], "e": n.args["end"]},
    exp.Reverse: lambda n: {"a": n.this},
    exp.ArrayInsert: lambda n: {"a": n.this, "p": n.args["position"], "v": n.expression},
}


def bracket(node: exp.Bracket, recurse: Callable[[exp.Expr], exp.Expr], ansi: bool) -> exp.Expr:
    """element_at(a, i) (from 1), try_element_at(a, i) and a[i] (from 0): Spark's error for an index out of
    bounds under ANSI (try_element_at's and, without ANSI, everyone's NULL); element_at's error for 0."""
    from_one = node.args.get("offset") == 1
    condition = "INVALID_ARRAY_INDEX_IN_ELEMENT_AT" if from_one else "INVALID_ARRAY_INDEX"
    out = f"error({OUT_OF_BOUNDS.format(condition=condition)})" if ansi and not node.args.get("safe") else "NULL"
    (index,) = node.expressions
    return template((ELEMENT_AT if from_one else ZERO_BASED).format(out=out), a=recurse(node.this), i=recurse(index))


def zip_with(node: exp.Anonymous, recurse: Callable[[exp.Expr], exp.Expr]) -> exp.Expr:
    """zip_with(a, b, (x, y) -> f): f over the elements at each position, NULL past the shorter array."""
    first, second, function = (recurse(argument) for argument in node.expressions)
    position = exp.to_identifier("_i")
    x, y = (param.name for param in function.expressions)
    body = substituted(
        function.this,
        {
            x: exp.func("list_extract", first.copy(), position.copy()),
            y: exp.func("list_extract", second.copy(), position.copy()),
        },
    )
    return template(TEMPLATES["zip_with"], a=first, b=second, f=body)


def counted_from_zero(function: exp.Expr) -> exp.Lambda:
    """A lambda over (element, index) reading DuckDB's index (from 1) as Spark's (from 0)."""
    index = function.expressions[1].name
    shifted = exp.Paren(this=exp.Sub(this=exp.to_identifier(index), expression=exp.Literal.number(1)))
    return exp.Lambda(this=substituted(function.this, {index: shifted}), expressions=function.expressions)


def substituted(body: exp.Expr, values: dict[str, exp.Expr]) -> exp.Expr:
    """`body` with each lambda parameter named in `values` replaced by its value."""

    def replace(node: exp.Expr) -> exp.Expr:
        if (
            isinstance(node, (exp.Identifier, exp.Column))
            and not isinstance(node.parent, exp.Column)
            and node.name in values
            and not (isinstance(node, exp.Column) and node.table)
        ):
            return values[node.name].copy()
        return node

    return body.copy().transform(replace)


@cache
def parsed(sql: str) -> exp.Expr:
    return sqlglot.parse_one(sql, read="duckdb")


def template(sql: str, **arguments: exp.Expr) -> exp.Expr:
    """The DuckDB expression `sql` with a copy of each argument in place of its :name placeholders."""

    def fill(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Placeholder) and node.name in arguments:
            value = arguments[node.name].copy()
            return (
                value
                if isinstance(value, (exp.Column, exp.Literal, exp.Identifier, exp.Lambda))
                else exp.Paren(this=value)
            )
        return node

    return parsed(sql).copy().transform(fill)
