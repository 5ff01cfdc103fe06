"""The local engine of a fixpoint: rules and merges (the trees of sql/) printed as DuckDB SQL, run by an
in-process DuckDB over Arrow tables, with no Spark job per iteration (for small inputs, where Spark's
per-iteration cost dominates).

The caller may pass the column types the distributed evaluation would give each relation after each
iteration (`ResultTypes`); candidates and results are then cast to them iteration by iteration, so values
flow with Spark's types (DuckDB's sum(int) is HUGEINT, Spark's bigint) and the result has them.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Mapping, Sequence

import pyarrow as pa
from sqlglot import exp

from recsql.engine.columns import column_names
from recsql.engine.fixpoint import Fixpoint, Limits, Reached, Versions
from recsql.engine.local import recursive_query
from recsql.engine.local.database import Database, duckdb_errors, kept_exit_facts, null_table
from recsql.engine.local.recursive_query import RecursiveQuery
from recsql.engine.progress import ProgressListener
from recsql.engine.relation_types import RelationTypes, ResultTypes
from recsql.engine.spark_settings import SparkSettings
from recsql.engine.sql.printing import Dialect, Printer
from recsql.engine.sql.queries import DERIVED, Query
from recsql.engine.sql.rules import rule_query, versioned_sources
from recsql.engine.states import MergeOutput
from recsql.planner.plan import Stratum, Variant, Version
from recsql.settings import Settings
from translator.ir import Program, Rule

DEFAULT_SPARK_SETTINGS = SparkSettings()  # ANSI mode, the session time zone as Spark's default


class DuckDBEngine:
    """Keeps facts as Arrow tables and derives them with DuckDB (states.Engine, fixpoint.RuleEngine)."""

    outer_join_merges = True  # a hash join: faster than the anti-join with conditions

    def __init__(
        self,
        db: Database,
        inputs: Mapping[str, pa.Table],
        types: ResultTypes | None,
        printer: Printer,
        exit_filter: str | None = None,
    ):
        """`exit_filter`: the condition (over columns c0 .. cN) of the exit facts this evaluation keeps."""
        self.db = db
        self.types = types
        self.printer = printer
        self.exit_filter = exit_filter
        self.iteration = 0
        self.current: Mapping[str, RelationTypes] = {}
        self.inputs = {name: f"input_{i}" for i, name in enumerate(inputs)}
        for name, facts in inputs.items():
            self.db.register(self.inputs[name], facts)
        self.version_names: dict[tuple[str, Version], str] = {}
        self.rules: dict[tuple[Rule, Versions], str] = {}
        self.seed_names = itertools.count()

    # ------------------------------------------------------------------ facts (states.Engine)

    def empty(self, width: int) -> pa.Table:
        return null_table(column_names(width))

    def run(self, query: Query, relation: str, result: MergeOutput, **inputs: object) -> pa.Table:
        tables = {name: value for name, value in inputs.items() if isinstance(value, pa.Table)}
        inline = {name: value for name, value in inputs.items() if isinstance(value, str)}
        sql = self.printer.with_inputs(query.sql(self.printer), inline)
        schema = self.schema(relation, result)
        if schema is not None:
            sql = self.db.cast(sql, schema.names, schema)
        return self.db.query(sql, **tables)

    def append(self, relation: str, full: pa.Table, delta: pa.Table) -> pa.Table:
        schema = self.schema(relation, MergeOutput.FULL)
        known, new = self.db.cast_columns(full, schema), self.db.cast_columns(delta, schema)
        if known.schema == new.schema:
            return pa.concat_tables([known, new])
        return self.db.query("SELECT * FROM _full UNION ALL SELECT * FROM _delta", _full=known, _delta=new)

    def recast(self, facts: pa.Table, relation: str, result: MergeOutput) -> pa.Table:
        return self.db.cast_columns(facts, self.schema(relation, result))

    def rows(self, facts: pa.Table) -> int:
        return int(facts.num_rows)

    def schema(self, relation: str, result: MergeOutput) -> pa.Schema | None:
        types = self.current.get(relation)
        if types is None or result is MergeOutput.CONTRIBUTIONS:
            return None
        return types.delta if result is MergeOutput.DELTA else types.full

    # ------------------------------------------------------------------ rules (fixpoint.RuleEngine)

    def begin(self, iteration: int) -> None:
        self.current = self.types(iteration) if self.types is not None else {}
        self.iteration = iteration

    def arrange(self, variants: Sequence[Variant], delta_rows: Mapping[str, float]) -> Sequence[Variant]:
        return variants  # DuckDB orders joins itself

    def publish(self, relation: str, version: Version, facts: pa.Table) -> None:
        key = (relation, version)
        if key not in self.version_names:
            self.version_names[key] = f"state_{len(self.version_names)}"
        self.db.register(self.version_names[key], facts)

    def derive(self, rule: Rule, versions: Versions, extra_terms: tuple[exp.Expr, ...]) -> str:
        """The SQL of a rule reading the given versions (printed once: the table names stay the same)."""
        key = (rule, versions)
        if key not in self.rules:
            source = versioned_sources(
                versions,
                lambda atom: self.inputs[atom.relation],
                lambda relation, version: self.version_names[(relation, version)],
            )
            self.rules[key] = self.printer.sql(rule_query(rule, source, extra_terms))
        return self.rules[key]

    def contribute(self, query: Query, derived: str) -> str:
        return self.printer.with_inputs(query.sql(self.printer), {DERIVED: derived})

    def union(self, relation: str, parts: list[str]) -> str:
        sql = self.printer.union_all(parts)
        types = self.current.get(relation)
        if types is not None and types.candidates is not None:
            sql = self.db.cast(sql, types.candidates.names, types.candidates)
        return kept_exit_facts(sql, self.exit_filter) if self.iteration == 0 else sql

    def seeded(self, facts: pa.Table) -> str:
        name = f"seeds_{next(self.seed_names)}"
        self.db.register(name, facts)
        return f"SELECT * FROM {self.printer.quote(name)}"

    def count(self, derived: str) -> int:
        return int(self.db.query(f"SELECT count(*) FROM ({derived})").column(0)[0].as_py())


class LocalFixpoint:
    """One recursive component evaluated to its fixpoint (or its UNION ALL iteration to exhaustion) in this
    process, from its inputs (an Arrow table per relation it reads from outside itself, columns c0 .. cN)."""

    def __init__(
        self,
        program: Program,
        stratum: Stratum,
        inputs: Mapping[str, pa.Table],
        settings: Settings,
        progress: ProgressListener | None = None,
        types: ResultTypes | None = None,
        spark_settings: SparkSettings = DEFAULT_SPARK_SETTINGS,
        database: Database | None = None,
        seeds: Mapping[str, pa.Table] | None = None,
        reached: Reached[pa.Table] | None = None,
        exit_filter: str | None = None,
    ):
        """`database`: evaluate in this DuckDB connection (left open) instead of a new one. `seeds`: the
        facts of the exit rules, derived elsewhere (one part of them, under the decomposed strategy).
        `reached`: where an evaluation of the component stopped, to go on from. `exit_filter`: the
        condition of the exit facts to keep (a part's, where a task derives them)."""
        self.program = program
        self.stratum = stratum
        self.settings = settings
        self.progress = progress
        self.db = database or Database(spark_settings.timezone)
        self.owns_db = database is None
        printer = Printer(Dialect.DUCKDB, spark_settings.ansi)
        self.engine = DuckDBEngine(self.db, inputs, types, printer, exit_filter)
        self.fixpoint = Fixpoint(self.engine, program, stratum, seeds, reached)
        settled_at = recursive_query.settled_at(stratum, types) if seeds is None and reached is None else None
        self.recursive_query = (
            RecursiveQuery(self.db, printer, program, stratum, self.engine.inputs, types, settled_at, exit_filter)
            if settled_at is not None
            else None
        )

    @property
    def iterations(self) -> int:
        if self.recursive_query is not None and self.recursive_query.iterations is not None:
            return self.recursive_query.iterations
        return self.fixpoint.iterations

    def as_query(self) -> str | None:
        """The facts as one query that another reads, printed into it, where the recursion is one DuckDB
        query that checks its own limits (RecursiveQuery.checked); none elsewhere."""
        if self.recursive_query is None:
            return None
        return self.recursive_query.checked(self.limits())

    def limits(self) -> Limits:
        return Limits(self.program, self.stratum, self.settings, self.stratum.capacity)

    def run(self) -> dict[str, pa.Table]:
        """The facts of each relation of the stratum: from DuckDB's recursive queries where they mean what the
        loop means (recursive_query.py), else from the loop."""
        limits = self.limits()
        with duckdb_errors(), contextlib.closing(self.db) if self.owns_db else contextlib.nullcontext():
            if self.recursive_query is not None:
                return self.recursive_query.run(self.fixpoint, limits, self.progress)
            return self.fixpoint.run(limits, self.progress)
