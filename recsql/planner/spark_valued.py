"""Expressions whose values only Spark gives: those of its random generator (rand, randn, uniform, randstr,
shuffle, uuid; seeded or not, a seed's values are those of Spark's generator over Spark's partitions), and
those that depend on how Spark splits and reads the rows or on its JVM (monotonically_increasing_id,
spark_partition_id, input_file_name, reflect). DuckDB has functions of some of these names, with other
values: the planner has a relation computing one evaluated by Spark SQL, never by the local evaluator (in
this process or inside a Spark task)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sqlglot import exp

from translator.ir import Assignment, Atom, Condition, Rule

GENERATED = (exp.Rand, exp.Randn, exp.Uniform, exp.Randstr, exp.Shuffle, exp.Uuid)
SPARK_FUNCTIONS = frozenset(
    {
        "monotonically_increasing_id",
        "spark_partition_id",
        "input_file_name",
        "input_file_block_start",
        "input_file_block_length",
        "reflect",
        "java_method",
        "try_reflect",
    }
)


def spark_valued(rules: Iterable[Rule]) -> exp.Expression | None:
    """The first call in the rules whose value only Spark gives; None when they have none."""
    for rule in rules:
        for expression in rule_expressions(rule):
            found = next((node for node in expression.walk() if only_spark_computes(node)), None)
            if found is not None:
                return found
    return None


def only_spark_computes(node: exp.Expression) -> bool:
    if isinstance(node, GENERATED):
        return True
    return isinstance(node, exp.Anonymous) and node.name.lower() in SPARK_FUNCTIONS


def rule_expressions(rule: Rule) -> Iterator[exp.Expression]:
    """Every expression a rule computes: its head terms, conditions, assignments, join conditions and
    table functions' arguments."""
    yield from rule.terms
    for literal in rule.body:
        if isinstance(literal, (Condition, Assignment)):
            yield literal.expression
        elif isinstance(literal, Atom):
            yield from literal.call_args
            if literal.on is not None:
                yield literal.on
