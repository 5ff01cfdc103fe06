"""The column types each relation has on Spark, iteration by iteration, for the local evaluator to give
the same: Spark's union widening can change a recursive relation's types while it iterates (an int
exit rule and a bigint recursive rule; a decimal sum that gains a digit per iteration), and sum()
turns int into bigint.

`StratumTypes` answers "the types after iteration i" for one recursive stratum. `InferredTypes`
derives them in Python by running the fixpoint (fixpoint.py) and its merges (states.py) over column types
instead of facts (`TypeEngine`, rule types from spark_types.py); spark/types.py's `DistributedTypes` asks
Spark instead, for the expressions spark_types does not cover.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import reduce
from typing import Generic

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import DataType, LongType, NullType, StructField, StructType
from sqlglot import exp

from recsql.engine.columns import column_names
from recsql.engine.fixpoint import Candidates, Fixpoint
from recsql.engine.fixpoint import Versions as AtomVersions
from recsql.engine.relation_types import SETTLED, RelationTypes, TypeSchedule, repeated_step
from recsql.engine.sql.queries import CANDIDATES, DERIVED, Query, candidate_columns
from recsql.engine.states import Facts, MergeOutput
from recsql.engine.types.spark_types import SPARK_TYPES, rule_types, sum_type
from recsql.engine.types.widening import Row, nulls, wider_row
from recsql.planner.plan import Stratum, Variant, Version
from translator.ir import Atom, Program, Relation, Rule

LONG: DataType = LongType()  # the type of range()'s ids
Versions = dict[str, Row | None]  # full / delta / old / candidates -> types (None: no candidates)
TableTypes = Callable[[str], Row]  # the types of a relation read from outside the stratum


def struct(types: Row, names: Sequence[str] | None = None) -> StructType:
    names = names or column_names(len(types))
    return StructType([StructField(name, t, True) for name, t in zip(names, types)])


def arrow_schema(types: Row, timezone: str, names: Sequence[str] | None = None) -> pa.Schema:
    """The Arrow schema of Spark columns of these types (what toArrow() gives)."""
    return to_arrow_schema(struct(types, names), timezone=timezone)


class StratumTypes(Generic[Facts, Candidates]):
    """Types of a stratum's relations after each iteration (0: the exit rules), computed step by step
    as far as asked and no further once they repeat.

    A step's types follow from the types of the step before, so once a step repeats an earlier one, the
    steps between repeat forever. Usually the last two agree (a period of one); in a cycle of relations
    through which an int and a double column alternate, each delta's types turn with the cycle while the
    full relations' stay put."""

    def __init__(self, program: Program, stratum: Stratum, timezone: str):
        self.program = program
        self.stratum = stratum
        self.timezone = timezone
        self.read = {version for variant in stratum.variants for version in variant.versions if version}
        self.steps: list[dict[str, Versions]] = []
        self.repeated: int | None = None  # the earlier step the last one repeats, once one does

    fixpoint: Fixpoint[Facts, Candidates]  # stepped over facts that tell their types (`row`), one step per `advance`

    def advance(self) -> dict[str, Versions]:
        """The types after the next step (the exit rules first)."""
        if self.steps:
            self.fixpoint.step()
        else:
            self.fixpoint.start()
        return {
            name: {
                Version.FULL: self.row(s.full),
                Version.DELTA: self.row(s.delta),
                Version.OLD: self.row(s.old),
                CANDIDATES: self.candidates(name),
            }
            for name, s in self.fixpoint.states.items()
        }

    def row(self, facts: Facts) -> Row:
        """The types of the fixpoint's facts."""
        raise NotImplementedError

    def candidates(self, relation: str) -> Row | None:
        """The types of a relation's candidates in the last step (None: it had none)."""
        raise NotImplementedError

    def at(self, iteration: int) -> dict[str, Versions]:
        while len(self.steps) <= iteration and self.repeated is None:
            self.steps.append(self.advance())
            self.repeated = self.earlier_equal()
        return self.steps[repeated_step(len(self.steps), self.repeated, iteration)]

    def earlier_equal(self) -> int | None:
        """The earlier step whose types of the facts and of the versions the delta rules read are the last
        step's, if any: every later step then repeats the steps after it."""
        versions = self.read | {Version.FULL, CANDIDATES}
        last = self.steps[-1]
        for index in range(len(self.steps) - 2, -1, -1):
            if all(last[name][v] == self.steps[index][name][v] for name in last for v in versions):
                return index
        return None

    def settled_from_start(self) -> bool:
        """The facts (full and delta) have the same types after the exit rules as after any iteration."""
        start, settled = self.at(0), self.at(SETTLED)
        return all(start[name][v] == settled[name][v] for name in settled for v in (Version.FULL, Version.DELTA))

    def typed(self, iteration: int, name: str, version: Version) -> Row:
        """The types of a version of a relation after `iteration` iterations, those its facts settle on where
        they are NULL types: a relation no rule has derived facts of yet (or only NULLs there) is typed by
        its rules, as when it holds facts."""
        types = self.at(iteration)[name][version]
        assert types is not None  # only candidates may have none
        if not any(isinstance(data_type, NullType) for data_type in types):
            return types
        settled = self.at(SETTLED)[name][Version.FULL]
        assert settled is not None
        return settled_nulls(types, settled)

    def arrow(self, iteration: int) -> dict[str, RelationTypes]:
        """Arrow schemas of each relation's candidates, delta and full facts in iteration `iteration`."""
        result = {}
        for name, types in self.at(iteration).items():
            candidates = types[CANDIDATES]
            names = candidate_columns(self.program.relations[name])
            result[name] = RelationTypes(
                self.arrow_schema(self.typed(iteration, name, Version.FULL)),
                self.arrow_schema(self.typed(iteration, name, Version.DELTA)),
                arrow_schema(candidates, self.timezone, names) if candidates is not None else None,
            )
        return result

    def arrow_schema(self, types: Row) -> pa.Schema:
        return arrow_schema(types, self.timezone)

    def schedule(self) -> TypeSchedule:
        """The Arrow types of every iteration, as one value."""
        self.at(SETTLED)
        assert self.repeated is not None
        return TypeSchedule(tuple(self.arrow(step) for step in range(len(self.steps))), self.repeated)

    def spark(self, iteration: int) -> dict[str, Row]:
        """The types of each relation's facts after `iteration` iterations."""
        return {name: self.typed(iteration, name, Version.FULL) for name in self.at(iteration)}


class TypeEngine:
    """Keeps a relation's column types in place of its facts (states.Engine, fixpoint.RuleEngine): every
    merge query gives its result's types from its inputs' (queries.Query.types)."""

    outer_join_merges = False  # either form gives the same types

    def __init__(self, tables: TableTypes):
        self.tables = tables
        self.published: dict[tuple[str, Version], Row] = {}
        self.candidates: dict[str, Row] = {}

    def empty(self, width: int) -> Row:
        return nulls(width)

    def run(self, query: Query, relation: str, result: MergeOutput, **inputs: object) -> Row:
        return query.types(SPARK_TYPES, **inputs)

    def append(self, relation: str, full: Row, delta: Row) -> Row:
        return wider_row(full, delta)

    def recast(self, facts: Row, relation: str, result: MergeOutput) -> Row:
        return facts

    def rows(self, facts: Row) -> int:
        return 0

    def begin(self, iteration: int) -> None:
        self.candidates.clear()

    def arrange(self, variants: Sequence[Variant], delta_rows: Mapping[str, float]) -> Sequence[Variant]:
        return variants

    def publish(self, relation: str, version: Version, facts: Row) -> None:
        self.published[(relation, version)] = facts

    def derive(self, rule: Rule, versions: AtomVersions, extra_terms: tuple[exp.Expr, ...]) -> Row:
        """The types of the head's columns (contributor keys are cast to strings: their types do not
        matter)."""

        def atom_types(position: int, atom: Atom) -> Row:
            version = versions[position] if versions else None
            if version is not None:
                return self.published[(atom.relation, version)]
            return outside_types(self.tables, atom)

        return rule_types(rule, atom_types)

    def contribute(self, query: Query, derived: Row) -> Row:
        return query.types(SPARK_TYPES, **{DERIVED: derived})

    def union(self, relation: str, parts: list[Row]) -> Row:
        self.candidates[relation] = reduce(wider_row, parts)
        return self.candidates[relation]

    def seeded(self, facts: Row) -> Row:
        return facts

    def count(self, derived: Row) -> int:
        return 0  # types stand for any number of facts (a stop's rows are not watched here: `advance`)


class InferredTypes(StratumTypes[Row, Row]):
    """Types derived without Spark. Raises NotInferred (from spark_types) for what it does not cover."""

    def __init__(self, program: Program, stratum: Stratum, tables: TableTypes, timezone: str):
        super().__init__(program, stratum, timezone)
        self.engine = TypeEngine(tables)
        self.fixpoint = Fixpoint(self.engine, program, stratum)

    def row(self, facts: Row) -> Row:
        return facts

    def candidates(self, relation: str) -> Row | None:
        return self.engine.candidates.get(relation)


def settled_nulls(types: Row, settled: Row) -> Row:
    """`types` with each NULL type replaced by the settled type of its column (a column of NULL type holds
    only NULLs, values of any type)."""
    return tuple(later if isinstance(now, NullType) else now for now, later in zip(types, settled))


def outside_types(tables: TableTypes, atom: Atom) -> Row:
    """The types an atom reads from outside the stratum: a relation, or range()'s bigint ids."""
    return (LONG,) * len(atom.args) if atom.call_args else tables(atom.relation)


def totalled(relation: Relation, row: Row) -> Row:
    """`row` with its aggregated column summed (sum() and count() add up contributions)."""
    assert relation.aggregate is not None  # asked of a relation with a header aggregate only
    return tuple(sum_type(t) if i == relation.aggregate.column else t for i, t in enumerate(row))


def relation_types(relation: Relation, rules: list[Rule], tables: TableTypes) -> Row:
    """The types of a non-recursive relation: the union of its rules, aggregated as declared."""
    result: Row | None = None
    for rule in rules:
        derived = rule_types(rule, lambda _, atom: outside_types(tables, atom))
        result = derived if result is None else wider_row(result, derived)
    if result is None:
        return nulls(len(relation.columns))
    aggregate = relation.aggregate
    return totalled(relation, result) if aggregate and aggregate.function.is_sum else result


def row_of(schema: StructType) -> Row:
    return tuple(field.dataType for field in schema.fields)
