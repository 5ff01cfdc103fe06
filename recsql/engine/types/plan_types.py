"""The column types Spark gives every relation of a plan, derived in Python: what lets a whole plan run in
this process (local/program.py) with Spark's types, and what tells the answer's types without running it."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from recsql.engine.relation_types import SETTLED
from recsql.engine.types.errors import NotInferred
from recsql.engine.types.result_types import InferredTypes, arrow_schema, relation_types
from recsql.engine.types.widening import Row
from recsql.planner.plan import Plan, Stratum
from translator.ir import Program


class PlanTyping:
    """The types of a program's relations from the types of what each reads (local/program.py's Typing).
    Raises spark_types.NotInferred for what it does not cover."""

    def __init__(self, program: Program, timezone: str):
        self.program = program
        self.timezone = timezone

    def relation(self, name: str, known: Mapping[str, Row]) -> Row:
        opaque = self.program.relations[name].opaque
        if opaque is not None:
            raise NotInferred(f"Spark SQL evaluates {opaque.construct}")
        return relation_types(self.program.relations[name], self.program.rules_for(name), known.__getitem__)

    def stratum(self, stratum: Stratum, known: Mapping[str, Row]) -> InferredTypes:
        return InferredTypes(self.program, stratum, known.__getitem__, self.timezone)

    def arrow_schema(self, types: Row) -> pa.Schema:
        return arrow_schema(types, self.timezone)

    def derived(self, plan: Plan, tables: Mapping[str, Row]) -> dict[str, Row]:
        """The types of every relation (a recursive stratum's as they settle, which bound every
        iteration's), from the types of the tables the plan reads."""
        types = dict(tables)
        for stratum in plan.strata:
            if stratum.component.recursive:
                types.update(self.stratum(stratum, types).spark(SETTLED))
            else:
                for name in stratum.relations:
                    types[name] = self.relation(name, types)
        return types
