"""An aggregate over a recursive relation that the tasks of a one-job strategy compute from their own
parts of its facts, so the facts never leave the tasks (strategies/decomposed.py, exchanged.py).

`SELECT count(*) FROM tc`, `SELECT src, min(d) FROM sp GROUP BY src`: each task reduces its part to
partial aggregates (a count, a sum, a min or max per group) and Spark combines those few rows into the
aggregate's answer (a sum of the counts, the min of the mins). A DISTINCT argument becomes a group key
of the partial aggregates instead: each task sends its distinct values, Spark counts them once.

The rewrite is syntactic and applies when the aggregate relation is the only reader of the recursive one
and reads it in a rule of one plain atom whose head terms are its variables and count / sum / min / max
calls over a variable (or `*`). Whether the column types allow it (a sum over DECIMAL does not: its
partial sums would be typed wider than Spark types the whole sum) is decided when the types are known.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from recsql.analysis import Component
from translator.ir import WILDCARD, Atom, Program, Rule

FUNCTIONS: dict[type[exp.Expr], str] = {exp.Count: "count", exp.Sum: "sum", exp.Min: "min", exp.Max: "max"}


@dataclass(frozen=True)
class Grouped:
    """A head column that is a group key: column `column` of the recursive relation."""

    column: int


@dataclass(frozen=True)
class Combined:
    """A head column that is an aggregate call over column `column` of the recursive relation (None: `*`)."""

    function: str  # count, sum, min, max
    column: int | None
    distinct: bool = False


@dataclass(frozen=True)
class PartAggregate:
    """The aggregate relation `relation` computed from the tasks' partial aggregates of `source`."""

    relation: str
    source: str
    terms: tuple[Grouped | Combined, ...]  # one per column of `relation`
    rule: Rule  # as written, for EXPLAIN
    rows: float  # the aggregate's rows, as estimated

    @property
    def groups(self) -> tuple[int, ...]:
        """The columns of `source` the partial aggregates are grouped by: the group keys, then the
        arguments of DISTINCT calls (each once)."""
        columns: list[int | None] = [term.column for term in self.terms if isinstance(term, Grouped)]
        columns += [term.column for term in self.terms if isinstance(term, Combined) and term.distinct]
        return tuple(dict.fromkeys(column for column in columns if column is not None))

    @property
    def partials(self) -> tuple[Combined, ...]:
        """The calls each task computes for each of its groups (a DISTINCT call is computed by Spark
        alone, over the distinct values the groups carry)."""
        return tuple(term for term in self.terms if isinstance(term, Combined) and not term.distinct)

    def __str__(self) -> str:
        return str(self.rule)


def part_aggregate(
    program: Program, component: Component, estimated_rows: Callable[[str], float]
) -> PartAggregate | None:
    """The aggregate relation the tasks evaluating `component` could compute from their own facts, or
    None (module docstring); `estimated_rows`: a relation's rows, as estimated."""
    if len(component.relations) != 1:
        return None
    (source,) = component.relations
    readers = [rule for rule in program.rules if rule.head != source and source in reads(rule)]
    if len(readers) != 1 or source == program.output:
        return None
    (rule,) = readers
    relation = program.relations[rule.head]
    if (
        not rule.is_aggregate
        or program.rules_for(rule.head) != [rule]
        or relation.window is not None
        or relation.aggregate is not None
        or relation.distinct
        or len(rule.body) != 1
    ):
        return None
    (atom,) = rule.body
    named = [arg for arg in atom.args if arg != WILDCARD]  # a repeated variable would be an equality
    if not isinstance(atom, Atom) or not plain(atom) or len(set(named)) != len(named):
        return None
    columns = {variable: position for position, variable in enumerate(atom.args)}
    terms = [part_term(term, columns) for term in rule.terms]
    if any(term is None for term in terms):
        return None
    kept = tuple(term for term in terms if term is not None)
    return PartAggregate(rule.head, source, kept, rule, estimated_rows(rule.head))


def reads(rule: Rule) -> list[str]:
    return [atom.relation for atom in rule.atoms]


def plain(atom: Atom) -> bool:
    """An atom that reads every fact of its relation as it is (no join kind, no condition of its own)."""
    return (
        not (atom.negated or atom.optional or atom.semi or atom.nulls_equal) and not atom.call_args and atom.on is None
    )


def part_term(term: exp.Expr, columns: dict[str, int]) -> Grouped | Combined | None:
    """A head term as a group key or a call the tasks can compute in parts; None for anything else."""
    if isinstance(term, exp.Column) and not term.table:
        column = columns.get(term.name)
        return None if column is None else Grouped(column)
    function = FUNCTIONS.get(type(term))
    if function is None or term.expressions:
        return None
    argument, distinct = term.this, False
    if isinstance(argument, exp.Distinct):
        if len(argument.expressions) != 1:
            return None
        (argument,), distinct = argument.expressions, True
    if isinstance(argument, exp.Star) and function == "count" and not distinct:
        return Combined(function, None)
    if isinstance(argument, exp.Column) and not argument.table and argument.name in columns:
        return Combined(function, columns[argument.name], distinct and function in ("count", "sum"))
    return None
