"""Runs a plan on Spark: non-recursive strata as lazy DataFrames (a Spark SQL query per rule), recursive
strata as semi-naive (or UNION ALL) fixpoint loops with one materialization per relation and
iteration, or, for strata planned LOCAL, as one local fixpoint over their inputs collected to Arrow."""

from __future__ import annotations

import time
import uuid
from functools import reduce
from typing import Iterable, Protocol

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructType

from recsql.engine.answer import Answer
from recsql.engine.decomposed import Decomposed
from recsql.engine.local import LocalFixpoint, SparkSettings
from recsql.engine.local_program import LocalProgram
from recsql.engine.local_sql import SparkRuleSQL
from recsql.engine.result_types import SETTLED, InferredTypes, StratumTypes, row_of, struct
from recsql.engine.spark_types import NotInferred, Row
from recsql.engine.relations import RelationState, SumRelation, empty_frame, state_for
from recsql.engine.render import column_names, render_rule
from recsql.engine.trace import Step, Trace
from recsql.engine.semi_naive import (
    CapacityExceeded, Limits, Progress, ProgressListener, contributor_terms, iterate, rule_ids, rule_key,
)
from recsql.planner import DECOMPOSED, DELTA, FULL, LOCAL, OLD, Plan, Stratum
from recsql.settings import Settings
from translator.ir import Atom, Iteration, Program, Relation, Rule, SortKey

__all__ = ["Answer", "Executor", "Fixpoint", "Progress", "ProgressListener"]

class TableSource(Protocol):
    """Where base tables come from (the catalog)."""

    def dataframe(self, name: str) -> DataFrame: ...

    def arrow_table(self, name: str) -> pa.Table | None:
        """The table as Arrow when that is cheaper than a Spark job (small local files), else None."""

    def schema(self, name: str) -> StructType:
        """The table's Spark schema."""

    def view(self, name: str) -> str:
        """The name of a Spark temporary view of the table, for SQL."""


class Executor:
    def __init__(
        self,
        spark: SparkSession,
        tables: TableSource,
        settings: Settings,
        progress: ProgressListener | None = None,
        trace: Trace | None = None,
    ):
        self.spark = spark
        self.source = tables
        self.settings = settings
        self.progress = progress
        self.trace = trace
        self.plan: Plan | None = None
        self.frames: dict[str, DataFrame] = {}
        self.tables: dict[str, DataFrame] = {}
        self.outgrown: set[tuple[str, ...]] = set()  # strata that derived more facts than their capacity
        self.views: dict[str, str] = {}  # relation or table → the temporary view its rules read it as
        self.rule_sql = SparkRuleSQL()

    def fetch(self, plan: Plan) -> Answer:
        """The answer of the plan's program as Arrow (collected from Spark when it ran there)."""
        result = self.result(plan)
        return result if isinstance(result, Answer) else Answer.of(result)

    def result(self, plan: Plan) -> Answer | DataFrame:
        """The answer computed in this process when the whole plan can be (no Spark job at all), else
        on Spark, as a DataFrame not yet collected."""
        local = self.local_program(plan)
        tables = self.arrow_inputs(plan) if local is not None else None
        if local is not None and tables is not None:
            try:
                return local.run(tables)
            except CapacityExceeded as exceeded:
                self.outgrow(exceeded)
        return self.run(plan)

    def outgrow(self, exceeded: CapacityExceeded) -> None:
        """A stratum planned LOCAL derived more facts than its capacity: it runs on Spark from scratch."""
        self.outgrown.add(exceeded.relations)
        if self.trace is not None:
            self.trace.forget(exceeded.relations)

    def local_program(self, plan: Plan) -> LocalProgram | None:
        """The plan as a LocalProgram when every stratum is planned LOCAL and the types of every relation
        can be derived without Spark; else None."""
        if not plan.local:
            return None
        local = self.local_program_of(plan)
        try:
            local.derived_types()
        except NotInferred:
            return None
        return local

    def local_program_of(self, plan: Plan) -> LocalProgram:
        types = {name: row_of(self.source.schema(name)) for name in base_tables(plan)}
        return LocalProgram(plan, types, self.settings, self.report, self.spark_settings(), self.trace)

    def output_types(self, plan: Plan) -> list[DataType]:
        """The answer's column types without running the query where Python can derive them; else from
        Spark's plan of the answer, which needs the recursive strata computed."""
        program = plan.program
        try:
            types = self.local_program_of(plan).derived_types()[program.output]
        except NotInferred:
            return [field.dataType for field in self.run(plan).schema.fields]
        return list(types[: len(types) - program.hidden_columns])

    def arrow_inputs(self, plan: Plan) -> dict[str, pa.Table] | None:
        """The tables the plan reads, as Arrow (columns c0 .. cN), when every one is at hand without a
        Spark job; else None."""
        tables = {}
        for name in base_tables(plan):
            table = self.source.arrow_table(name)
            if table is None:
                return None
            tables[name] = table.rename_columns(column_names(table.num_columns))
        return tables

    def run(self, plan: Plan) -> DataFrame:
        """The answer of the plan's program as a DataFrame named after the output columns, ordered."""
        try:
            return self.evaluate(plan)
        finally:  # the DataFrames built hold the views' plans: the names can go
            for view in self.views.values():
                self.spark.catalog.dropTempView(view)
            self.views.clear()

    def evaluate(self, plan: Plan) -> DataFrame:
        program = plan.program
        self.plan = plan
        for stratum in plan.strata:
            started = time.monotonic()
            if stratum.component.recursive:
                self.frames.update(self.run_recursive(program, stratum))
            else:
                for name in stratum.relations:
                    rules = [rule for rule in stratum.exit_rules if rule.head == name]
                    self.frames[name] = self.combine(program.relations[name], rules)
                    if self.trace is not None:
                        self.frames[name] = self.frames[name].localCheckpoint(eager=True)
                        self.trace.record(Step((name,), None, {name: self.frames[name].count()},
                                               time.monotonic() - started))
        return self.answer(program)

    def run_recursive(self, program: Program, stratum: Stratum) -> dict[str, DataFrame]:
        """A recursive stratum by its strategy. LOCAL past its capacity moves to Spark: decomposed when it
        has a pivot, else distributed. DECOMPOSED needs column types that stay the same from the exit
        rules on (each part stops after its own number of iterations); else it runs distributed."""
        if stratum.strategy == LOCAL and stratum.relations not in self.outgrown:
            try:
                return self.run_local(program, stratum)
            except CapacityExceeded as exceeded:
                self.outgrow(exceeded)
        if stratum.decomposition is not None and stratum.strategy in (DECOMPOSED, LOCAL):
            types = self.stratum_types(program, stratum, self.spark_settings().timezone)
            if types.settled_from_start():
                return Decomposed(self, program, stratum, types).run()
        return Fixpoint(self, program, stratum).run()

    def report(self, event: Progress) -> None:
        """Progress of a recursive component: to the listener, and to the trace under EXPLAIN ANALYZE."""
        if self.trace is not None:
            self.trace.record(Step(event.relations, event.iteration, dict(event.facts),
                                   event.elapsed - self.trace.elapsed_in(event.relations)))
        if self.progress is not None:
            self.progress(event)

    def combine(self, relation: Relation, rules: list[Rule]) -> DataFrame:
        """A non-recursive relation: the union of its rules, deduplicated or aggregated as declared. Each
        rule is one Spark SQL query over temporary views of what it reads."""
        frames = [self.spark.sql(self.rule_sql.rule(rule, self.view_of)) for rule in rules]
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

    def view_of(self, _: int, atom: Atom) -> str:
        """What a rule's SQL reads for `atom`: a table function call, or a view of its relation."""
        if atom.call_args:
            return f"range({', '.join(arg.sql(dialect='spark') for arg in atom.call_args)})"
        return self.view(atom.relation)

    def view(self, relation: str) -> str:
        """A temporary view of a relation's frame (this query's), or of a table as stored (the catalog's)."""
        frame = self.frames.get(relation, self.tables.get(relation))
        if frame is None:
            return self.rule_sql.quote(self.source.view(relation))
        if relation not in self.views:
            self.views[relation] = f"recsql_{uuid.uuid4().hex[:12]}_{relation}"
            frame.createOrReplaceTempView(self.views[relation])
        return self.rule_sql.quote(self.views[relation])

    def atom_frame(self, atom: Atom) -> DataFrame:
        if atom.call_args:
            return self.spark.range(*[int(arg.to_py()) for arg in atom.call_args])
        if atom.relation in self.frames:
            return self.frames[atom.relation]
        if atom.relation not in self.tables:
            self.tables[atom.relation] = self.source.dataframe(atom.relation)
        return self.tables[atom.relation]

    def materialize_inputs(self, stratum: Stratum) -> None:
        """Relations a fixpoint reads from outside itself are computed once, not once per iteration."""
        for name, atom in stratum.inputs.items():
            frame = self.atom_frame(atom).localCheckpoint(eager=True)
            target = self.frames if name in self.frames else self.tables
            target[name] = frame

    def run_local(self, program: Program, stratum: Stratum) -> dict[str, DataFrame]:
        """A recursive stratum evaluated in this process: its inputs are collected to Arrow once, the
        fixpoint runs without a Spark job, and its results come back as DataFrames with the column types
        the distributed evaluation would give."""
        spark_settings = self.spark_settings()
        types = self.stratum_types(program, stratum, spark_settings.timezone)
        fixpoint = LocalFixpoint(program, stratum, self.local_inputs(stratum), self.settings, self.report,
                                 types.arrow, spark_settings)
        tables = fixpoint.run()
        rows = types.spark(fixpoint.iterations)
        return {name: self.spark.createDataFrame(table, struct(rows[name])) for name, table in tables.items()}

    def stratum_types(self, program: Program, stratum: Stratum, timezone: str) -> StratumTypes:
        """The types of the stratum's relations, iteration by iteration: derived in Python when
        spark_types covers the rules, else from Spark's analysis."""
        def outside(name: str) -> Row:
            return row_of(self.frames[name].schema if name in self.frames else self.source.schema(name))

        inferred = InferredTypes(program, stratum, outside, timezone)
        try:
            inferred.at(SETTLED)
        except NotInferred:
            return DistributedTypes(self, program, stratum, timezone)
        return inferred

    def spark_settings(self) -> SparkSettings:
        conf = self.spark.conf
        return SparkSettings(
            ansi=(conf.get("spark.sql.ansi.enabled") or "").lower() == "true",
            timezone=conf.get("spark.sql.session.timeZone") or "UTC",
        )

    def local_inputs(self, stratum: Stratum, names: Iterable[str] | None = None) -> dict[str, pa.Table]:
        """The relations the stratum reads from outside (or those of them in `names`) as Arrow tables."""
        tables = {}
        wanted = set(stratum.inputs if names is None else names)
        for name, atom in stratum.inputs.items():
            if name not in wanted:
                continue
            table = self.source.arrow_table(name) if name not in self.frames else None
            if table is None:
                table = self.atom_frame(atom).toArrow()
            tables[name] = table.rename_columns(column_names(table.num_columns))
        return tables

    def answer(self, program: Program) -> DataFrame:
        """The output relation ordered, limited and named as the query says (one Spark SQL query)."""
        quote = self.rule_sql.quote
        names = column_names(len(program.relations[program.output].columns))
        visible = names[: len(names) - program.hidden_columns]
        items = ", ".join(f"{name} AS {quote(column)}" for name, column in zip(visible, program.output_columns))
        sql = f"SELECT {items} FROM {self.view(program.output)}"
        if program.order_by:
            sql += " ORDER BY " + ", ".join(sort_key(names[key.column], key) for key in program.order_by)
        if program.limit is not None:
            sql += f" LIMIT {program.limit}"
        return self.spark.sql(sql)


def base_tables(plan: Plan) -> set[str]:
    """The tables (not derived relations, not table functions) the plan's strata read."""
    read = {name for stratum in plan.strata for name in stratum.inputs}
    return read - plan.program.relations.keys()


def sort_key(name: str, key: SortKey) -> str:
    """Spark's default: NULLs first ascending, last descending, unless the query says otherwise."""
    nulls_first = key.nulls_first if key.nulls_first is not None else not key.descending
    return f"{name} {'DESC' if key.descending else 'ASC'} NULLS {'FIRST' if nulls_first else 'LAST'}"


def union_all(frames: list[DataFrame]) -> DataFrame:
    return reduce(DataFrame.unionAll, frames)


class Fixpoint:
    """Evaluates one recursive component to its fixpoint (or its UNION ALL iteration to exhaustion).

    A schema-only fixpoint runs no job: stepping it only tells the column types of each relation."""

    def __init__(self, executor: Executor, program: Program, stratum: Stratum, schema_only: bool = False):
        self.executor = executor
        self.order_variant = executor.plan.order_variant if executor.plan else lambda variant, _: variant
        self.spark = executor.spark
        self.program = program
        self.stratum = stratum
        bag = stratum.iteration is Iteration.BAG
        self.states: dict[str, RelationState] = {
            name: state_for(self.spark, program.relations[name], bag, schema_only) for name in stratum.relations
        }
        self.rule_ids = rule_ids(program)

    def run(self) -> dict[str, DataFrame]:
        self.executor.materialize_inputs(self.stratum)
        iterate(self, Limits(self.program, self.stratum, self.executor.settings), self.executor.report)
        return {name: state.full for name, state in self.states.items()}

    def start(self) -> int:
        return self.absorb(self.derive([(rule, None) for rule in self.stratum.exit_rules]))

    def step(self) -> int:
        """One iteration, each delta rule's joins ordered for the size of the delta it starts from."""
        sizes = {name: float(state.delta_rows) for name, state in self.states.items()}
        variants = [self.order_variant(variant, sizes) for variant in self.stratum.variants]
        return self.absorb(self.derive([(variant.rule, variant.versions) for variant in variants]))

    def absorb(self, candidates: dict[str, DataFrame]) -> int:
        """Merge each relation's candidates; the number of new facts."""
        for name, state in self.states.items():
            state.merge(candidates.get(name))
        return sum(state.delta_rows for state in self.states.values())

    def facts(self) -> dict[str, int]:
        return {name: state.delta_rows for name, state in self.states.items()}

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
                frame = render_rule(self.spark, rule, frame_of, contributor_terms(self.program, self.stratum, rule))
                frame = state.contributions_of(frame, self.rule_ids[rule_key(rule)])
            else:
                frame = render_rule(self.spark, rule, frame_of)
            by_relation.setdefault(rule.head, []).append(frame)
        return {name: union_all(frames) for name, frames in by_relation.items()}


class DistributedTypes(StratumTypes):
    """Types read from a schema-only Fixpoint stepped as far as asked (no Spark job runs, but every step
    is a round of Spark analysis): for the expressions spark_types.py does not cover."""

    def __init__(self, executor: Executor, program: Program, stratum: Stratum, timezone: str):
        super().__init__(stratum, timezone)
        self.fixpoint = Fixpoint(executor, program, stratum, schema_only=True)

    def advance(self) -> dict[str, dict[str, Row]]:
        if self.steps:
            self.fixpoint.step()
        else:
            self.fixpoint.start()
        return {
            name: {FULL: row_of(state.full.schema), DELTA: row_of(state.delta.schema), OLD: row_of(state.old.schema)}
            for name, state in self.fixpoint.states.items()
        }
