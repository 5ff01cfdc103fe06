"""A whole plan evaluated in this process, with no Spark job at all: the strategy for small queries, such as
a recursion that magic sets restricted to a few starting points.

Non-recursive relations and the answer are the queries of sql/ printed for DuckDB, recursive strata run as
LocalFixpoint does. Every relation is cast, as it is computed, to the column types Spark would give it
(`Typing`, derived in Python), so the answer has Spark's types and values.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import Generic, Protocol, TypeVar

import pyarrow as pa
from sqlglot import exp

from recsql.engine.columns import column_names
from recsql.engine.local.database import Database, duckdb_errors, null_table
from recsql.engine.local.engine import LocalFixpoint
from recsql.engine.progress import ProgressListener
from recsql.engine.relation_types import SETTLED, RelationTypes
from recsql.engine.spark_settings import SparkSettings
from recsql.engine.sql.printing import Dialect, Printer
from recsql.engine.sql.queries import answer_query, relation_query, shapes_answer
from recsql.engine.sql.rules import range_call, rule_query, table
from recsql.engine.trace import Step, Trace, listening
from recsql.planner.plan import Plan, Stratum
from recsql.settings import Settings
from translator.ir import Atom

ColumnType = TypeVar("ColumnType")  # a column's type, as the Typing gives it (a Spark DataType)
ColumnTypeOut = TypeVar("ColumnTypeOut", covariant=True)


class StratumTyping(Protocol[ColumnTypeOut]):
    def arrow(self, iteration: int) -> Mapping[str, RelationTypes]: ...

    def spark(self, iteration: int) -> Mapping[str, tuple[ColumnTypeOut, ...]]: ...


class Typing(Protocol[ColumnType]):
    """The column types Spark gives each relation (types/plan_types.py)."""

    def relation(self, name: str, known: Mapping[str, tuple[ColumnType, ...]]) -> tuple[ColumnType, ...]:
        """A non-recursive relation's, from the types of what it reads."""

    def stratum(self, stratum: Stratum, known: Mapping[str, tuple[ColumnType, ...]]) -> StratumTyping[ColumnType]:
        """A recursive stratum's, iteration by iteration."""

    def arrow_schema(self, types: tuple[ColumnType, ...]) -> pa.Schema: ...


class LocalProgram(Generic[ColumnType]):
    def __init__(
        self,
        plan: Plan,
        table_types: Mapping[str, tuple[ColumnType, ...]],
        typing: Typing[ColumnType],
        settings: Settings,
        progress: ProgressListener | None,
        spark_settings: SparkSettings,
        trace: Trace | None = None,
    ):
        self.plan = plan
        self.program = plan.program
        self.typing = typing
        self.settings = settings
        self.progress = progress
        self.spark_settings = spark_settings
        self.trace = trace
        self.types: dict[str, tuple[ColumnType, ...]] = dict(table_types)
        self.facts: dict[str, pa.Table] = {}
        self.pending: dict[str, str] = {}  # queries of relations read once, by input name: not run (`combine`)
        self.inlined: dict[str, str] = {}  # those the query being printed reads, by input name
        self.readers: dict[str, list[str]] = {}  # the relations whose rules read each, once per atom
        for body, head in self.program.edges():
            self.readers.setdefault(body, []).append(head)
        self.recursive = {name for stratum in plan.strata if stratum.component.recursive for name in stratum.relations}
        self.printer = Printer(Dialect.DUCKDB, spark_settings.ansi)

    def run(self, tables: Mapping[str, pa.Table]) -> tuple[pa.Table, tuple[ColumnType, ...]]:
        """The answer (columns c0 .. cN) and its column types, from the rows of the tables the plan reads."""
        with duckdb_errors(), contextlib.closing(Database(self.spark_settings.timezone)) as db:
            for name, facts in tables.items():
                self.facts[name] = db.cast_columns(facts, self.typing.arrow_schema(self.types[name]))
            for stratum in self.plan.strata:
                started = time.monotonic()
                if stratum.component.recursive:
                    self.run_recursive(db, stratum)
                    continue
                for name in stratum.relations:
                    self.types[name] = self.typing.relation(name, self.types)
                    self.combine(db, name)
                    if self.trace is not None:
                        rows = {name: self.facts[name].num_rows}
                        self.trace.record(Step((name,), None, rows, time.monotonic() - started))
            return self.answer(db)

    def run_recursive(self, db: Database, stratum: Stratum) -> None:
        types = self.typing.stratum(stratum, self.types)
        inputs = {name: self.facts_of(db, name) for name in stratum.inputs}
        fixpoint = LocalFixpoint(
            self.program,
            stratum,
            inputs,
            self.settings,
            listening(self.trace, self.progress),
            types.arrow,
            self.spark_settings,
            db,
        )
        (name, *others) = stratum.relations
        query = fixpoint.as_query() if self.trace is None and not others and self.read_once(name) else None
        if query is not None:  # printed into the query reading it, as a relation read once is (`combine`)
            self.pending[input_name(name)] = query
            self.types.update(types.spark(SETTLED))
            return
        self.facts.update(fixpoint.run())
        self.types.update(types.spark(fixpoint.iterations))

    def combine(self, db: Database, name: str) -> None:
        """A non-recursive relation: the union of its rules, deduplicated or aggregated as declared, cast to
        its types. Its query is kept, not run, where it is read once, by another such relation or as the
        answer: that one query reads it as a common table expression (a query per relation costs more than
        the work of a small one); EXPLAIN ANALYZE counts each relation's facts."""
        relation = self.program.relations[name]
        parts = [rule_query(rule, lambda _, atom: self.source(db, atom)) for rule in self.program.rules_for(name)]
        if not parts:
            self.facts[name] = null_table(column_names(len(relation.columns)))
            return
        sql = self.printer.sql(relation_query(relation, parts))
        sql = db.cast(sql, column_names(len(relation.columns)), self.typing.arrow_schema(self.types[name]))
        sql = self.printer.with_inputs(sql, self.inlined)
        self.inlined = {}
        if self.trace is None and self.read_once(name):
            self.pending[input_name(name)] = sql
        else:
            self.facts[name] = db.query(sql)

    def read_once(self, name: str) -> bool:
        """Whether one atom of a non-recursive relation's rule reads the relation (but for its own recursive
        rules), or the answer alone."""
        readers = [reader for reader in self.readers.get(name, []) if reader != name]
        if name == self.program.output:
            return not readers
        return len(readers) == 1 and readers[0] not in self.recursive

    def facts_of(self, db: Database, name: str) -> pa.Table:
        if input_name(name) in self.pending:
            self.facts[name] = db.query(self.pending.pop(input_name(name)))
        return self.facts[name]

    def source(self, db: Database, atom: Atom) -> exp.Expr:
        return range_call(atom) if atom.call_args else self.read(db, atom.relation)

    def read(self, db: Database, relation: str) -> exp.Expr:
        """The relation's facts as the query being printed reads them (its query, where it is not run)."""
        name = input_name(relation)
        if name in self.pending:
            self.inlined[name] = self.pending.pop(name)
        else:
            db.register(name, self.facts[relation])
        return table(name)

    def answer(self, db: Database) -> tuple[pa.Table, tuple[ColumnType, ...]]:
        program = self.program
        width = len(program.relations[program.output].columns) - program.hidden_columns
        types = self.types[program.output][:width]
        schema = self.typing.arrow_schema(types)
        pending = input_name(program.output) in self.pending
        if not pending and not shapes_answer(program) and width == self.facts[program.output].num_columns:
            facts = self.facts[program.output].rename_columns(column_names(width))
            return db.cast_columns(facts, schema), types
        query = self.printer.sql(answer_query(self.read(db, program.output), program))
        sql = self.printer.with_inputs(query, self.inlined)
        return db.query(db.cast(sql, column_names(width), schema)), types


def input_name(relation: str) -> str:
    """The name a relation's facts (or its query) are read by."""
    return f"relation_{relation}"
