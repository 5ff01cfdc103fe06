"""A whole plan evaluated in this process, with no Spark job at all: the strategy for small queries, such as
a recursion that magic sets restricted to a few starting points.

Non-recursive relations are DuckDB queries over Arrow tables, recursive strata run as LocalFixpoint does,
and the answer is ordered and limited in DuckDB. Every relation is cast, as it is computed, to the
column types Spark would give it (derived in Python by spark_types.py), so the answer has Spark's
types and values. Used only when every stratum is planned LOCAL, every table the query reads is at
hand as Arrow, and spark_types.py covers every expression (`check`).
"""

from __future__ import annotations

import contextlib
import time
from typing import Mapping

import pyarrow as pa

from recsql.engine.answer import Answer
from recsql.engine.local import Database, LocalFixpoint, SparkSettings, duckdb_errors, null_table
from recsql.engine.local_sql import RuleSQL, quote
from recsql.engine.render import column_names
from recsql.engine.result_types import SETTLED, InferredTypes, arrow_schema, relation_types
from recsql.engine.semi_naive import ProgressListener
from recsql.engine.spark_types import Row
from recsql.engine.trace import Step, Trace
from recsql.planner import Plan, Stratum
from recsql.settings import Settings
from translator.ir import Atom, Relation, SortKey


class LocalProgram:
    def __init__(
        self,
        plan: Plan,
        table_types: Mapping[str, Row],
        settings: Settings,
        progress: ProgressListener | None,
        spark_settings: SparkSettings,
        trace: Trace | None = None,
    ):
        self.plan = plan
        self.program = plan.program
        self.settings = settings
        self.progress = progress
        self.spark_settings = spark_settings
        self.trace = trace
        self.types: dict[str, Row] = dict(table_types)
        self.facts: dict[str, pa.Table] = {}
        self.render = RuleSQL(spark_settings.ansi)

    def derived_types(self) -> dict[str, Row]:
        """The types of every relation derived without Spark (a recursive stratum's as they settle, which
        bound every iteration's); raises NotInferred when some cannot be."""
        types = dict(self.types)
        for stratum in self.plan.strata:
            if stratum.component.recursive:
                types.update(self.stratum_types(stratum, types).spark(SETTLED))
            else:
                for name in stratum.relations:
                    types[name] = self.relation_types(name, types)
        return types

    def run(self, tables: Mapping[str, pa.Table]) -> Answer:
        """The answer, from the rows of the tables the plan reads (columns c0 .. cN)."""
        with duckdb_errors(), contextlib.closing(Database(self.spark_settings.timezone)) as db:
            for name, table in tables.items():
                self.facts[name] = db.conform(table, self.arrow_schema(self.types[name]))
            for stratum in self.plan.strata:
                if stratum.component.recursive:
                    self.run_recursive(db, stratum)
                else:
                    for name in stratum.relations:
                        started = time.monotonic()
                        self.types[name] = self.relation_types(name, self.types)
                        self.facts[name] = self.combine(db, self.program.relations[name])
                        if self.trace is not None:
                            rows = {name: self.facts[name].num_rows}
                            self.trace.record(Step((name,), None, rows, time.monotonic() - started))
            return self.answer(db)

    # -------------------------------------------------------------- strata

    def stratum_types(self, stratum: Stratum, types: Mapping[str, Row]) -> InferredTypes:
        return InferredTypes(self.program, stratum, types.__getitem__, self.spark_settings.timezone)

    def relation_types(self, name: str, types: Mapping[str, Row]) -> Row:
        return relation_types(self.program.relations[name], self.program.rules_for(name), types.__getitem__)

    def run_recursive(self, db: Database, stratum: Stratum) -> None:
        types = self.stratum_types(stratum, self.types)
        inputs = {name: self.facts[name] for name in stratum.inputs}
        fixpoint = LocalFixpoint(self.program, stratum, inputs, self.settings, self.progress, types.arrow,
                                 self.spark_settings, db)
        self.facts.update(fixpoint.run())
        self.types.update(types.spark(fixpoint.iterations))

    def combine(self, db: Database, relation: Relation) -> pa.Table:
        """A non-recursive relation: the union of its rules, deduplicated or aggregated as declared (as
        Executor.combine does on Spark)."""
        rules = self.program.rules_for(relation.name)
        parts = [self.render.rule(rule, lambda _, atom: self.source(db, atom)) for rule in rules]
        names = column_names(len(relation.columns))
        if not parts:
            return null_table(names)
        union = " UNION ALL ".join(f"({part})" for part in parts)
        aggregate = relation.aggregate
        if aggregate is not None:
            keys = [quote(names[i]) for i in relation.group_key]
            function = "sum" if aggregate.function in ("sum", "count") else aggregate.function
            distinct = "DISTINCT " if function == "sum" else ""  # each distinct row is one contribution
            items = [f"{function}({quote(n)}) AS {quote(n)}" if i == aggregate.column else quote(n)
                     for i, n in enumerate(names)]
            group = f" GROUP BY {', '.join(keys)}" if keys else ""
            sql = f"SELECT {', '.join(items)} FROM (SELECT {distinct}* FROM ({union}) AS u) AS d{group}"
        else:
            sql = f"SELECT DISTINCT * FROM ({union}) AS u" if relation.distinct else union
        return db.conform(db.query(sql), self.arrow_schema(self.types[relation.name]))

    def source(self, db: Database, atom: Atom) -> str:
        if atom.call_args:
            return f"range({', '.join(str(int(arg.to_py())) for arg in atom.call_args)})"
        name = f"relation_{atom.relation}"
        db.register(name, self.facts[atom.relation])
        return quote(name)

    # -------------------------------------------------------------- the answer

    def answer(self, db: Database) -> Answer:
        program = self.program
        width = len(program.relations[program.output].columns) - program.hidden_columns
        names = column_names(width)
        sql = f"SELECT {', '.join(quote(n) for n in names)} FROM _output"
        if program.order_by:
            sql += " ORDER BY " + ", ".join(sort_key(key) for key in program.order_by)
        if program.limit is not None:
            sql += f" LIMIT {int(program.limit)}"
        types = self.types[program.output][:width]
        table = db.conform(db.query(sql, _output=self.facts[program.output]), self.arrow_schema(types))
        return Answer(list(program.output_columns), list(types), table)

    def arrow_schema(self, types: Row) -> pa.Schema:
        return arrow_schema(types, self.spark_settings.timezone)


def sort_key(key: SortKey) -> str:
    """Spark's default: NULLs first ascending, last descending, unless the query says otherwise."""
    nulls_first = key.nulls_first if key.nulls_first is not None else not key.descending
    return (f"{quote(f'c{key.column}')} {'DESC' if key.descending else 'ASC'} "
            f"NULLS {'FIRST' if nulls_first else 'LAST'}")
