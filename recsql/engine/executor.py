"""Runs a plan on Spark: non-recursive strata as lazy DataFrames, recursive strata as semi-naive (or
UNION ALL) fixpoint loops with one materialization per relation and iteration."""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import reduce
from typing import Callable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from sqlglot import exp

from recsql.engine.relations import RelationState, SumRelation, empty_frame, state_for
from recsql.engine.render import column_names, render_rule
from recsql.errors import OperationalError
from recsql.planner import DELTA, FULL, OLD, Plan, Stratum
from recsql.settings import Settings
from translator.ir import Atom, Iteration, Program, Relation, Rule, SortKey


@dataclass(frozen=True)
class Progress:
    """One iteration of a recursive component, as reported to a progress listener."""

    relations: tuple[str, ...]
    iteration: int
    delta_rows: int
    total_rows: int
    elapsed: float


ProgressListener = Callable[[Progress], None]
TableFrames = Callable[[str], DataFrame]


class Executor:
    def __init__(
        self,
        spark: SparkSession,
        table_frame: TableFrames,
        settings: Settings,
        progress: ProgressListener | None = None,
    ):
        self.spark = spark
        self.table_frame = table_frame
        self.settings = settings
        self.progress = progress
        self.frames: dict[str, DataFrame] = {}
        self.tables: dict[str, DataFrame] = {}

    def run(self, plan: Plan) -> DataFrame:
        """The answer of the plan's program as a DataFrame named after the output columns, ordered."""
        program = plan.program
        for stratum in plan.strata:
            if stratum.component.recursive:
                self.frames.update(Fixpoint(self, program, stratum).run())
            else:
                for name in stratum.relations:
                    rules = [rule for rule in stratum.exit_rules if rule.head == name]
                    self.frames[name] = self.combine(program.relations[name], rules)
        return self.answer(program)

    def combine(self, relation: Relation, rules: list[Rule]) -> DataFrame:
        """A non-recursive relation: the union of its rules, deduplicated or aggregated as declared."""
        frames = [render_rule(self.spark, rule, lambda _, atom: self.atom_frame(atom)) for rule in rules]
        frame = union_all(frames) if frames else empty_frame(self.spark, len(relation.columns))
        names = column_names(len(relation.columns))
        if relation.aggregate is not None:
            keys = [names[i] for i in relation.group_key]
            value = names[relation.aggregate.column]
            function = {"min": F.min, "max": F.max, "sum": F.sum, "count": F.sum}[relation.aggregate.function]
            if relation.aggregate.function in ("sum", "count"):
                frame = frame.distinct()  # each distinct base row is one contribution
            grouped = frame.groupBy(*keys) if keys else frame.groupBy()
            return grouped.agg(function(value).alias(value)).select(*names)
        return frame.distinct() if relation.distinct else frame

    def atom_frame(self, atom: Atom) -> DataFrame:
        if atom.call_args:
            return self.spark.range(*[int(arg.to_py()) for arg in atom.call_args])
        if atom.relation in self.frames:
            return self.frames[atom.relation]
        if atom.relation not in self.tables:
            self.tables[atom.relation] = self.table_frame(atom.relation)
        return self.tables[atom.relation]

    def materialize_inputs(self, program: Program, stratum: Stratum) -> None:
        """Relations a fixpoint reads from outside itself are computed once, not once per iteration."""
        rules = list(stratum.exit_rules) + [variant.rule for variant in stratum.variants]
        inputs = {
            atom.relation: atom
            for rule in rules
            for atom in rule.atoms
            if atom.relation not in stratum.relations and not atom.call_args
        }
        for name, atom in inputs.items():
            frame = self.atom_frame(atom).localCheckpoint(eager=True)
            target = self.frames if name in self.frames else self.tables
            target[name] = frame

    def answer(self, program: Program) -> DataFrame:
        frame = self.frames[program.output]
        names = column_names(len(program.relations[program.output].columns))
        if program.order_by:
            frame = frame.orderBy(*[sort_column(names[key.column], key) for key in program.order_by])
        if program.limit is not None:
            frame = frame.limit(program.limit)
        visible = names[: len(names) - program.hidden_columns]
        return frame.select(*visible).toDF(*program.output_columns)


def sort_column(name: str, key: SortKey) -> Column:
    """Spark's default: NULLs first ascending, last descending, unless the query says otherwise."""
    column = F.col(name)
    nulls_first = key.nulls_first if key.nulls_first is not None else not key.descending
    if key.descending:
        return column.desc_nulls_first() if nulls_first else column.desc_nulls_last()
    return column.asc_nulls_first() if nulls_first else column.asc_nulls_last()


def union_all(frames: list[DataFrame]) -> DataFrame:
    return reduce(DataFrame.unionAll, frames)


class Fixpoint:
    """Evaluates one recursive component to its fixpoint (or its UNION ALL iteration to exhaustion)."""

    def __init__(self, executor: Executor, program: Program, stratum: Stratum):
        self.executor = executor
        self.spark = executor.spark
        self.program = program
        self.stratum = stratum
        bag = stratum.iteration is Iteration.BAG
        self.states: dict[str, RelationState] = {
            name: state_for(self.spark, program.relations[name], bag) for name in stratum.relations
        }
        self.rule_ids = {id(rule): i for i, rule in enumerate(program.rules)}

    def run(self) -> dict[str, DataFrame]:
        executor, settings = self.executor, self.executor.settings
        executor.materialize_inputs(self.program, self.stratum)
        started = time.monotonic()
        exit_frames = self.derive([(rule, None) for rule in self.stratum.exit_rules])
        for name, state in self.states.items():
            state.start(exit_frames.get(name))
        derived = sum(state.delta_rows for state in self.states.values())
        iteration = 0
        limit, limited_by = self.iteration_limit()
        while any(state.delta_rows for state in self.states.values()):
            iteration += 1
            if iteration > limit:
                raise OperationalError(self.iteration_message(limit, limited_by))
            candidates = self.derive([(variant.rule, variant.versions) for variant in self.stratum.variants])
            for name, state in self.states.items():
                state.merge(candidates.get(name))
            new_rows = sum(state.delta_rows for state in self.states.values())
            derived += new_rows
            if derived > settings.max_rows:
                raise OperationalError(
                    f"recursive query over {self.names()} derived more than {settings.max_rows} rows by iteration "
                    f"{iteration} (recsql.max_rows); raise the limit with SET recsql.max_rows = <n> if this is expected"
                )
            if executor.progress is not None:
                executor.progress(Progress(self.stratum.relations, iteration, new_rows, derived,
                                           time.monotonic() - started))
        return {name: state.full for name, state in self.states.items()}

    def derive(self, rules: list[tuple[Rule, tuple | None]]) -> dict[str, DataFrame]:
        """Candidate facts per relation from the given rules, each atom reading the chosen version."""
        by_relation: dict[str, list[DataFrame]] = {}
        for rule, versions in rules:
            def frame_of(position: int, atom: Atom, versions=versions) -> DataFrame:
                version = versions[position] if versions else None
                if version is None:
                    return self.executor.atom_frame(atom)
                state = self.states[atom.relation]
                return {FULL: state.full, DELTA: state.delta, OLD: state.old}[version]

            state = self.states[rule.head]
            if isinstance(state, SumRelation):
                frame = render_rule(self.spark, rule, frame_of, self.contributor_terms(rule))
                frame = state.contributions_of(frame, self.rule_ids[id(rule)])
            else:
                frame = render_rule(self.spark, rule, frame_of)
            by_relation.setdefault(rule.head, []).append(frame)
        return {name: union_all(frames) for name, frames in by_relation.items()}

    def contributor_terms(self, rule: Rule) -> tuple[exp.Expression, ...]:
        """What identifies a contribution to a sum/count: the group keys of the recursive atoms it came
        from, or, for a rule reading no recursive relation, the whole derived row."""
        keys = []
        for atom in rule.atoms:
            if atom.relation in self.states and not atom.negated:
                relation = self.program.relations[atom.relation]
                keys.extend(exp.column(atom.args[i]) for i in relation.group_key)
        return tuple(keys) if keys else tuple(term.copy() for term in rule.terms)

    def iteration_limit(self) -> tuple[int, Relation | None]:
        limit, limited_by = self.executor.settings.max_iterations, None
        for name in self.stratum.relations:
            relation = self.program.relations[name]
            if relation.max_level is not None and relation.max_level < limit:
                limit, limited_by = relation.max_level, relation
        return limit, limited_by

    def iteration_message(self, limit: int, limited_by: Relation | None) -> str:
        if limited_by is not None:
            return (
                f"recursive CTE '{limited_by.display_name}' exceeded MAX RECURSION LEVEL {limit}: iteration "
                f"{limit + 1} still derives new rows; raise the level in the query if deeper recursion is expected"
            )
        return (
            f"recursive query over {self.names()} did not reach a fixpoint within {limit} iterations "
            f"(recsql.max_iterations): iteration {limit + 1} still derives new rows. Raise the limit with "
            "SET recsql.max_iterations = <n> if the recursion is meant to go deeper; on cyclic data, "
            "UNION ALL and count()/sum() over paths never converge"
        )

    def names(self) -> str:
        return ", ".join(f"'{self.program.relations[n].display_name}'" for n in self.stratum.relations)


