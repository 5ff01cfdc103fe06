"""Query forms into relations: SELECT blocks, UNION, EXCEPT / INTERSECT, VALUES, and WITH.

`translate_query` is where every part comes back to translate a nested query (a derived table, a view,
a subquery), and `translate_select` assembles one SELECT block from the other parts, so this is the
driver of the translation.

Contributes: translate_query, translate_select, the set operations, VALUES, WITH (CTEs, recursive or
not) and `branch_columns`.
Needs from the other parts: translate_from and expand_stars (FromMixin), translate_conjuncts,
translate_expression and inner_variables (ConditionsMixin), translate_aggregation (AggregationMixin).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp

from translator.aggregation import refuse_grouping_sets
from translator.block import Block, Correlation
from translator.correlated_with import CorrelatedWithMixin
from translator.dialect import DatalogQuery
from translator.errors import TranslationError, UnsupportedError
from translator.ir import Aggregate, Atom, Condition, HeaderAggregate, Iteration, Rule, Window, reachable, var
from translator.order_limit import hidden_order_columns, limit_value, offset_value, resolve_order_keys, sort_keys
from translator.scope import Scope
from translator.search_cycle import bind_values, expand_search_cycle, resolve_values
from translator.sql_helpers import (
    block_nodes,
    cte_groups,
    outermost_aggregates,
    output_name,
    split_conjuncts,
    top_union,
    union_branches,
    windowed,
)


class QueriesMixin(CorrelatedWithMixin):
    """Every query form as a relation, each SELECT block as a rule."""

    def translate_query(
        self,
        query: exp.Expr,
        env: dict[str, str],
        outer: Scope | None,
        name_hint: str = "q",
        correlations: Correlation | None = None,
    ) -> str:
        """Translate any query node into a relation; returns the relation's name."""
        if isinstance(query, DatalogQuery):
            return self.translate_datalog(query)
        if windowed(query):
            return self.translate_windowed(query, env, outer, name_hint, correlations)
        if isinstance(query, exp.Subquery):
            return self.translate_query(query.this, env, outer, name_hint, correlations)
        if query.args.get("order"):
            query = query.copy()
            query.set("order", None)  # ordering alone has no effect on a subquery's rows
        if isinstance(query, exp.SetOperation) and outer is not None:
            query = self.correlated_set_operation(query, outer, env) or query
        if outer is None and correlations is None and isinstance(query, (exp.Select, exp.SetOperation)):
            form = query
            return self.or_opaque(lambda: self.translate_form(form, env, None, name_hint, None), form, env, name_hint)
        return self.translate_form(query, env, outer, name_hint, correlations)

    def translate_form(
        self,
        query: exp.Expr,
        env: dict[str, str],
        outer: Scope | None,
        name_hint: str,
        correlations: Correlation | None,
    ) -> str:
        """A SELECT, a set operation or VALUES into a relation."""
        if isinstance(query, exp.Select):
            return self.translate_select(query, env, outer, None, name_hint, correlations)
        if isinstance(query, exp.Union):
            return self.translate_union(query, env, name_hint)
        if isinstance(query, (exp.Except, exp.Intersect)):
            return self.translate_except_intersect(query, env, name_hint)
        if isinstance(query, exp.Values):
            return self.translate_values(query, name_hint)
        raise UnsupportedError.at_node(f"unsupported query form {query.key.upper()}", query)

    def translate_windowed(
        self,
        query: exp.Expr,
        env: dict[str, str],
        outer: Scope | None,
        name_hint: str,
        correlations: Correlation | None,
    ) -> str:
        """A subquery with LIMIT / OFFSET (ORDER BY): a relation of its rows whose window keeps those the
        clauses say; the ORDER BY expressions that are not output columns are hidden columns of it, which
        a copy without them drops."""
        query = query.copy()
        order, limit, offset = (query.args.get(clause) for clause in ("order", "limit", "offset"))
        for clause in ("order", "limit", "offset"):
            query.set(clause, None)
        hidden = hidden_order_columns(query, order)
        known = set(self.program.relations)
        source = self.translate_query(query, env, outer, name_hint, correlations)
        if correlations is not None and correlations.width:
            raise UnsupportedError.at_node("LIMIT / OFFSET in a correlated subquery are not supported", query)
        relation = self.program.relations[source]
        if source in known:  # the query is a relation that exists already: its window goes on a copy
            source = self.copy_of(source, relation.columns, query)
            relation = self.program.relations[source]
        window = Window(
            sort_keys(query, order, hidden, relation.columns) if order is not None else (),
            limit_value(limit) if limit is not None else None,
            offset_value(offset) if offset is not None else 0,
        )
        self.program.relations[source] = replace(relation, window=window)
        visible = relation.columns[: len(relation.columns) - len(hidden)]
        return self.copy_of(source, visible, query) if hidden else source

    def copy_of(self, source: str, columns: tuple[str, ...], node: exp.Expr) -> str:
        """A relation of `source`'s rows, one each, with its first columns (`columns`)."""
        relation = self.new_relation(source, columns)
        self.copy_rule(source, relation, node)
        return relation

    def translate_union(self, union: exp.Union, env: dict[str, str], name_hint: str) -> str:
        env = self.translate_with(union.args.get("with_"), env)
        if union.args.get("with_"):
            union = union.copy()
            union.set("with_", None)
        branches = union_branches(union)
        distinct = bool(union.args.get("distinct"))
        columns, first = self.leading_columns(branches[0], env, f"{name_hint}_branch", required=False)
        relation = self.new_relation(name_hint, columns, distinct=distinct)
        if first is not None:
            self.copy_rule(first, relation, branches[0])
            branches = branches[1:]
        for branch in branches:
            self.translate_branch(branch, relation, env)
        return relation

    def leading_columns(
        self, branch: exp.Expr, env: dict[str, str], name_hint: str, required: bool
    ) -> tuple[tuple[str, ...], str | None]:
        """The columns of a set operation's first branch; when only its translation knows them (SELECT *,
        VALUES), also the relation it was translated into (`required`: raise instead of translating it)."""
        columns = self.branch_columns(branch, required=required)
        if columns is not None:
            return columns, None
        source = self.translate_query(branch, env, None, name_hint=name_hint)
        return self.program.relations[source].columns, source

    def copy_rule(self, source: str, target: str, node: exp.Expr) -> None:
        """`target` gets the rows of `source` (their first columns, as many as `target` has)."""
        variables = [self.fresh_variable(c) for c in self.program.relations[source].columns]
        width = len(self.program.relations[target].columns)
        self.add_rule(Rule(target, tuple(var(v) for v in variables[:width]), (Atom(source, tuple(variables)),)), node)

    def translate_branch(self, branch: exp.Expr, relation: str, env: dict[str, str]) -> None:
        """Add the rules of one UNION branch to `relation`."""
        target = self.program.relations[relation]
        branch = bind_values(branch, target.columns)
        whole = not windowed(branch)  # all its rows, one rule
        if isinstance(branch, exp.Select) and whole and (target.distinct or not branch.args.get("distinct")):
            select = branch
            source = self.or_opaque(
                lambda: self.translate_select(select, env, None, relation),
                select,
                env,
                f"{target.display_name}_branch",
            )
            if source != relation:  # left to Spark SQL
                self.copy_rule(source, relation, branch)
            return
        source = self.translate_query(branch, env, None, name_hint=f"{target.display_name}_branch")
        self.copy_rule(source, relation, branch)

    def translate_except_intersect(self, node: exp.Expr, env: dict[str, str], name_hint: str) -> str:
        if not node.args.get("distinct", True):
            raise UnsupportedError.at_node(f"{node.key.upper()} ALL is not supported", node)
        env = self.translate_with(node.args.get("with_"), env)
        left = self.translate_query(node.this, env, None, name_hint=f"{name_hint}_left")
        right = self.translate_query(node.expression, env, None, name_hint=f"{name_hint}_right")
        columns = self.program.relations[left].columns
        if len(self.program.relations[right].columns) != len(columns):
            raise TranslationError.at_node(
                f"both sides of {node.key.upper()} must have the same number of columns", node
            )
        relation = self.new_relation(name_hint, columns, distinct=True)
        variables = tuple(self.fresh_variable(c) for c in columns)
        negated = isinstance(node, exp.Except)
        # INTERSECT keeps the left side's rows that the right side has: a semi-join, which never multiplies
        # them (an inner join of two sides holding each value many times would), unless the right side is in
        # a recursion being translated, which reads it as an inner join (a semi-join cannot recurse)
        semi = not negated and not self.reads_recursing(right)
        right_atom = Atom(right, variables, negated=negated, semi=semi, nulls_equal=True)
        body = (Atom(left, variables), right_atom)
        self.add_rule(Rule(relation, tuple(var(v) for v in variables), body), node)
        return relation

    def reads_recursing(self, relation: str) -> bool:
        """Whether `relation` reads (through any relations) a recursive CTE whose branches are being translated."""
        edges = {name: self.program.reads(name) for name in self.program.relations}
        return bool(({relation} | reachable(relation, edges)) & self.recursing)

    def translate_values(self, values: exp.Values, name_hint: str) -> str:
        rows = values.expressions
        alias = values.args.get("alias")
        width = len(rows[0].expressions) if rows else 0
        columns = (
            tuple(c.name for c in alias.columns)
            if alias and alias.columns
            else tuple(f"col{i + 1}" for i in range(width))
        )
        relation = self.new_relation(alias.name if alias and alias.name else name_hint, columns)
        for row in rows:
            terms = row.expressions if isinstance(row, exp.Tuple) else [row]
            for term in terms:
                if term.find(exp.Column):
                    raise TranslationError.at_node("VALUES rows may hold only constants", term)
            self.add_rule(Rule(relation, tuple(t.copy() for t in terms), ()), row)
        return relation

    def branch_columns(self, branch: exp.Expr, required: bool = True) -> tuple[str, ...] | None:
        """Output column names of a query, known before translating it (None when it selects *)."""
        while isinstance(branch, (exp.Subquery, exp.SetOperation)):
            branch = branch.this
        if not isinstance(branch, exp.Select):
            if not required:
                return None
            raise UnsupportedError.at_node("cannot determine the columns of this query; give a column list", branch)
        names = []
        for i, expression in enumerate(branch.expressions):
            if isinstance(expression, exp.Star) or (isinstance(expression, exp.Column) and expression.is_star):
                if not required:
                    return None
                raise TranslationError.at_node("a recursive CTE with SELECT * needs a column list", expression)
            names.append(output_name(expression, i))
        return tuple(names)

    # ------------------------------------------------------------------ WITH

    def translate_with(self, with_: exp.With | None, env: dict[str, str]) -> dict[str, str]:
        if with_ is None:
            return env
        env = dict(env)
        ctes = [expand_search_cycle(cte) for cte in with_.expressions]
        self.check_cte_names(ctes)
        if not with_.args.get("recursive"):
            for cte in ctes:
                env[cte.alias_or_name.lower()] = self.translate_cte_query(cte, env)
            return env
        for group, recursive in cte_groups(ctes):
            if recursive or any(cte.args.get("aggregates") or cte.args.get("max_level") for cte in group):
                self.translate_recursion(group, env)
            else:
                env[group[0].alias_or_name.lower()] = self.translate_cte_query(group[0], env)
        return env

    @staticmethod
    def check_cte_names(ctes: list[exp.CTE]) -> None:
        """One name per CTE of a WITH: a second would hide the first from every query after it."""
        seen: set[str] = set()
        for cte in ctes:
            name = cte.alias_or_name.lower()
            if name in seen:
                raise TranslationError.at_node(f"CTE name '{name}' is used twice in one WITH", cte)
            seen.add(name)

    def translate_recursion(self, ctes: list[exp.CTE], env: dict[str, str]) -> None:
        """CTEs that read each other (or one reading itself) as relations whose rules read them; adds them
        to `env`. Each is declared first, so that any branch may read any of them."""
        declared = []
        for cte in ctes:
            name = cte.alias_or_name.lower()
            columns = self.cte_column_list(cte)
            relation = self.new_relation(name, columns or (), **self.cte_properties(cte, columns or ()), label=name)
            if top_union(cte.this) is not None:
                self.set_iterations.add(relation)
            env[name] = relation
            declared.append((cte, relation, union_branches(cte.this)))
        pending = {relation: branches for _, relation, branches in declared}
        self.recursing |= set(pending)
        undeclared = [(cte, relation) for cte, relation, _ in declared if self.cte_column_list(cte) is None]
        while undeclared:
            unknown = {entry.alias_or_name.lower() for entry, _ in undeclared}
            cte, relation = self.next_to_declare(undeclared, unknown, pending)
            pending[relation] = self.declare_columns(cte, relation, pending[relation], unknown, env)
            undeclared.remove((cte, relation))
        for cte, relation, _ in declared:
            self.resolve_key(cte, relation)
        for relation, branches in pending.items():
            for branch in branches:
                self.translate_branch(branch, relation, env)
        self.recursing -= set(pending)
        for cte, relation, _ in declared:
            if self.program.relations[relation].iteration.by_rounds:
                self.iterate_as_recursion(relation, cte)

    def resolve_key(self, cte: exp.CTE, relation: str) -> None:
        """DuckDB's USING KEY (columns) of a recursive CTE: the positions of its columns, once they are known."""
        key = cte.args.get("key")
        if not key:
            return
        info = self.program.relations[relation]
        columns = [column.lower() for column in info.columns]
        positions = []
        for name in key:
            if name.name.lower() not in columns:
                raise TranslationError.at_node(f"USING KEY names '{name.name}', not a column of '{info.label}'", name)
            positions.append(columns.index(name.name.lower()))
        if len(set(positions)) == len(columns):
            raise TranslationError.at_node(f"USING KEY of '{info.label}' needs a column outside the key", cte)
        self.program.relations[relation] = replace(info, key=tuple(positions))

    def next_to_declare(
        self, undeclared: list[tuple[exp.CTE, str]], unknown: set[str], pending: dict[str, list[exp.Expr]]
    ) -> tuple[exp.CTE, str]:
        """The CTE without a column list whose columns can be known next: its first branch names them, or
        reads no CTE of the recursion whose columns are `unknown` (the first, which cannot, otherwise)."""
        return next(
            (
                entry
                for entry in undeclared
                if self.branch_columns(pending[entry[1]][0], required=False) is not None
                or not self.reads_any(pending[entry[1]][0], unknown)
            ),
            undeclared[0],
        )

    def declare_columns(
        self, cte: exp.CTE, relation: str, branches: list[exp.Expr], unknown: set[str], env: dict[str, str]
    ) -> list[exp.Expr]:
        """Give a recursive CTE without a column list the columns of its first branch, translating that
        branch first when only its translation knows them (SELECT *, VALUES): possible when it reads no CTE
        of the recursion whose columns are `unknown`. Returns the branches still to translate."""
        anchor = branches[0]
        columns, source = self.leading_columns(
            anchor, env, f"{cte.alias_or_name.lower()}_anchor", required=self.reads_any(anchor, unknown)
        )
        self.program.relations[relation] = replace(self.program.relations[relation], columns=columns)
        if source is None:
            return branches
        self.copy_rule(source, relation, anchor)
        return branches[1:]

    def iterate_as_recursion(self, relation: str, cte: exp.CTE) -> None:
        """The relations in the recursion of a UNION ALL (or USING KEY) CTE that no UNION of their own gives a
        way of iterating (an inner WITH's CTE or a derived table reading the CTE) iterate as it does, by rounds:
        UNION ALL. One removing duplicates would have to do so per iteration, which a UNION ALL iteration does
        not (under USING KEY, the CTE's key keeps one row per key of each round: they need not)."""
        keyed = self.program.relations[relation].iteration is Iteration.KEYED
        for member in sorted(self.program.recursion_of(relation) - self.set_iterations):
            info = self.program.relations[member]
            if keyed:  # a round's rows pass through as they are: their key keeps one of them
                info = replace(info, distinct=False)
            if info.distinct:
                what = (
                    f"'{info.label}' removes duplicates (DISTINCT, GROUP BY or UNION)"
                    if info.label
                    else (
                        "a subquery removes duplicates (DISTINCT, GROUP BY or UNION, or the matches of EXISTS / IN, "
                        "kept once)"
                    )
                )
                raise UnsupportedError.at_node(
                    f"{what} inside the UNION ALL recursion of '{cte.alias_or_name}'; use UNION for the recursion, "
                    "or keep duplicates inside it",
                    cte,
                )
            self.program.relations[member] = replace(info, iteration=Iteration.BAG)

    def translate_cte_query(self, cte: exp.CTE, env: dict[str, str]) -> str:
        name = cte.alias_or_name.lower()
        relation = self.translate_query(cte.this, env, None, name_hint=name)
        columns = self.cte_column_list(cte)
        if columns is not None:
            info = self.program.relations[relation]
            if len(columns) != len(info.columns):
                raise TranslationError.at_node(
                    f"CTE '{name}' names {len(columns)} columns but its query has {len(info.columns)}", cte
                )
            self.program.relations[relation] = replace(info, columns=columns)
        self.label(relation, name)
        return relation

    @staticmethod
    def reads_any(query: exp.Expr, names: set[str]) -> bool:
        return any(table.name.lower() in names for table in query.find_all(exp.Table))

    @staticmethod
    def cte_column_list(cte: exp.CTE) -> tuple[str, ...] | None:
        alias = cte.args.get("alias")
        if alias is not None and alias.columns:
            return tuple(column.name for column in alias.columns)
        return None

    def cte_properties(self, cte: exp.CTE, columns: tuple[str, ...]) -> dict[str, Any]:
        union = top_union(cte.this)
        aggregates = cte.args.get("aggregates") or {}
        if len(aggregates) > 1:
            raise UnsupportedError.at_node(
                f"CTE '{cte.alias_or_name}' declares {len(aggregates)} aggregates; one per CTE is supported", cte
            )
        header = None
        for column, function in aggregates.items():
            header = HeaderAggregate(Aggregate(function), [c.lower() for c in columns].index(column.lower()))
        max_level = cte.args.get("max_level")
        bag = union is not None and not union.args.get("distinct")
        if cte.args.get("key") and (union is None or header is not None):
            raise UnsupportedError.at_node(
                f"USING KEY on '{cte.alias_or_name}' needs a UNION [ALL] of an anchor and a recursive branch, "
                "and no aggregate in the column list",
                cte,
            )
        iteration = Iteration.KEYED if cte.args.get("key") else Iteration.BAG if bag else Iteration.FIXPOINT
        return {
            "distinct": union is not None and not bag,
            "aggregate": header,
            "iteration": iteration,
            "max_level": int(max_level.this) if max_level is not None else None,
        }

    # ------------------------------------------------------------------ SELECT

    def translate_select(
        self,
        select: exp.Select,
        env: dict[str, str],
        outer: Scope | None,
        target: str | None,
        name_hint: str = "q",
        correlations: Correlation | None = None,
    ) -> str:
        """Translate one SELECT block into rule(s) for `target` (a new relation when None)."""
        refuse_grouping_sets(select)
        for unsupported in ("windows", "qualify", "distribute", "sort", "cluster", "pivots", "laterals"):
            if select.args.get(unsupported):
                raise UnsupportedError.at_node(f"{unsupported.upper()} is not supported", select)
        window = next((node for node in block_nodes(select) if isinstance(node, exp.Window)), None)
        if window is not None:
            raise UnsupportedError.at_node(
                f"the window function {window.this.sql(dialect='spark')} is not supported", window
            )
        locks = select.args.get("locks")
        if locks:
            kind = "UPDATE" if locks[0].args.get("update") else "SHARE"
            raise UnsupportedError.at_node(
                f"SELECT ... FOR {kind} is not supported: recsql takes no row locks; leave the clause out", select
            )
        if select.args.get("with_") is not None and outer is not None:
            select, env = self.parameterized_with(select, outer, env)
        env = self.translate_with(select.args.get("with_"), env)
        block = Block(Scope(parent=outer))
        conjuncts = self.translate_from(select, env, block)
        where = select.args.get("where")
        if where is not None:
            misplaced = outermost_aggregates(where.this)
            if misplaced:
                raise TranslationError.at_node("aggregate functions are not allowed in WHERE", misplaced[0])
            conjuncts.extend(split_conjuncts(where.this))
        self.translate_conjuncts(conjuncts, block, env)

        items = resolve_values(self.expand_stars(select, block))
        items = resolve_order_keys(items, distinct=bool(select.args.get("distinct")))
        group = select.args.get("group")
        having = select.args.get("having")
        aggregating = group is not None or having is not None or any(outermost_aggregates(e) for _, e in items)
        if aggregating and block.outer_conditions:
            raise UnsupportedError.at_node(
                "an aggregating subquery may refer to the outer query only through equalities (inner = outer)",
                select,
            )
        if aggregating:
            block, terms, having_conditions = self.translate_aggregation(select, items, block, env)
            block.body.extend(Condition(condition) for condition in having_conditions)
        else:
            terms = [self.translate_expression(e, block, env) for _, e in items]

        if block.correlations or block.outer_conditions:
            if correlations is None:
                raise UnsupportedError.at_node("correlated subqueries are supported in WHERE EXISTS / IN only", select)
            inner = self.inner_variables(block)
            correlations.outer.extend(outer_column for _, outer_column in block.correlations)
            correlations.inner.extend(inner)
            correlations.conditions.extend(block.outer_conditions)
            exposed = [term for term, _ in block.correlations] + [var(v) for v in inner]
            terms.extend(exposed)
            items = items + [(f"corr{i}", term) for i, term in enumerate(exposed)]

        if target is None:
            columns = tuple(name for name, _ in items)
            target = self.new_relation(name_hint, columns, distinct=bool(select.args.get("distinct")))
        self.add_rule(block.rule(target, terms), select)
        return target
