"""GROUP BY, aggregate calls and HAVING: the grouping rule of an aggregating SELECT block.

An aggregating block becomes a rule whose head holds the group keys (with a correlated subquery's
correlation columns) and the aggregate calls. When the select list is exactly the keys and calls, with
no HAVING and no correlation, that rule is the block's answer; otherwise a new block reads its result
and computes the select list and HAVING over it.

Grouping sets (ROLLUP, CUBE, GROUPING SETS, in any of their spellings, and the grouping() functions) are not
modelled: refuse_grouping_sets says so before a block is translated, rather than grouping by the plain keys
alone, and the block is left to Spark SQL.

Contributes: translate_aggregation, direct_aggregation_terms, group_expression; refuse_grouping_sets.
Needs from the other parts: translate_expression and scalar_subquery (ConditionsMixin).
"""

from __future__ import annotations

from sqlglot import exp

from translator.block import Block
from translator.core import TranslatorCore
from translator.errors import TranslationError, UnsupportedError
from translator.ir import Atom, var
from translator.scope import Scope
from translator.sql_helpers import block_nodes, outermost_aggregates, split_conjuncts, text_of


class AggregationMixin(TranslatorCore):
    """The grouping rule of an aggregating block."""

    def translate_aggregation(
        self, select: exp.Select, items: list[tuple[str, exp.Expr]], block: Block, env: dict[str, str]
    ) -> tuple[Block, list[exp.Expr], list[exp.Expr]]:
        """Emit the grouping rule. Returns the block reading its result, with the select list's terms and
        the HAVING conditions over that block (both already translated)."""
        group = select.args.get("group")
        group_exprs = [self.group_expression(g, items) for g in (group.expressions if group else [])]
        group_terms = [self.translate_expression(g, block, env) for g in group_exprs]
        having = select.args.get("having")
        having_conjuncts = split_conjuncts(having.this) if having is not None else []
        aggregate_calls: dict[str, exp.Expr] = {}
        for node in [e for _, e in items] + having_conjuncts:
            for call in outermost_aggregates(node):
                nested = [inner for argument in call.iter_expressions() for inner in outermost_aggregates(argument)]
                if nested:  # an aggregate of a subquery in the call's arguments is that subquery's
                    raise TranslationError.at_node("aggregate calls cannot be nested", nested[0])
                aggregate_calls.setdefault(text_of(call), self.translate_expression(call, block, env))

        direct = self.direct_aggregation_terms(items, group_terms, block, env)
        if direct is not None and not having_conjuncts and not block.correlations:
            relation = self.new_relation("agg", tuple(name for name, _ in items), distinct=not aggregate_calls)
            self.add_rule(block.rule(relation, direct), select)
            variables = [self.fresh_variable(name) for name, _ in items]
            aggregated = Block(Scope(parent=block.scope.parent), [Atom(relation, tuple(variables))])
            return aggregated, [var(v) for v in variables], []

        # correlation columns of a correlated subquery are grouping keys too
        correlation_terms = [inner for inner, _ in block.correlations]
        keys = group_terms + correlation_terms
        calls = list(aggregate_calls.values())
        if not keys and not calls:  # HAVING alone: the one group every query without GROUP BY has, rows or not
            calls = [exp.Count(this=exp.Star())]
        relation = self.new_relation(
            "agg",
            tuple([f"g{i}" for i in range(len(keys))] + [f"a{i}" for i in range(len(calls))]),
            distinct=not calls,  # grouping without aggregates: one row per group all the same
        )
        self.add_rule(block.rule(relation, keys + calls), select)
        key_vars = [self.fresh_variable(f"g_{i}") for i in range(len(keys))]
        call_vars = [self.fresh_variable(f"agg_{i}") for i in range(len(calls))]
        aggregated = Block(Scope(parent=block.scope.parent), [Atom(relation, tuple(key_vars + call_vars))])
        aggregated.correlations = [
            (var(v), outer) for v, (_, outer) in zip(key_vars[len(group_terms) :], block.correlations)
        ]
        replacements = {text_of(term): v for term, v in zip(group_terms, key_vars)}
        replacements.update(zip(aggregate_calls, call_vars))

        def post(expression: exp.Expr) -> exp.Expr:
            """An expression over the grouped rows, rewritten over the grouping rule's output."""
            expression = expression.copy()
            calls = {id(c) for c in outermost_aggregates(expression)}

            def swap(node: exp.Expr) -> exp.Expr:
                if id(node) in calls:
                    return var(replacements[text_of(node)])
                if isinstance(node, exp.Subquery):
                    return self.scalar_subquery(node, aggregated, env)
                if isinstance(node, exp.Literal) or node.find(exp.AggFunc) or node.find(exp.Subquery):
                    return node
                if node.find(exp.Column):
                    translated = self.translate_expression(node, block, env)
                    if text_of(translated) in replacements:
                        return var(replacements[text_of(translated)])
                if isinstance(node, exp.Column):
                    raise TranslationError.at_node(
                        f"column '{node.sql()}' must appear in GROUP BY or be used in an aggregate function", node
                    )
                return node

            return expression.transform(swap, copy=False)

        return aggregated, [post(e) for _, e in items], [post(c) for c in having_conjuncts]

    def direct_aggregation_terms(
        self, items: list[tuple[str, exp.Expr]], group_terms: list[exp.Expr], block: Block, env: dict[str, str]
    ) -> list[exp.Expr] | None:
        """When each select item is a group key or an aggregate call, and each key is selected, the grouping
        rule can produce the answer directly: `q(k, sum<x>) :- ...`."""
        group_sql = {text_of(term) for term in group_terms}
        terms: list[exp.Expr] = []
        keys_seen: set[str] = set()
        for _, expression in items:
            translated = self.translate_expression(expression, block, env)
            if isinstance(translated, exp.AggFunc) and len(outermost_aggregates(translated)) == 1:
                terms.append(translated)
            elif text_of(translated) in group_sql:
                terms.append(translated)
                keys_seen.add(text_of(translated))
            else:
                return None
        return terms if keys_seen == group_sql else None

    def group_expression(self, node: exp.Expr, items: list[tuple[str, exp.Expr]]) -> exp.Expr:
        """GROUP BY 2 and GROUP BY alias refer to select items."""
        if isinstance(node, exp.Literal) and node.is_int:
            position = int(node.this)
            if not 1 <= position <= len(items):
                raise TranslationError.at_node(f"GROUP BY position {position} is out of range", node)
            return items[position - 1][1]
        return node


GROUPING_SETS = "the IR does not model grouping sets"
GROUPING_FORMS: dict[type[exp.Expr], str] = {
    exp.Rollup: "GROUP BY ROLLUP",
    exp.Cube: "GROUP BY CUBE",
    exp.GroupingSets: "GROUP BY GROUPING SETS",
    exp.Grouping: "grouping()",
    exp.GroupingId: "grouping_id()",
}
# the arguments of exp.Group that sqlglot fills for the other spellings (MySQL's, Hive's, ClickHouse's), and
# Spark's GROUP BY ALL (every item without an aggregate a key), with why each is refused
GROUP_MODIFIERS = {
    "rollup": ("GROUP BY ... WITH ROLLUP", GROUPING_SETS),
    "cube": ("GROUP BY ... WITH CUBE", GROUPING_SETS),
    "grouping_sets": ("GROUP BY ... GROUPING SETS", GROUPING_SETS),
    "totals": ("GROUP BY ... WITH TOTALS", GROUPING_SETS),
    "all": ("GROUP BY ALL", "list the grouping columns"),
}


def refuse_grouping_sets(select: exp.Select) -> None:
    """Raise UnsupportedError at the first grouping clause of the SELECT block (its subqueries aside) that the
    IR does not model: grouping by the plain keys alone would drop the subtotal and total rows it asks for.
    The block is then left to Spark SQL (translator/opaque.py)."""
    for node in block_nodes(select):
        refused = unsupported_grouping(node)
        if refused is not None:
            clause, reason = refused
            raise UnsupportedError.at_node(f"{clause} is not supported: {reason}", node)


def unsupported_grouping(node: exp.Expr) -> tuple[str, str] | None:
    """(the clause as written, why it is refused) when `node` is a grouping form recsql does not implement."""
    if isinstance(node, exp.Group):
        return next((refused for arg, refused in GROUP_MODIFIERS.items() if node.args.get(arg)), None)
    return (GROUPING_FORMS[type(node)], GROUPING_SETS) if type(node) in GROUPING_FORMS else None
