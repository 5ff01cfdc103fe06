"""WHERE conditions, subquery predicates and scalar expressions of a SELECT block.

Each conjunct becomes what it can most cheaply be in the rule: an equality between columns a shared
variable (a join), [NOT] EXISTS / [NOT] IN (subquery) a semi- or anti-join, a condition on the
enclosing query's columns part of a correlation, anything else a condition. Expressions have their
column references replaced by variables and their scalar subqueries by outer-joined relations.

Contributes: translate_conjuncts, try_unify, try_correlation, try_subquery_predicate, inner_variables,
bind_expression, translate_expression, scalar_subquery.
Needs from the other parts: translate_query (QueriesMixin) for the subqueries.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from translator.block import Block, Correlation
from translator.core import TranslatorCore
from translator.errors import NotInSpark, TranslationError, UnsupportedError
from translator.ir import WILDCARD, Assignment, Atom, Condition, Rule, renamed, var, variables_of
from translator.scalar_rows import at_most_one_row, one_row_value
from translator.sql_helpers import column_depth, in_subquery, outermost_aggregates, select_from_holder


class ConditionsMixin(TranslatorCore):
    """Conditions and expressions of a block, subqueries among them."""

    def translate_conjuncts(self, conjuncts: list[exp.Expr], block: Block, env: dict[str, str]) -> None:
        for conjunct in map(predicate_over_one_row, conjuncts):
            if self.try_unify(conjunct, block) or self.try_subquery_predicate(conjunct, block, env):
                continue
            if block.scope.parent is not None and self.try_correlation(conjunct, block, env):
                continue
            block.body.append(Condition(self.translate_expression(conjunct, block, env)))

    def try_unify(self, conjunct: exp.Expr, block: Block) -> bool:
        """`a.x = b.y` between columns of this block joins by sharing one variable. Sides that are one
        variable already (`a.x = a.x`, or joined before) stay a condition: it is not true on NULL, where a
        shared variable would require nothing."""
        if not (
            isinstance(conjunct, exp.EQ)
            and isinstance(conjunct.this, exp.Column)
            and isinstance(conjunct.expression, exp.Column)
        ):
            return False
        left, left_depth = block.scope.resolve(conjunct.this)
        right, right_depth = block.scope.resolve(conjunct.expression)
        if left_depth or right_depth or {left, right} & block.optional or block.find(left) == block.find(right):
            return False
        block.unify(left, right)
        return True

    @staticmethod
    def inner_variables(block: Block) -> list[str]:
        """The variables of `block` its conditions on outer columns read, in a fixed order."""
        own = {v for source in block.scope.sources for v in source.variables}
        own |= {literal.variable for literal in block.body if isinstance(literal, Assignment)}
        read = set().union(*(variables_of(c) for c in block.outer_conditions)) if block.outer_conditions else set()
        return sorted(read & own)

    def try_correlation(self, conjunct: exp.Expr, block: Block, env: dict[str, str]) -> bool:
        """A condition of a correlated subquery that reads outer columns: `inner = outer` becomes an output
        column joined by the outer query; any other becomes a condition of its semi- or anti-join."""
        depths = {column_depth(block.scope, c) for c in conjunct.find_all(exp.Column) if not in_subquery(c, conjunct)}
        if depths <= {0}:
            return False
        if isinstance(conjunct, exp.EQ):
            for inner, outer_side in ((conjunct.this, conjunct.expression), (conjunct.expression, conjunct.this)):
                inner_depths = {column_depth(block.scope, c) for c in inner.find_all(exp.Column)}
                outer_depths = {column_depth(block.scope, c) for c in outer_side.find_all(exp.Column)}
                if inner_depths <= {0} and outer_depths == {1} and isinstance(outer_side, exp.Column):
                    block.correlations.append((self.translate_expression(inner, block, env), outer_side))
                    return True
        if max(depths) > 1:
            raise NotInSpark.at_node("subqueries correlated across two levels are not supported", conjunct)
        block.outer_conditions.append(self.translate_expression(conjunct, block, env, correlated=True))
        return True

    def try_subquery_predicate(
        self, conjunct: exp.Expr, block: Block, env: dict[str, str], name_hint: str | None = None
    ) -> bool:
        """[NOT] EXISTS (subquery) and x [NOT] IN (subquery) as semi- and anti-joins (`name_hint`: what the
        subquery's relation is named after, by default the predicate)."""
        predicate = subquery_predicate(conjunct)
        if predicate is None:
            return False
        negated, query, probe = predicate
        query = query.this if isinstance(query, exp.Subquery) else query
        correlations = Correlation()
        if probe is None:  # one row per match of a correlation, whatever the columns
            one = [exp.alias_(exp.Literal.number(1), "one")]
            if isinstance(query, exp.Select):
                query = query.copy()
                query.set("expressions", one)
            else:
                query = select_from_holder(query, one)
        name_hint = name_hint or ("exists_sub" if probe is None else "in_sub")
        relation = self.translate_query(query, env, block.scope, name_hint, correlations)
        relation_info = self.program.relations[relation]
        width = len(relation_info.columns) - correlations.width
        if probe is not None and width != 1:
            raise TranslationError.at_node(f"the subquery of IN must select one column, not {width}", query)
        probe_variable = self.bind_expression(probe, block, env) if probe is not None else None
        outer = [self.bind_expression(outer_column, block, env) for outer_column in correlations.outer]
        # a semi-join filters the rows once joined, outer joins included: needed when it reads what an outer
        # join binds (a join would match it before the outer join is made) or meets the outer query through
        # other conditions than equalities
        semi = not negated and bool(correlations.conditions or {probe_variable, *outer} & block.outer_joined())
        if not (negated or semi):  # joined: one fact per match, so that no outer row is repeated
            self.program.relations[relation] = replace(relation_info, distinct=True)
        args: list[str] = []
        conditions: list[exp.Expr] = []
        if probe_variable is not None and negated:
            # x NOT IN (...) holds only when no member equals x, is NULL, or meets a NULL x (SQL's three values)
            member = self.fresh_variable("member")
            conditions.append(
                exp.or_(
                    exp.EQ(this=var(member), expression=var(probe_variable)),
                    exp.Is(this=var(member), expression=exp.Null()),
                    exp.Is(this=var(probe_variable), expression=exp.Null()),
                )
            )
            args.append(member)
        elif probe_variable is not None:
            args.append(probe_variable)
        elif width:
            args.append(WILDCARD if negated or semi else self.fresh_variable("one"))
        args.extend(outer)
        if correlations.conditions:
            local = {inner: self.fresh_variable(inner) for inner in correlations.inner}
            args.extend(local.values())
            conditions.extend(renamed(condition, local) for condition in correlations.conditions)
        on = exp.and_(*conditions) if conditions else None
        block.body.append(Atom(relation, tuple(args), negated=negated, semi=semi, on=on))
        return True

    def bind_expression(self, expression: exp.Expr, block: Block, env: dict[str, str]) -> str:
        """A variable holding `expression`: the column's own variable, or a new assigned one."""
        translated = self.translate_expression(expression, block, env)
        if isinstance(translated, exp.Column):
            return translated.name
        variable = self.fresh_variable("e")
        block.body.append(Assignment(variable, translated))
        return variable

    # ------------------------------------------------------------------ expressions

    def translate_expression(
        self, expression: exp.Expr, block: Block, env: dict[str, str], correlated: bool = False
    ) -> exp.Expr:
        """Replace column references by variables and scalar subqueries by joined auxiliary relations.
        `correlated`: references to the enclosing query's columns become its variables."""

        def rewrite(node: exp.Expr) -> exp.Expr:
            if isinstance(node, exp.Placeholder):
                raise TranslationError.at_node("a query parameter (?) has no value bound", node)
            if isinstance(node, (exp.Exists, exp.In)) and (isinstance(node, exp.Exists) or node.args.get("query")):
                raise UnsupportedError.at_node(
                    "EXISTS / IN with a subquery are supported only as conditions joined by AND in WHERE", node
                )
            if isinstance(node, exp.Subquery):
                return self.scalar_subquery(node, block, env)
            if isinstance(node, exp.Column) and not node.is_star:
                variable, depth = block.scope.resolve(node)
                if depth and not (correlated and depth == 1):
                    raise UnsupportedError.at_node(
                        f"correlated reference '{node.sql()}' is supported only in equalities in WHERE", node
                    )
                return var(variable)
            return node

        return expression.copy().transform(rewrite, copy=False)

    def scalar_subquery(self, subquery: exp.Subquery, block: Block, env: dict[str, str]) -> exp.Expr:
        """A scalar subquery as an outer join: NULL when it returns no row for its correlation values, or
        for an aggregate with no GROUP BY (which returns a row whatever its input), its value over no row
        (`count(*)` 0). The keys are NULL exactly when no row matches: they equal the outer values."""
        correlations = Correlation()
        relation = self.translate_query(subquery.this, env, block.scope, "scalar", correlations)
        if correlations.conditions:
            raise UnsupportedError.at_node(
                "a scalar subquery may refer to the outer query only through equalities (inner = outer)", subquery
            )
        width = len(self.program.relations[relation].columns) - correlations.width
        if width != 1:
            raise TranslationError.at_node(f"a scalar subquery must select one column, not {width}", subquery)
        value = self.fresh_variable("scalar")
        keys = [self.fresh_variable("key") for _ in correlations.outer]
        outer = [self.bind_expression(c, block, env) for c in correlations.outer]
        on = exp.and_(*[exp.EQ(this=var(k), expression=var(o)) for k, o in zip(keys, outer)]) if keys else exp.true()
        block.optional |= {value, *keys}
        result: exp.Expr = var(value)
        if at_most_one_row(self.program, relation, frozenset(range(1, 1 + len(keys)))):
            block.body.append(Atom(relation, (value, *keys), optional=True, on=on))
        else:
            rows = self.fresh_variable("rows")
            block.optional.add(rows)
            block.body.append(Atom(self.counted_rows(relation), (value, *keys, rows), optional=True, on=on))
            result = one_row_value(value, rows, subquery)
        empty = value_over_no_rows(subquery.this) if keys else None
        if empty is None:
            return result
        return exp.Case(ifs=[exp.If(this=exp.Is(this=var(keys[0]), expression=exp.Null()), true=empty)], default=result)

    def counted_rows(self, relation: str) -> str:
        """A relation of a scalar subquery's value and correlation keys with its number of rows per key
        (its value any of theirs: it is read only where there is one)."""
        columns = self.program.relations[relation].columns
        counted = self.new_relation(f"{relation}_rows", (*columns, "rows"))
        names = [self.fresh_variable(column) for column in columns]
        terms = (exp.AnyValue(this=var(names[0])), *map(var, names[1:]), exp.Count(this=exp.Star()))
        self.add_rule(Rule(counted, terms, (Atom(relation, tuple(names)),)))
        return counted


def subquery_predicate(conjunct: exp.Expr) -> tuple[bool, exp.Expr, exp.Expr | None] | None:
    """A conjunct `[NOT] EXISTS (query)` or `probe [NOT] IN (query)` as (negated, query, probe: None for EXISTS);
    None for any other conjunct."""
    negated = isinstance(conjunct, exp.Not)
    node = conjunct.this if negated else conjunct
    node = node.this if isinstance(node, exp.Paren) else node
    if isinstance(node, exp.Exists):
        return negated, node.this, None
    if isinstance(node, exp.In) and node.args.get("query") is not None:
        return negated, node.args["query"], node.this
    return None


def predicate_over_one_row(conjunct: exp.Expr) -> exp.Expr:
    """[NOT] EXISTS and [NOT] IN over a subquery that gives one row whatever its input (see `one_row`) as what
    they are over that row: EXISTS true, IN an equality with the subquery as a scalar. As a semi-join, the
    subquery's relation would hold no row for outer values no input row matches, where SQL's holds one (a
    count of 0): `x IN (SELECT count(*) FROM t WHERE t.k = o.k)` is true for x = 0 when no row of t matches."""
    predicate = subquery_predicate(conjunct)
    if predicate is None:
        return conjunct
    negated, query, probe = predicate
    while isinstance(query, exp.Subquery) and not query.args.get("alias"):
        query = query.this
    if not one_row(query):
        return conjunct
    if probe is None:
        return exp.false() if negated else exp.true()
    equality = exp.EQ(this=probe.copy(), expression=exp.Subquery(this=query.copy()))
    return exp.Not(this=exp.Paren(this=equality)) if negated else equality


def one_row(query: exp.Expr) -> bool:
    """Whether `query` gives exactly one row whatever its input: a SELECT aggregating without GROUP BY, HAVING,
    LIMIT or OFFSET."""
    if not isinstance(query, exp.Select) or any(query.args.get(key) for key in ("group", "having", "limit", "offset")):
        return False
    return any(outermost_aggregates(item) for item in query.expressions)


def value_over_no_rows(query: exp.Expr) -> exp.Expr | None:
    """What an aggregating SELECT without GROUP BY or HAVING gives over no input row: its item with each
    count 0 and every other aggregate NULL; None for any other query (or an item reading columns outside
    its aggregates)."""
    if not isinstance(query, exp.Select) or query.args.get("group") or query.args.get("having"):
        return None
    if len(query.expressions) != 1 or not any(query.expressions[0].find_all(exp.AggFunc)):
        return None

    def over_no_rows(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Count):
            return exp.Literal.number(0)
        return exp.Null() if isinstance(node, exp.AggFunc) else node

    value = query.expressions[0].unalias().copy().transform(over_no_rows)
    return None if any(value.find_all(exp.Column)) or null_for_sure(value) else value


NULL_PROPAGATING = (exp.Paren, exp.Neg, exp.Cast, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod)


def null_for_sure(value: exp.Expr) -> bool:
    """Whether `value` is NULL because an operand of arithmetic is: the outer join's NULL is then the value
    over no row already (`0.2 * avg(x)`), and the join may stay one that a comparison makes inner."""
    if isinstance(value, exp.Null):
        return True
    return isinstance(value, NULL_PROPAGATING) and any(
        null_for_sure(operand) for operand in (value.this, value.args.get("expression")) if operand is not None
    )
