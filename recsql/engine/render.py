"""A rule as a Spark DataFrame: atoms joined on their shared variables in body order (the optimizer
chose it), conditions applied as soon as their variables are bound, semi- and anti-joins last, then
the head's projection or aggregation.

Every relation's DataFrame has positional columns `c0 .. cN`; inside a rule, columns are named after the
IR variables, so expressions (sqlglot trees over variables) render directly to Spark SQL.
"""

from __future__ import annotations

from typing import Callable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from sqlglot import exp

from translator.ir import WILDCARD, Assignment, Atom, Condition, Rule

AtomFrames = Callable[[int, Atom], DataFrame]


def column_names(width: int) -> list[str]:
    return [f"c{i}" for i in range(width)]


def spark_expression(expression: exp.Expression) -> Column:
    return F.expr(expression.sql(dialect="spark", identify=True))


def render_rule(
    spark: SparkSession,
    rule: Rule,
    frame_of: AtomFrames,
    extra_terms: tuple[exp.Expression, ...] = (),
) -> DataFrame:
    """The facts `rule` derives, given the DataFrame for each body atom (by body position).

    `extra_terms` are appended after the head's columns (contributor keys of monotonic sum/count)."""
    frame, bound = join_body(spark, rule, frame_of)
    terms = list(rule.terms) + list(extra_terms)
    names = column_names(len(terms))
    if not rule.is_aggregate:
        return frame.select(*[spark_expression(t).alias(n) for t, n in zip(terms, names)])
    keys = [(t, n) for t, n in zip(terms, names) if not t.find(exp.AggFunc)]
    aggregates = [spark_expression(t).alias(n) for t, n in zip(terms, names) if t.find(exp.AggFunc)]
    grouped = frame.groupBy(*[spark_expression(t).alias(n) for t, n in keys]) if keys else frame.groupBy()
    return grouped.agg(*aggregates).select(*names)


def join_body(spark: SparkSession, rule: Rule, frame_of: AtomFrames) -> tuple[DataFrame, set[str]]:
    positive = [(i, lit) for i, lit in enumerate(rule.body) if isinstance(lit, Atom) and not lit.filters]
    pending = [lit for lit in rule.body if isinstance(lit, (Condition, Assignment))]
    filters = [(i, lit) for i, lit in enumerate(rule.body) if isinstance(lit, Atom) and lit.filters]

    frame: DataFrame | None = None
    bound: set[str] = set()
    # inner joins in the order the body lists them (the optimizer's join order), then outer joins in
    # written order: their ON conditions read only atoms before them
    ordered = [p for p in positive if not p[1].optional] + [p for p in positive if p[1].optional]
    for position, atom in ordered:
        atom_frame = bind_atom(frame_of(position, atom), atom)
        if atom.optional:
            outer = frame if frame is not None else spark.range(1).select()
            frame = outer.join(atom_frame, on=spark_expression(atom.on), how="left")
        elif frame is None:
            frame = atom_frame
        else:
            frame = join(frame, atom_frame, sorted(atom.variables() & bound), "inner", atom.nulls_equal)
        bound |= atom.variables()
        frame, pending = apply_ready(frame, bound, pending)
    if frame is None:
        frame = spark.range(1).select()
    frame, pending = apply_ready(frame, bound, pending)
    if pending:
        unbound = set().union(*(literal.variables() for literal in pending)) - bound
        raise ValueError(f"rule {rule} uses unbound variables {sorted(unbound)}")
    for position, atom in filters:
        atom_frame = bind_atom(frame_of(position, atom), atom)
        shared = sorted(atom.variables() & bound)
        how = "left_semi" if atom.semi else "left_anti"
        if atom.on is not None:
            frame = conditional_join(frame, atom_frame, shared, atom.on, how)
        else:
            frame = join(frame, atom_frame, shared, how, atom.nulls_equal)
    return frame, bound


def conditional_join(left: DataFrame, right: DataFrame, keys: list[str], on: exp.Expression, how: str) -> DataFrame:
    """Semi- or anti-join of `left` with the rows of `right` equal on `keys` and satisfying `on` (EXISTS with
    a condition, NOT IN's null-aware anti-join)."""
    renamed = right.select(*[F.col(c).alias(f"__r_{c}") if c in keys else F.col(c) for c in right.columns])
    condition = spark_expression(on)
    for key in keys:
        condition = condition & (F.col(key) == F.col(f"__r_{key}"))
    return left.join(renamed, on=condition, how=how)


def join(left: DataFrame, right: DataFrame, keys: list[str], how: str, nulls_equal: bool = False) -> DataFrame:
    """Join on the shared variables `keys` (a cross product when there are none)."""
    if not keys:
        return left.crossJoin(right) if how == "inner" else left.join(right, how=how)
    if nulls_equal:
        return null_safe_join(left, right, keys, how)
    return left.join(right, on=keys, how=how)


def null_safe_join(left: DataFrame, right: DataFrame, keys: list[str], how: str) -> DataFrame:
    """Join on `keys` treating NULL as equal to NULL, as set operations do; keeps the left key columns."""
    renamed = right.select(*[F.col(c).alias(f"__r_{c}") if c in keys else F.col(c) for c in right.columns])
    condition = [F.col(k).eqNullSafe(F.col(f"__r_{k}")) for k in keys]
    joined = left.join(renamed, on=condition, how=how)
    return joined if how in ("left_semi", "left_anti") else joined.drop(*[f"__r_{k}" for k in keys])


def apply_ready(frame: DataFrame, bound: set[str], pending: list) -> tuple[DataFrame, list]:
    """Apply conditions and assignments whose variables are bound, repeatedly (assignments bind more)."""
    progress = True
    while progress:
        progress = False
        for literal in list(pending):
            if not literal.variables() <= bound:
                continue
            pending.remove(literal)
            progress = True
            if isinstance(literal, Condition):
                frame = frame.filter(spark_expression(literal.expression))
            else:
                frame = frame.withColumn(literal.variable, spark_expression(literal.expression))
                bound.add(literal.variable)
    return frame, pending


def bind_atom(frame: DataFrame, atom: Atom) -> DataFrame:
    """Name the columns of a relation's frame after the atom's variables; a variable repeated in one atom
    becomes an equality filter, wildcards are dropped."""
    names, seen, equalities, dropped = [], set(), [], []
    for i, arg in enumerate(atom.args):
        if arg == WILDCARD or arg in seen:
            temporary = f"__{i}"
            names.append(temporary)
            dropped.append(temporary)
            if arg != WILDCARD:
                equalities.append((arg, temporary))
        else:
            names.append(arg)
            seen.add(arg)
    frame = frame.toDF(*names)
    for variable, temporary in equalities:
        frame = frame.filter(F.col(variable) == F.col(temporary))
    return frame.drop(*dropped) if dropped else frame


