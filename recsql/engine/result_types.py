"""The column types each relation has on Spark, iteration by iteration, for the local evaluator to give
the same: Spark's union widening can change a recursive relation's types while it iterates (an int
exit rule and a bigint recursive rule; a decimal sum that gains a digit per iteration), and sum()
turns int into bigint.

`StratumTypes` answers "the types after iteration i" for one recursive stratum. `InferredTypes`
derives them in Python (spark_types.py), following what each kind of relation state in relations.py
does to its full, delta and old facts; executor.py's `DistributedTypes` asks Spark instead, for the
expressions spark_types does not cover.
"""

from __future__ import annotations

from typing import Callable

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import DataType, LongType, StructField, StructType

from recsql.engine.local import RelationTypes
from recsql.engine.render import column_names
from recsql.engine.spark_types import Row, nulls, rule_types, sum_type, wider_row
from recsql.planner import DELTA, FULL, OLD, Stratum
from translator.ir import Atom, Iteration, Program, Relation, Rule

LONG: DataType = LongType()  # the type of range()'s ids
SETTLED = 1000  # iterations by which the types of any stratum have stopped changing
Versions = dict[str, Row]  # full / delta / old -> types
TableTypes = Callable[[str], Row]  # the types of a relation read from outside the stratum


def struct(types: Row) -> StructType:
    return StructType([StructField(name, t, True) for name, t in zip(column_names(len(types)), types)])


def arrow_schema(types: Row, timezone: str) -> pa.Schema:
    """The Arrow schema of Spark columns of these types (what toArrow() gives)."""
    return to_arrow_schema(struct(types), timezone=timezone)


class StratumTypes:
    """Types of a stratum's relations after each iteration (0: the exit rules), computed step by step
    as far as asked and no further once two steps agree."""

    def __init__(self, stratum: Stratum, timezone: str):
        self.stratum = stratum
        self.timezone = timezone
        self.read = {version for variant in stratum.variants for version in variant.versions if version}
        self.steps: list[dict[str, Versions]] = []

    def advance(self) -> dict[str, Versions]:
        """The types after the next step (the exit rules first)."""
        raise NotImplementedError

    def at(self, iteration: int) -> dict[str, Versions]:
        while len(self.steps) <= iteration and not self.converged():
            self.steps.append(self.advance())
        return self.steps[min(iteration, len(self.steps) - 1)]

    def converged(self) -> bool:
        """The last two steps agree on the types of the facts and of the versions the delta rules read:
        every later step then repeats the last."""
        if len(self.steps) < 2:
            return False
        versions = self.read | {FULL}
        last, before = self.steps[-1], self.steps[-2]
        return all(last[name][v] == before[name][v] for name in last for v in versions)

    def settled_from_start(self) -> bool:
        """The facts (full and delta) have the same types after the exit rules as after any iteration."""
        start, settled = self.at(0), self.at(SETTLED)
        return all(start[name][v] == settled[name][v] for name in settled for v in (FULL, DELTA))

    def arrow(self, iteration: int) -> dict[str, RelationTypes]:
        """Arrow schemas of each relation's full and delta facts after `iteration` iterations."""
        return {
            name: RelationTypes(self.arrow_schema(types[FULL]), self.arrow_schema(types[DELTA]))
            for name, types in self.at(iteration).items()
        }

    def arrow_schema(self, types: Row) -> pa.Schema:
        return arrow_schema(types, self.timezone)

    def spark(self, iteration: int) -> dict[str, Row]:
        """The types of each relation's facts after `iteration` iterations."""
        return {name: types[FULL] for name, types in self.at(iteration).items()}


class InferredTypes(StratumTypes):
    """Types derived without Spark. Raises NotInferred (from spark_types) for what it does not cover."""

    def __init__(self, program: Program, stratum: Stratum, tables: TableTypes, timezone: str):
        super().__init__(stratum, timezone)
        self.program = program
        self.tables = tables
        self.states = {name: TypeState(program.relations[name], stratum.iteration) for name in stratum.relations}

    def advance(self) -> dict[str, Versions]:
        if self.steps:
            rules = [(variant.rule, variant.versions) for variant in self.stratum.variants]
        else:
            rules = [(rule, None) for rule in self.stratum.exit_rules]
        candidates: dict[str, Row] = {}
        for rule, versions in rules:
            def atom_types(position: int, atom: Atom, versions=versions) -> Row:
                version = versions[position] if versions else None
                if version is not None:
                    return getattr(self.states[atom.relation], version)
                return outside_types(self.tables, atom)

            derived = rule_types(rule, atom_types)
            previous = candidates.get(rule.head)
            candidates[rule.head] = derived if previous is None else wider_row(previous, derived)
        for name, state in self.states.items():
            state.merge(candidates.get(name))
        return {name: {FULL: s.full, DELTA: s.delta, OLD: s.old} for name, s in self.states.items()}


class TypeState:
    """A relation state of relations.py reduced to its types: the same unions, set differences and
    aggregations, applied to column types."""

    def __init__(self, relation: Relation, iteration: Iteration):
        self.relation = relation
        self.bag = iteration is Iteration.BAG
        self.full = self.delta = self.old = nulls(len(relation.columns))
        self.contributions: Row | None = None

    def merge(self, candidates: Row | None) -> None:
        self.old = self.full
        if candidates is None:
            self.delta = nulls(len(self.relation.columns))
            return
        aggregate = self.relation.aggregate
        if aggregate is None:
            # a set's delta is candidates EXCEPT full (both widened); a bag's is the candidates
            self.delta = candidates if self.bag else wider_row(candidates, self.full)
            self.full = wider_row(self.full, self.delta)
        elif aggregate.function in ("min", "max"):
            if self.relation.group_key:  # improved groups replace theirs in full
                self.delta = candidates
                self.full = wider_row(self.full, self.delta)
            else:  # the one group: min/max over full and candidates
                self.full = self.delta = wider_row(self.full, candidates)
        else:  # sum/count: contributions (keys, value) accumulate; totals are their sums
            first = self.contributions is None
            self.contributions = candidates if first else wider_row(self.contributions, candidates)
            self.delta = totalled(self.relation, self.contributions)
            keeps_groups = not first and bool(self.relation.group_key)
            self.full = wider_row(self.full, self.delta) if keeps_groups else self.delta


def totalled(relation: Relation, row: Row) -> Row:
    """`row` with its aggregated column summed (sum() and count() add up contributions)."""
    return tuple(sum_type(t) if i == relation.aggregate.column else t for i, t in enumerate(row))


def outside_types(tables: TableTypes, atom: Atom) -> Row:
    """The types an atom reads from outside the stratum: a relation, or range()'s bigint ids."""
    return (LONG,) * len(atom.args) if atom.call_args else tables(atom.relation)


def relation_types(relation: Relation, rules: list[Rule], tables: TableTypes) -> Row:
    """The types of a non-recursive relation: the union of its rules, aggregated as declared."""
    result: Row | None = None
    for rule in rules:
        derived = rule_types(rule, lambda _, atom: outside_types(tables, atom))
        result = derived if result is None else wider_row(result, derived)
    if result is None:
        return nulls(len(relation.columns))
    aggregate = relation.aggregate
    return totalled(relation, result) if aggregate and aggregate.function in ("sum", "count") else result


def row_of(schema: StructType) -> Row:
    return tuple(field.dataType for field in schema.fields)


