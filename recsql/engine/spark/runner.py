"""A plan evaluated on Spark: non-recursive strata as lazy DataFrames (one Spark SQL query per relation),
recursive strata by their strategy (strategies/), the answer as one Spark SQL query."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Protocol

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType
from sqlglot import exp

from recsql.engine.columns import column_names
from recsql.engine.fixpoint import CapacityExceeded, Reached
from recsql.engine.progress import Progress, ProgressListener
from recsql.engine.scratch import Scratch
from recsql.engine.spark.engine import SPARK, Views, checkpoint, empty_frame
from recsql.engine.spark_settings import ANSI, SparkSettings
from recsql.engine.sql.opaque import opaque_sql
from recsql.engine.sql.queries import answer_query, relation_query
from recsql.engine.sql.rules import range_call, rule_query, table
from recsql.engine.strategies import run_stratum
from recsql.engine.trace import Step, Trace, listening
from recsql.planner.plan import Plan, Stratum
from recsql.settings import Settings, SparkUse
from recsql.spark.defaults import TIME_ZONE
from translator.ir import Atom, Relation


class TableSource(Protocol):
    """Where base tables come from (the catalog)."""

    def dataframe(self, name: str) -> DataFrame: ...

    def arrow_table(self, name: str) -> pa.Table | str:
        """The table as Arrow read in this process, else why only Spark reads it."""

    def schema(self, name: str) -> StructType:
        """The table's Spark schema."""

    def view(self, name: str) -> str:
        """The name of a Spark temporary view of the table, for SQL."""


def read_spark_settings(spark: SparkSession) -> SparkSettings:
    conf = spark.conf
    return SparkSettings(ansi=(conf.get(ANSI) or "").lower() == "true", timezone=conf.get(TIME_ZONE) or "UTC")


class SparkRun:
    """The evaluation of one plan on Spark: the frames of the relations computed so far, the views their
    SQL reads, and what the strategies need from it (context.py)."""

    def __init__(
        self,
        spark: SparkSession,
        tables: TableSource,
        settings: Settings,
        plan: Plan,
        scratch: Scratch,
        progress: ProgressListener | None = None,
        trace: Trace | None = None,
        outgrown: dict[tuple[str, ...], Reached[pa.Table] | None] | None = None,
    ):
        self.spark = spark
        self.source_tables = tables
        self.settings = settings
        self.plan = plan
        self.program = plan.program
        self.trace = trace
        self.listener = listening(trace, progress)
        self.outgrown = outgrown if outgrown is not None else {}  # strata past their local capacity
        self.scratch = scratch  # the statement's files on this machine
        self.frames: dict[str, DataFrame] = {}
        self.tables: dict[str, DataFrame] = {}
        self.views = Views(spark)
        self.spark_settings = read_spark_settings(spark)

    def answer(self) -> DataFrame:
        """The answer of the plan's program as a DataFrame named after the output columns, ordered."""
        try:
            self.evaluate()
            return self.output()
        finally:  # the DataFrames built hold the views' plans: the names can go
            self.views.drop()

    def evaluate(self) -> None:
        for stratum in self.plan.strata:
            started = time.monotonic()
            if stratum.component.recursive:
                self.frames.update(run_stratum(self, stratum))
                continue
            for name in stratum.relations:
                if name in self.frames:  # the tasks of a recursive stratum aggregated its facts for it
                    continue
                self.frames[name] = self.combine(self.program.relations[name])
                if self.trace is not None:
                    self.frames[name] = checkpoint(self.frames[name], eager=True)
                    self.trace.record(
                        Step((name,), None, {name: self.frames[name].count()}, time.monotonic() - started)
                    )

    def combine(self, relation: Relation) -> DataFrame:
        """A non-recursive relation (one Spark SQL query over temporary views of what it reads)."""
        if relation.opaque is not None:
            frame = self.views.sql(opaque_sql(relation.opaque, lambda name: table(self.source(name))))
            return frame.toDF(*column_names(len(frame.columns)))
        rules = self.program.rules_for(relation.name)
        if not rules:
            return empty_frame(self.spark, len(relation.columns))
        parts = [rule_query(rule, lambda _, atom: self.atom_source(atom), hints=True) for rule in rules]
        return self.views.sql(SPARK.sql(relation_query(relation, parts)))

    def output(self) -> DataFrame:
        """The output relation ordered, skipped, limited and named as the query says (one Spark SQL query)."""
        program = self.program
        query = answer_query(table(self.source(program.output)), program)
        return self.views.sql(SPARK.sql(query)).toDF(*program.output_columns)

    # ------------------------------------------------------------------ what strategies read

    def report(self, event: Progress) -> None:
        """Progress of a recursive component: to the listener, and to the trace under EXPLAIN ANALYZE."""
        if self.listener is not None:
            self.listener(event)

    def outgrow(self, exceeded: CapacityExceeded) -> None:
        """A stratum planned LOCAL derived more facts than its capacity: it goes on on Spark from where
        it stopped (strategies/decomposed.py) or starts again there."""
        self.outgrown[exceeded.relations] = exceeded.reached

    def note(self, text: str) -> None:
        if self.trace is not None:
            self.trace.notes.append(text)

    def atom_source(self, atom: Atom) -> exp.Expr:
        """What a rule's SQL reads for `atom`: a table function call, or a view of its relation."""
        if atom.call_args:
            return range_call(atom)
        return table(self.source(atom.relation))

    def source(self, relation: str) -> str:
        """A temporary view of a relation's frame (this query's), or of a table as stored (the catalog's)."""
        frame = self.frames.get(relation, self.tables.get(relation))
        if frame is None:
            return self.source_tables.view(relation)
        return self.views.show(f"r_{relation}", frame)

    def atom_frame(self, atom: Atom) -> DataFrame:
        if atom.call_args:
            return self.spark.range(*[int(arg.to_py()) for arg in atom.call_args])
        if atom.relation in self.frames:
            return self.frames[atom.relation]
        if atom.relation not in self.tables:
            self.tables[atom.relation] = self.source_tables.dataframe(atom.relation)
        return self.tables[atom.relation]

    def materialize_inputs(self, stratum: Stratum) -> None:
        """Relations a fixpoint reads from outside itself are computed once, not once per iteration."""
        for name, atom in stratum.inputs.items():
            frame = checkpoint(self.atom_frame(atom), eager=True)
            target = self.frames if name in self.frames else self.tables
            target[name] = frame

    def local_inputs(self, stratum: Stratum, names: Iterable[str] | None = None) -> dict[str, pa.Table]:
        """The relations the stratum reads from outside (or those of them in `names`) as Arrow tables."""
        tables = {}
        wanted = set(stratum.inputs if names is None else names)
        for name, atom in stratum.inputs.items():
            if name not in wanted:
                continue
            read_here = name not in self.frames and self.settings.spark != SparkUse.ALWAYS
            facts = self.source_tables.arrow_table(name) if read_here else None
            if not isinstance(facts, pa.Table):
                facts = self.atom_frame(atom).toArrow()
            tables[name] = facts.rename_columns(column_names(facts.num_columns))
        return tables

    def schema(self, name: str) -> StructType:
        """The schema of a relation computed by this run, or of a table."""
        return self.frames[name].schema if name in self.frames else self.source_tables.schema(name)
