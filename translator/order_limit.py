"""ORDER BY, LIMIT and OFFSET: a window's sort keys, hidden columns, row limit and the rows skipped
before it.

On the outermost query they become properties of the Program (its answer's window), on a subquery the
window of the relation its rows make (queries.translate_windowed); either way they are computed apart
from the translation of the query itself: the ORDER BY expressions that are not output columns are first
added to the select list as hidden trailing columns, then each sort key is resolved to a position among
the relation's columns.
"""

from __future__ import annotations

from sqlglot import exp

from translator.dialect import OrderKey
from translator.errors import TranslationError
from translator.ir import SortKey
from translator.sql_helpers import output_name, text_of, without_parentheses


def hidden_order_columns(query: exp.Expr, order: exp.Order | None) -> list[exp.Expr]:
    """ORDER BY expressions that are not output columns become hidden trailing columns. Over `*`, which output
    columns there are is known once it is expanded: every key but a position is hidden, as an OrderKey."""
    if order is None or not isinstance(query, exp.Select):
        return []
    names = [output_name(e, i).lower() for i, e in enumerate(query.expressions)]
    selected = {key_text(e.unalias()) for e in query.expressions}
    star = any(e.is_star for e in query.expressions)
    hidden = []
    for ordered in order.expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int:
            continue
        if star:
            hidden.append(key)
            continue
        if isinstance(key, exp.Column) and not key.table and key.name.lower() in names:
            continue
        if key_text(key) in selected:
            continue
        if query.args.get("distinct"):
            raise TranslationError.at_node(DISTINCT_ORDER, key)
        hidden.append(key)
    for i, key in enumerate(hidden):
        query.append("expressions", exp.alias_(OrderKey(this=key.copy()) if star else key.copy(), f"__order{i}"))
    return hidden


DISTINCT_ORDER = "with SELECT DISTINCT, ORDER BY expressions must appear in the select list"


def resolve_order_keys(items: list[tuple[str, exp.Expr]], distinct: bool) -> list[tuple[str, exp.Expr]]:
    """A SELECT's items (`*` expanded) with each OrderKey replaced by the output item it names (a copy of
    it), else by its key, which a SELECT DISTINCT may not have."""
    visible = [(name.lower(), expression) for name, expression in items if not isinstance(expression, OrderKey)]
    if len(visible) == len(items):
        return items

    def resolved(expression: exp.Expr) -> exp.Expr:
        if not isinstance(expression, OrderKey):
            return expression
        key = expression.this
        found = next((item for name, item in visible if names_item(key, name, item)), None)
        if found is None and distinct:
            raise TranslationError.at_node(DISTINCT_ORDER, key)
        return (key if found is None else found).copy()

    return [(name, resolved(expression)) for name, expression in items]


def names_item(key: exp.Expr, name: str, item: exp.Expr) -> bool:
    """Whether an ORDER BY key names the output item `name`, `item`: by its name, as the same column of the
    same FROM item, or as the same expression."""
    if isinstance(key, exp.Column) and not key.table:
        return key.name.lower() == name
    if isinstance(key, exp.Column) and isinstance(item, exp.Column):
        return (key.table.lower(), key.name.lower()) == (item.table.lower(), item.name.lower())
    return key_text(key) == key_text(item)


def key_text(expression: exp.Expr) -> str:
    """The text an ORDER BY key and an output item are matched by, parentheses around either aside."""
    return text_of(without_parentheses(expression))


def sort_keys(
    query: exp.Expr, order: exp.Order, hidden: list[exp.Expr], answer_columns: tuple[str, ...]
) -> tuple[SortKey, ...]:
    """The position and direction of each ORDER BY key among `answer_columns`, the columns of the
    answer's relation (the `hidden` ones last)."""
    columns = [c.lower() for c in answer_columns]
    visible = len(columns) - len(hidden)
    select = query if isinstance(query, exp.Select) else None
    shown = select.expressions[: len(select.expressions) - len(hidden)] if select is not None else []
    selected = [key_text(e.unalias()) for e in shown]
    keys = []
    hidden_sql = [key_text(h) for h in hidden]
    for ordered in order.expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int:
            position = int(key.this) - 1
            if not 0 <= position < visible:
                raise TranslationError.at_node(f"ORDER BY position {position + 1} is out of range", key)
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in columns[:visible]:
            position = columns.index(key.name.lower())
        elif key_text(key) in hidden_sql:
            position = visible + hidden_sql.index(key_text(key))
        elif key_text(key) in selected:
            position = selected.index(key_text(key))
        else:
            raise TranslationError.at_node(f"ORDER BY expression '{text_of(key)}' is not an output column", key)
        nulls_first = ordered.args.get("nulls_first")
        keys.append(SortKey(position, bool(ordered.args.get("desc")), nulls_first))
    return tuple(keys)


def limit_value(limit: exp.Limit | exp.Fetch) -> int:
    """The row count of a LIMIT clause (or of FETCH FIRST n ROWS ONLY)."""
    if isinstance(limit, exp.Fetch):
        options = limit.args.get("limit_options")
        if options is not None and (options.args.get("percent") or options.args.get("with_ties")):
            raise TranslationError.at_node("FETCH FIRST takes a row count (no PERCENT, no WITH TIES)", limit)
        return row_count(limit.args.get("count") or exp.Literal.number(1), "FETCH FIRST")
    return row_count(limit.expression, "LIMIT")


def offset_value(offset: exp.Offset) -> int:
    """The rows an OFFSET clause skips."""
    return row_count(offset.expression, "OFFSET")


def row_count(value: exp.Expr, clause: str) -> int:
    if isinstance(value, exp.Paren):
        value = value.unnest()
    if not (isinstance(value, exp.Literal) and value.is_int):
        raise TranslationError.at_node(f"{clause} takes a non-negative integer", value)
    return int(value.this)
