"""The local strategy: one recursive stratum evaluated in this process, over Arrow tables, by an in-process
DuckDB, with no Spark job per iteration (for small inputs, where Spark's per-iteration cost dominates).

The evaluation is Fixpoint's (executor.py), sharing its loop and limits (semi_naive.py): exit rules, then
the stratum's delta variants until nothing changes. Each kind of relation absorbs candidates as its Spark
counterpart in relations.py does, in DuckDB SQL:

* LocalSet: UNION; delta = candidates not yet known (NULL equals NULL, as in Spark's subtract).
* LocalBag: UNION ALL; delta = the last round's rows, full = all rounds.
* LocalExtremum: min()/max() in the header; delta = the groups whose value improved.
* LocalSum: sum()/count() in the header; contributions keyed by group, rule and contributor key, the
  largest value per contributor counts; delta = the groups whose sum changed.

Nothing here knows Spark. The caller may pass the column types the distributed evaluation would give each
relation after each iteration (`ResultTypes`); the facts are then cast to them iteration by iteration,
so values flow with Spark's types (DuckDB's sum(int) is HUGEINT, Spark's bigint) and the result has them.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping

import duckdb
import pyarrow as pa
from sqlglot import exp

from recsql.cancellation import interruptible
from recsql.engine.local_sql import RuleSQL, quote
from recsql.engine.render import column_names
from recsql.engine.semi_naive import Limits, ProgressListener, contributor_terms, iterate, rule_ids, rule_key
from recsql.errors import DataError, NotSupportedError, OperationalError
from recsql.planner import Stratum
from recsql.settings import Settings
from translator.ir import Atom, Iteration, Program, Relation, Rule

RULE_ID, CONTRIBUTOR, VALUE = "__rule", "__contributor", "__value"


@dataclass(frozen=True)
class RelationTypes:
    """The column types of a relation's full and delta facts after some iteration."""

    full: pa.Schema
    delta: pa.Schema


ResultTypes = Callable[[int], Mapping[str, RelationTypes]]  # iteration (0: after the exit rules) -> types


@dataclass(frozen=True)
class SparkSettings:
    """The Spark settings that decide what an expression means: under ANSI mode (Spark's default) a bad
    cast or a division by zero is an error; timestamps are read in the session time zone."""

    ansi: bool = True
    timezone: str = "UTC"


class LocalFixpoint:
    """Evaluates one recursive component to its fixpoint (or its UNION ALL iteration to exhaustion) from
    its inputs (one Arrow table per relation it reads from outside itself, columns c0 .. cN)."""

    def __init__(
        self,
        program: Program,
        stratum: Stratum,
        inputs: Mapping[str, pa.Table],
        settings: Settings,
        progress: ProgressListener | None = None,
        types: ResultTypes | None = None,
        spark_settings: SparkSettings = SparkSettings(),
        database: Database | None = None,
        seeds: Mapping[str, pa.Table] | None = None,
    ):
        """`database`: evaluate in this DuckDB connection (left open) instead of a new one. `seeds`: the
        facts of the exit rules, derived elsewhere (one part of them, under the decomposed strategy)."""
        self.program = program
        self.stratum = stratum
        self.settings = settings
        self.progress = progress
        self.types = types
        self.render = RuleSQL(spark_settings.ansi)
        self.db = database or Database(spark_settings.timezone)
        self.owns_db = database is None
        self.inputs = {name: f"input_{i}" for i, name in enumerate(inputs)}
        for name, table in inputs.items():
            self.db.register(self.inputs[name], table)
        bag = stratum.iteration is Iteration.BAG
        self.states = {name: state_for(self.db, program.relations[name], bag) for name in stratum.relations}
        self.versions = {name: f"state_{i}" for i, name in enumerate(stratum.relations)}
        self.rule_ids = rule_ids(program)
        self.seeds = seeds
        self.queries: dict[tuple, str] = {}
        self.iterations = 0

    def run(self) -> dict[str, pa.Table]:
        """The facts of each relation of the stratum."""
        with duckdb_errors(), contextlib.closing(self.db) if self.owns_db else contextlib.nullcontext():
            iterate(self, Limits(self.program, self.stratum, self.settings, self.stratum.capacity), self.progress)
        return {name: state.full for name, state in self.states.items()}

    def start(self) -> int:
        if self.seeds is not None:
            for i, (name, table) in enumerate(self.seeds.items()):
                self.db.register(f"seeds_{i}", table)
            return self.absorb({name: f"SELECT * FROM seeds_{i}" for i, name in enumerate(self.seeds)})
        return self.absorb(self.derive([(rule, None) for rule in self.stratum.exit_rules]))

    def step(self) -> int:
        self.iterations += 1
        return self.absorb(self.derive([(variant.rule, variant.versions) for variant in self.stratum.variants]))

    def absorb(self, candidates: dict[str, str]) -> int:
        """Merge each relation's candidates (a query), cast to this iteration's types; the number of new
        facts."""
        types = self.types(self.iterations) if self.types is not None else {}
        for name, state in self.states.items():
            state.merge(candidates.get(name), types.get(name))
        return sum(state.delta.num_rows for state in self.states.values())

    def facts(self) -> dict[str, int]:
        return {name: state.delta.num_rows for name, state in self.states.items()}

    def derive(self, rules: list[tuple[Rule, tuple | None]]) -> dict[str, str]:
        """The query of the candidate facts of each relation from the given rules, each atom reading the
        chosen version (the queries read the versions published now: they run before the next publish)."""
        self.publish(rules)
        queries: dict[str, list[str]] = {}
        for rule, versions in rules:
            queries.setdefault(rule.head, []).append(self.query(rule, versions))
        return {name: " UNION ALL ".join(f"({q})" for q in parts) for name, parts in queries.items()}

    def query(self, rule: Rule, versions: tuple | None) -> str:
        """The SQL of a rule reading the given versions (rendered once: the table names stay the same)."""
        key = (rule, versions)
        if key not in self.queries:
            def source(position: int, atom: Atom) -> str:
                return self.source(atom, versions[position] if versions else None)

            state = self.states[rule.head]
            if isinstance(state, LocalSum):
                contributors = contributor_terms(self.program, self.stratum, rule)
                sql = self.render.rule(rule, source, contributors)
                sql = state.contributions_of(sql, len(contributors), self.rule_ids[rule_key(rule)])
            else:
                sql = self.render.rule(rule, source)
            self.queries[key] = sql
        return self.queries[key]

    def publish(self, rules: list[tuple[Rule, tuple | None]]) -> None:
        """Make the versions of the stratum's relations that the rules read readable by name."""
        for rule, versions in rules:
            for atom, version in zip(rule.body, versions or ()):
                if version is not None:
                    state = self.states[atom.relation]
                    self.db.register(f"{self.versions[atom.relation]}_{version}", getattr(state, version))

    def source(self, atom: Atom, version: str | None) -> str:
        if atom.call_args:
            return f"range({', '.join(str(int(arg.to_py())) for arg in atom.call_args)})"
        if version is None:
            return quote(self.inputs[atom.relation])
        return quote(f"{self.versions[atom.relation]}_{version}")


class Database:
    """An in-process DuckDB connection reading Arrow tables registered by name.

    Opening a DuckDB connection costs about as much as a small query: a closed Database leaves its
    connection (every table unregistered) for the next one opened in the same thread."""

    idle = threading.local()

    def __init__(self, timezone: str, threads: int | None = None):
        """`threads`: how many threads each query may use (DuckDB's default: every core)."""
        self.reusable = threads is None
        self.connection = self.idle.__dict__.pop("connection", None) if self.reusable else None
        if self.connection is None:
            self.connection = duckdb.connect(config={"threads": threads} if threads else {})
        self.connection.execute(f"SET TimeZone = {exp.Literal.string(timezone).sql(dialect='duckdb')}")
        self.registered: dict[str, pa.Table] = {}
        self.sql_types: dict[pa.Schema, tuple[str | None, ...]] = {}
        self.casts: dict[tuple, str] = {}

    def register(self, name: str, table: pa.Table) -> None:
        """Make `table` readable as `name` (registering costs about as much as a small query: skipped
        when `name` already reads this table)."""
        if self.registered.get(name) is not table:
            self.connection.register(name, table)
            self.registered[name] = table

    def query(self, sql: str, **tables: pa.Table) -> pa.Table:
        """The result of `sql` reading the given tables by their keyword names."""
        for name, table in tables.items():
            self.register(name, table)
        with interruptible(self.connection.interrupt):
            relation = self.connection.sql(sql)
            # newer DuckDB calls it to_arrow_table and deprecates fetch_arrow_table
            fetch = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
            return fetch()

    def conform(self, table: pa.Table, schema: pa.Schema | None) -> pa.Table:
        """`table` with the column types of `schema`, cast as SQL casts (as is without a schema)."""
        if schema is None or self.types_of(table.schema) == self.types_of(schema):
            return table
        return self.query(self.cast("SELECT * FROM _conform", table.column_names, schema), _conform=table)

    def cast(self, sql: str, names: list[str], schema: pa.Schema | None) -> str:
        """The query `sql` (columns `names`) with the column types of `schema` (as is without one)."""
        if schema is None:
            return sql
        key = (tuple(names), schema)
        if key not in self.casts:
            self.casts[key] = ", ".join(
                f"CAST({quote(name)} AS {kind}) AS {quote(name)}" if kind else quote(name)
                for name, kind in zip(names, self.types_of(schema))
            )
        return f"SELECT {self.casts[key]} FROM ({sql}) AS q"

    def types_of(self, schema: pa.Schema) -> tuple[str | None, ...]:
        """DuckDB's SQL type of each column of `schema`; None for a column of NULLs (no type to cast to)."""
        if schema not in self.sql_types:
            self.register("_schema", schema.empty_table())
            types = self.connection.sql("SELECT * FROM _schema").types
            self.sql_types[schema] = tuple(None if str(t) == '"NULL"' else str(t) for t in types)
        return self.sql_types[schema]

    def close(self) -> None:
        if not self.reusable or "connection" in self.idle.__dict__:
            self.connection.close()
            return
        for name in self.registered:
            self.connection.unregister(name)
        self.idle.connection = self.connection


def null_table(names: list[str]) -> pa.Table:
    """No rows, untyped columns (Spark's empty_frame): unions take the other side's types."""
    return pa.table({name: pa.array([], pa.null()) for name in names})


class LocalRelation:
    """A relation's full, delta and old facts as Arrow tables (columns c0 .. cN)."""

    def __init__(self, db: Database, relation: Relation):
        self.db = db
        self.relation = relation
        self.names = column_names(len(relation.columns))
        self.full = self.delta = self.old = null_table(self.names)

    def merge(self, candidates: str | None, types: RelationTypes | None) -> None:
        """Absorb the facts of the query `candidates`."""
        self.old = self.full
        if candidates is None:
            self.delta = null_table(self.names)
            return
        self.absorb(candidates, types.full if types else None, types.delta if types else None)

    def absorb(self, candidates: str, full: pa.Schema | None, delta: pa.Schema | None) -> None:
        raise NotImplementedError

    def grow(self, full: pa.Schema | None) -> None:
        """full = full + delta, without copying full when the types agree."""
        known, new = self.db.conform(self.full, full), self.db.conform(self.delta, full)
        if known.schema == new.schema:
            self.full = pa.concat_tables([known, new])
        else:
            self.full = self.db.query("SELECT * FROM _full UNION ALL SELECT * FROM _delta", _full=known, _delta=new)

    def key_match(self, left: str, right: str, keys: list[str]) -> str:
        """Equality of the group keys of two aliased tables, NULL equal to NULL."""
        return " AND ".join(f"{left}.{quote(k)} IS NOT DISTINCT FROM {right}.{quote(k)}" for k in keys) or "TRUE"

    def replace_groups(self, full: pa.Schema | None, keys: list[str]) -> pa.Table:
        """The full facts with the groups of the delta replaced by the delta's rows."""
        return self.db.query(
            f"SELECT * FROM _full f WHERE NOT EXISTS (SELECT 1 FROM _delta d WHERE {self.key_match('f', 'd', keys)}) "
            "UNION ALL SELECT * FROM _delta",
            _full=self.db.conform(self.full, full), _delta=self.db.conform(self.delta, full),
        )


class LocalSet(LocalRelation):
    def absorb(self, candidates: str, full: pa.Schema | None, delta: pa.Schema | None) -> None:
        # candidates EXCEPT full, written as an anti-join: DuckDB then hashes the candidates rather
        # than the (larger, growing) full relation, about twice as fast; in the same query as the
        # rules, so the candidates (with their duplicates) are never materialized
        self.delta = self.db.query(
            f"SELECT DISTINCT * FROM ({self.db.cast(candidates, self.names, delta)}) AS c WHERE NOT EXISTS "
            f"(SELECT 1 FROM _full f WHERE {self.key_match('f', 'c', self.names)})",
            _full=self.db.conform(self.full, delta),
        )
        self.grow(full)


class LocalBag(LocalRelation):
    def absorb(self, candidates: str, full: pa.Schema | None, delta: pa.Schema | None) -> None:
        self.delta = self.db.query(self.db.cast(candidates, self.names, delta))
        self.grow(full)


class LocalExtremum(LocalRelation):
    def __init__(self, db: Database, relation: Relation):
        super().__init__(db, relation)
        self.keys = [self.names[i] for i in relation.group_key]
        self.value = self.names[relation.aggregate.column]
        self.function = relation.aggregate.function

    def absorb(self, query: str, full: pa.Schema | None, delta: pa.Schema | None) -> None:
        candidates = self.db.query(query)
        if not self.keys:
            merged = self.db.query(self.aggregate("SELECT * FROM _full UNION ALL SELECT * FROM _candidates"),
                                   _full=self.full, _candidates=candidates)
            merged = self.db.conform(merged, full)
            self.delta = self.db.conform(
                self.db.query("SELECT * FROM _merged EXCEPT SELECT * FROM _full", _merged=merged, _full=self.full),
                delta,
            )
            self.full = merged
            return
        better = "<" if self.function == "min" else ">"
        value = quote(self.value)
        improved = self.db.query(
            f"SELECT b.* FROM ({self.aggregate('SELECT * FROM _candidates')}) AS b "
            f"LEFT JOIN _full AS f ON {self.key_match('b', 'f', self.keys)} "
            f"WHERE f.{value} IS NULL OR b.{value} {better} f.{value}",
            _candidates=candidates, _full=self.full,
        )
        self.delta = self.db.conform(improved, delta)
        self.full = self.replace_groups(full, self.keys)

    def aggregate(self, query: str) -> str:
        items = [f"{self.function}({quote(n)}) AS {quote(n)}" if n == self.value else quote(n) for n in self.names]
        group = f" GROUP BY {', '.join(quote(k) for k in self.keys)}" if self.keys else ""
        return f"SELECT {', '.join(items)} FROM ({query}) AS c{group}"


class LocalSum(LocalRelation):
    """Candidates arrive as contributions: group key columns, RULE_ID, CONTRIBUTOR, VALUE."""

    def __init__(self, db: Database, relation: Relation):
        super().__init__(db, relation)
        self.keys = [self.names[i] for i in relation.group_key]
        self.value = self.names[relation.aggregate.column]
        self.contributions: pa.Table | None = None

    def absorb(self, query: str, full: pa.Schema | None, delta: pa.Schema | None) -> None:
        candidates = self.db.query(query)
        identity = ", ".join(quote(c) for c in self.keys + [RULE_ID, CONTRIBUTOR])
        known = {"_contributions": self.contributions} if self.contributions is not None else {}
        union = " UNION ALL ".join(f"SELECT * FROM {name}" for name in [*known, "_candidates"])
        merged = self.db.query(
            f"SELECT {identity}, max({VALUE}) AS {VALUE} FROM ({union}) AS c GROUP BY {identity}",
            _candidates=candidates, **known,
        )
        replace = self.contributions is not None and bool(self.keys)
        self.delta = self.db.conform(self.totals(self.changed(merged) if replace else merged), delta)
        self.full = self.replace_groups(full, self.keys) if replace else self.db.conform(self.delta, full)
        self.contributions = merged

    def changed(self, merged: pa.Table) -> pa.Table:
        """The contributions of the groups with a new or larger contribution."""
        keys = ", ".join(quote(k) for k in self.keys)
        return self.db.query(
            f"WITH changed AS (SELECT DISTINCT {keys} FROM (SELECT * FROM _merged EXCEPT SELECT * FROM _contributions)) "
            f"SELECT * FROM _merged AS m WHERE EXISTS (SELECT 1 FROM changed AS c WHERE {self.key_match('m', 'c', self.keys)})",
            _merged=merged, _contributions=self.contributions,
        )

    def totals(self, contributions: pa.Table) -> pa.Table:
        items = [f"sum({VALUE}) AS {quote(n)}" if n == self.value else quote(n) for n in self.names]
        group = f" GROUP BY {', '.join(quote(k) for k in self.keys)}" if self.keys else ""
        return self.db.query(f"SELECT {', '.join(items)} FROM _contributions{group}", _contributions=contributions)

    def contributions_of(self, derived: str, contributors: int, rule_id: int) -> str:
        """A rule's output (head columns, then `contributors` contributor columns) as contributions."""
        width = len(self.names)
        keys = "".join(f"{quote(k)}, " for k in self.keys)
        parts = ", ".join(f"CAST(c{width + i} AS VARCHAR)" for i in range(contributors))
        return (
            f"SELECT {keys}{rule_id} AS {RULE_ID}, to_json(list_value({parts})) AS {CONTRIBUTOR}, "
            f"{quote(self.value)} AS {VALUE} FROM ({derived}) AS d"
        )


def state_for(db: Database, relation: Relation, bag: bool) -> LocalRelation:
    if relation.aggregate is not None:
        kind = LocalExtremum if relation.aggregate.function in ("min", "max") else LocalSum
    else:
        kind = LocalBag if bag else LocalSet
    return kind(db, relation)


@contextlib.contextmanager
def duckdb_errors() -> Iterator[None]:
    """DuckDB failures as recsql exceptions: bad values are the data's fault, SQL DuckDB does not know
    is a limit of the local strategy, anything else an operational failure."""
    try:
        yield
    except (duckdb.DataError, duckdb.InvalidInputException) as error:
        raise DataError(first_line(error)) from None
    except (duckdb.CatalogException, duckdb.BinderException, duckdb.ParserException,
            duckdb.NotImplementedException) as error:
        raise NotSupportedError(
            f"the local strategy cannot evaluate this query ({first_line(error)}); "
            "SET recsql.strategy = distributed runs it on Spark"
        ) from None
    except duckdb.Error as error:
        raise OperationalError(f"local evaluation failed: {first_line(error)}") from None


def first_line(error: Exception) -> str:
    lines = [line for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__
