"""SQL the IR does not model, kept as SQL: a query the translation refuses as outside the IR (a window
function, ROLLUP, a FULL JOIN, EXCEPT ALL, a generator, EXISTS inside an OR, ...) becomes an opaque relation
of the program, evaluated by Spark SQL with Spark's meaning, instead of a refusal.

The smallest query that holds the construct is kept (`or_opaque` wraps each query's translation, the
innermost refusing one falling back first); its WITH, FROM items and subqueries read the program's relations
(CTEs, tables, views), so everything around it (recursion, magic sets, join order, the strategies) works as
before. A query the IR cannot leave to Spark stays refused: one reading columns of an outer query (the outer
query falls back as a whole instead), one holding a recursive WITH (recsql's fixpoint, which Spark would mean
otherwise), or one Spark refuses too (a CTE reading an outer query's columns, a locking read: NotInSpark and
`stays_refused`). A recursion through an opaque relation is refused by the analysis (analysis.check_component).

Contributes: or_opaque, translate_opaque.
Needs from the other parts: translate_with (QueriesMixin), resolve_table and table_version (FromMixin).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.qualify import qualify

from translator.core import TranslatorCore, names_a_cte_in_scope, reference_name, table_name
from translator.dialect import OrderKey
from translator.errors import NotInSpark, TranslationError, UnsupportedError
from translator.ir import Opaque, OpaqueInput
from translator.order_limit import resolve_order_keys
from translator.sql_helpers import output_name

INPUT = "recsql_input_"  # the placeholder names an opaque query reads the program's relations by
REFUSED = (" is not supported", " are not supported")


class OpaqueMixin(TranslatorCore):
    """Queries outside the IR as opaque relations."""

    def or_opaque(self, translate: Callable[[], str], query: exp.Expr, env: dict[str, str], name_hint: str) -> str:
        """`translate()`; where it refuses `query` as SQL the IR does not model, `query` as an opaque relation
        (the state of the translation as it was before the refused attempt)."""
        saved = self.saved_state()
        try:
            return translate()
        except UnsupportedError as refusal:
            if isinstance(refusal, NotInSpark) or stays_refused(query):
                raise
            self.restore_state(saved)
            return self.translate_opaque(query, env, name_hint, refusal)

    def translate_opaque(self, query: exp.Expr, env: dict[str, str], name_hint: str, refusal: UnsupportedError) -> str:
        """A relation of `query`'s rows as Spark SQL gives them: its WITH translated into relations, its
        table references read from the relations they name."""
        query = query.copy()
        with_ = query.args.get("with_")
        if with_ is not None:
            env = self.translate_with(with_, env)
            query.set("with_", None)
        inputs: dict[str, OpaqueInput] = {}  # by relation
        for table in list(query.find_all(exp.Table)):
            if isinstance(table.this, exp.Func) or names_a_cte_in_scope(table, reference_name(table)):
                continue  # a table-valued function (Spark's), or a CTE of a WITH inside the query
            relation, columns = self.opaque_input(table, env)
            read = inputs.setdefault(relation, OpaqueInput(f"{INPUT}{len(inputs)}", relation, columns))
            alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(table.name))
            table.replace(exp.Table(this=exp.to_identifier(read.placeholder), alias=alias.copy()))
        resolve_hidden_keys(query)
        construct = construct_of(refusal)
        names = output_columns(query, {read.placeholder: read.columns for read in inputs.values()}, construct)
        return self.new_relation(name_hint, names, opaque=Opaque(query, tuple(inputs.values()), construct))

    def opaque_input(self, table: exp.Table, env: dict[str, str]) -> tuple[str, tuple[str, ...]]:
        """The relation a table reference of an opaque query names, and its columns."""
        name = table_name(table, self.catalog)
        version = table.args.get("version")
        if version is not None:
            relation = self.table_version(name, version, env)
            columns = self.catalog.table_columns(relation)
            assert columns is not None  # the catalog names a version it knows
            return relation, tuple(columns)
        return self.resolve_table(name, env, table)


def stays_refused(query: exp.Expr) -> bool:
    """Whether `query` holds, past its own WITH (which is translated into relations), what Spark SQL would
    not mean as recsql does (a recursive WITH: recsql's fixpoint, its aggregates and limits) or would refuse
    (a locking read, a CTE reading an outer query's columns, which the IR's translation evaluates)."""
    own = query.args.get("with_")
    for node in query.walk():
        if node.args.get("locks"):
            return True
        nested_with = isinstance(node, exp.With) and node is not own
        if nested_with and (node.args.get("recursive") or any(reads_outer_columns(c.this) for c in node.expressions)):
            return True
    return False


def reads_outer_columns(query: exp.Expr) -> bool:
    """Whether a query reads a column by a qualifier it does not define (an outer query's table or alias)."""
    defined = {table.alias_or_name.lower() for table in query.find_all(exp.Table)}
    defined |= {node.alias.lower() for node in query.find_all(exp.Subquery, exp.Lateral, exp.CTE) if node.alias}
    return any(column.table and column.table.lower() not in defined for column in query.find_all(exp.Column))


def resolve_hidden_keys(query: exp.Expr) -> None:
    """The ORDER BY keys a SELECT * holds as hidden columns (order_limit.hidden_order_columns), each made the
    output item it names or else its key, as the IR's translation makes them."""
    if not isinstance(query, exp.Select):
        return
    items = [item for item in query.expressions if not item.is_star]
    named = [(output_name(item, position), item.unalias()) for position, item in enumerate(items)]
    resolved = resolve_order_keys(named, distinct=bool(query.args.get("distinct")))
    for item, (_, expression) in zip(items, resolved):
        if isinstance(item.unalias(), OrderKey):
            item.set("this", expression)


def construct_of(refusal: UnsupportedError) -> str:
    """What the refused query holds that the IR does not model, and where (for EXPLAIN and messages)."""
    text = refusal.message
    for ending in REFUSED:
        if ending in text:
            text = text[: text.index(ending)]
            break
    where = f" (line {refusal.line}, column {refusal.column})" if refusal.line is not None else ""
    return text + where


def output_columns(query: exp.Expr, inputs: dict[str, tuple[str, ...]], construct: str) -> tuple[str, ...]:
    """The names of an opaque query's columns: its first SELECT's items', a `*` expanded as Spark does
    (sqlglot's qualification, over the columns of the relations it reads)."""
    select = query
    while isinstance(select, (exp.SetOperation, exp.Subquery)):
        select = select.this
    if not isinstance(select, exp.Select):
        raise UnsupportedError.at_node(f"cannot tell the columns of a query holding {construct}", query)
    schema: dict[str, Any] = {name: {column: "string" for column in columns} for name, columns in inputs.items()}
    names: list[str] = []
    for position, item in enumerate(select.expressions):
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and item.is_star):
            names.extend(expanded(select, item, schema, construct))
        else:
            names.append(output_name(item, position))
    return tuple(names)


def expanded(select: exp.Select, star: exp.Expr, schema: dict[str, Any], construct: str) -> list[str]:
    """The columns a `*` or `t.*` of `select` lists."""
    alone = select.copy()
    alone.set("expressions", [star.copy()])
    for clause in ("group", "having", "qualify", "order", "where"):
        alone.set(clause, None)
    try:
        qualified = qualify(
            alone, schema=schema, dialect="spark", validate_qualify_columns=False, quote_identifiers=False
        )
    except OptimizeError as error:
        message = f"cannot tell the columns * lists in a query holding {construct}: {error}"
        raise TranslationError.at_node(message, star) from None
    names = qualified.named_selects
    if not names or "*" in names:
        raise UnsupportedError.at_node(f"cannot tell the columns * lists in a query holding {construct}", star)
    return names
