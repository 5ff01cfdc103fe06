"""SQL (a sqlglot tree in the recsql dialect) → Datalog IR.

Each SELECT block becomes one rule (two when it aggregates and then computes over the aggregates):
FROM items become atoms with a fresh variable per column, equalities between columns unify
variables (joins), the other WHERE conjuncts become conditions, EXISTS / IN subqueries become
semi-joins on auxiliary relations and their negations anti-joins. CTEs, derived tables, views and set
operations become relations of their own. A recursive CTE is simply a relation whose rules read it.

`Translator` is the translation's entry point, combining its parts, each a mixin over the shared state
of `TranslatorCore` (translator/core.py): query forms and WITH (queries.py), FROM items and joins
(from_clause.py), conditions, expressions and subqueries (conditions.py), GROUP BY (aggregation.py),
`DATALOG $$ program $$` (datalog/embedded.py).
ORDER BY, LIMIT and OFFSET of the outermost query (order_limit.py) become properties of the Program.
"""

from __future__ import annotations

from sqlglot import exp

from translator.aggregation import AggregationMixin
from translator.conditions import ConditionsMixin
from translator.core import SchemaProvider
from translator.datalog.embedded import DatalogMixin
from translator.datalog.syntax import ProgramSyntax
from translator.errors import UnsupportedError
from translator.from_clause import FromMixin
from translator.ir import Program
from translator.opaque import OpaqueMixin
from translator.order_limit import hidden_order_columns, limit_value, offset_value, sort_keys
from translator.queries import QueriesMixin


def translate(query: exp.Expr, catalog: SchemaProvider) -> Program:
    """Translate a query (SELECT, set operation, WITH ...) into a Program whose output is its answer."""
    return Translator(catalog).translate(query)


class Translator(QueriesMixin, FromMixin, ConditionsMixin, AggregationMixin, OpaqueMixin, DatalogMixin):
    """One translation: a query into the Program it is the answer of."""

    def translate(self, query: exp.Expr) -> Program:
        if not isinstance(query, (exp.Query, exp.Values)):
            raise UnsupportedError.at_node(f"expected a query, got {query.key.upper()}", query)
        query = query.copy()
        self.reserve_names(query)
        order = query.args.get("order")
        limit = query.args.get("limit")
        offset = query.args.get("offset")
        for clause in ("order", "limit", "offset"):
            query.set(clause, None)
        hidden = hidden_order_columns(query, order)
        output = self.translate_query(query, {}, None, name_hint="answer")
        self.program.output = output
        self.program.hidden_columns = len(hidden)
        if order is not None:
            self.program.order_by = sort_keys(query, order, hidden, self.program.relations[output].columns)
        if limit is not None:
            self.program.limit = limit_value(limit)
        if offset is not None:
            self.program.offset = offset_value(offset)
        return self.program


def translate_datalog(syntax: ProgramSyntax, output: str, sources: dict[str, str], catalog: SchemaProvider) -> Program:
    """A Datalog program into the Program whose output is its relation `output`; `sources` names the
    table each `.input` relation reads (its own name otherwise)."""
    translator = Translator(catalog)
    translator.program.output = translator.datalog_relation(syntax, output, sources)
    return translator.program


__all__ = ["SchemaProvider", "Translator", "translate", "translate_datalog"]
