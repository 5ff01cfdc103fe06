"""SQL (a sqlglot tree in the recsql dialect) → Datalog IR.

Each SELECT block becomes one rule (two when it aggregates and then computes over the aggregates):
FROM items become atoms with a fresh variable per column, equalities between columns unify
variables (joins), the other WHERE conjuncts become conditions, EXISTS / IN subqueries become
semi-joins on auxiliary relations and their negations anti-joins. CTEs, derived tables, views and set
operations become relations of their own. A recursive CTE is simply a relation whose rules read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Protocol

from sqlglot import exp

from translator.errors import TranslationError, UnsupportedError
from translator.ir import (
    WILDCARD,
    Assignment,
    Atom,
    Condition,
    HeaderAggregate,
    Iteration,
    Literal,
    Program,
    Relation,
    Rule,
    SortKey,
    renamed,
    var,
    variables_of,
)
from translator.scope import Scope, Source

TABLE_FUNCTIONS = {"range": ("id",)}


class SchemaProvider(Protocol):
    """What the translator needs to know of stored tables and views."""

    def table_columns(self, name: str) -> tuple[str, ...] | None: ...

    def view_query(self, name: str) -> exp.Expression | None: ...

    def versioned(self, name: str, kind: str, value: int | str) -> str:
        """The name of a table's version (kind VERSION: a number; TIMESTAMP: the version of that time)."""


def translate(query: exp.Expression, catalog: SchemaProvider) -> Program:
    """Translate a query (SELECT, set operation, WITH ...) into a Program whose output is its answer."""
    return Translator(catalog).translate(query)


@dataclass
class Correlation:
    """What a correlated subquery exposes to the query around it, as columns after its own: one per
    equality with an outer column (`outer`: the outer side of each), then one per inner variable that its
    other conditions on outer columns read (`inner`). Those `conditions` (over inner and outer variables)
    become the condition of the outer query's semi- or anti-join."""

    outer: list[exp.Expression] = field(default_factory=list)
    inner: list[str] = field(default_factory=list)
    conditions: list[exp.Expression] = field(default_factory=list)

    @property
    def width(self) -> int:
        return len(self.outer) + len(self.inner)


@dataclass
class Block:
    """The body of the rule being built for one SELECT block, with its variable unification."""

    scope: Scope
    body: list[Literal] = field(default_factory=list)
    parent_of: dict[str, str] = field(default_factory=dict)
    # correlation pairs (inner expression, outer column) of a correlated subquery
    correlations: list[tuple[exp.Expression, exp.Expression]] = field(default_factory=list)
    # its other conditions reading outer columns, over inner and outer variables
    outer_conditions: list[exp.Expression] = field(default_factory=list)
    optional: set[str] = field(default_factory=set)  # variables of LEFT JOINed atoms: never unified

    def find(self, variable: str) -> str:
        while self.parent_of.get(variable, variable) != variable:
            variable = self.parent_of[variable]
        return variable

    def unify(self, a: str, b: str) -> None:
        a, b = self.find(a), self.find(b)
        if a != b:
            self.parent_of[b] = a

    def canonical(self, expression: exp.Expression) -> exp.Expression:
        if not self.parent_of:
            return expression
        return expression.transform(
            lambda node: var(self.find(node.name)) if isinstance(node, exp.Column) and not node.table else node
        )

    def rule(self, head: str, terms: list[exp.Expression]) -> Rule:
        body: list[Literal] = []
        for literal in self.body:
            if isinstance(literal, Atom):
                args = tuple(self.find(a) if a != WILDCARD else a for a in literal.args)
                on = self.canonical(literal.on) if literal.on is not None else None
                body.append(replace(literal, args=args, on=on))
            elif isinstance(literal, Condition):
                body.append(Condition(self.canonical(literal.expression)))
            else:
                body.append(Assignment(self.find(literal.variable), self.canonical(literal.expression)))
        return Rule(head, tuple(self.canonical(term) for term in terms), tuple(body))


class Translator:
    def __init__(self, catalog: SchemaProvider):
        self.catalog = catalog
        self.program = Program()
        self.variable_names: set[str] = set()
        self.views: dict[str, str] = {}
        self.views_in_progress: list[str] = []

    # ------------------------------------------------------------------ entry point

    def translate(self, query: exp.Expression) -> Program:
        if not isinstance(query, exp.Query):
            raise UnsupportedError.at_node(f"expected a query, got {query.key.upper()}", query)
        query = query.copy()
        order = query.args.get("order")
        limit = query.args.get("limit")
        query.set("order", None)
        query.set("limit", None)
        hidden = self._hidden_order_columns(query, order)
        output = self.translate_query(query, {}, None, name_hint="answer")
        self.program.output = output
        self.program.hidden_columns = len(hidden)
        if order is not None:
            self.program.order_by = self._sort_keys(query, order, hidden)
        if limit is not None:
            self.program.limit = self._limit_value(limit)
        return self.program

    # ------------------------------------------------------------------ relations and names

    def new_relation(self, hint: str, columns: tuple[str, ...], **properties) -> str:
        base = hint.lower()
        name, n = base, 1
        while name in self.program.relations or self._is_stored(name):
            n += 1
            name = f"{base}_{n}"
        self.program.relations[name] = Relation(name, columns, **properties)
        return name

    def _is_stored(self, name: str) -> bool:
        return self.catalog.table_columns(name) is not None or self.catalog.view_query(name) is not None

    def fresh_variable(self, hint: str) -> str:
        base = "".join(ch for ch in hint.upper() if ch.isalnum() or ch == "_").lstrip("_0123456789") or "V"
        name, n = base, 0
        while name.lower() in self.variable_names:
            n += 1
            name = f"{base}{n}"
        self.variable_names.add(name.lower())
        return name

    def add_rule(self, rule: Rule, node: exp.Expression | None = None) -> None:
        relation = self.program.relations[rule.head]
        if len(rule.terms) != len(relation.columns):
            raise TranslationError.at_node(
                f"{relation.display_name} has {len(relation.columns)} columns but a branch of it "
                f"selects {len(rule.terms)}",
                node,
            )
        self.program.rules.append(rule)

    # ------------------------------------------------------------------ queries

    def translate_query(
        self, query: exp.Expression, env: dict[str, str], outer: Scope | None, name_hint: str = "q",
        correlations: Correlation | None = None,
    ) -> str:
        """Translate any query node into a relation; returns the relation's name."""
        if isinstance(query, exp.Subquery):
            return self.translate_query(query.this, env, outer, name_hint, correlations)
        if query.args.get("order") or query.args.get("limit"):
            if not isinstance(query, exp.Select) or query.args.get("limit") is not None:
                raise UnsupportedError.at_node("ORDER BY / LIMIT are supported only on the outermost query", query)
            query = query.copy()
            query.set("order", None)  # ordering inside a subquery has no effect on its rows
        if isinstance(query, exp.Select):
            return self.translate_select(query, env, outer, None, name_hint, correlations)
        if isinstance(query, exp.Union):
            return self.translate_union(query, env, name_hint)
        if isinstance(query, (exp.Except, exp.Intersect)):
            return self.translate_except_intersect(query, env, name_hint)
        if isinstance(query, exp.Values):
            return self.translate_values(query, name_hint)
        raise UnsupportedError.at_node(f"unsupported query form {query.key.upper()}", query)

    def translate_union(self, union: exp.Union, env: dict[str, str], name_hint: str) -> str:
        env = self.translate_with(union.args.get("with_"), env)
        if union.args.get("with_"):
            union = union.copy()
            union.set("with_", None)
        branches = flatten_union(union)
        distinct = any(node.args.get("distinct") for node in union_nodes(union))
        columns = self.branch_columns(branches[0], required=False)
        first = None
        if columns is None:  # SELECT * in the first branch: its columns come out of its translation
            first = self.translate_query(branches[0], env, None, name_hint=f"{name_hint}_branch")
            columns = self.program.relations[first].columns
        relation = self.new_relation(name_hint, columns, distinct=distinct)
        if first is not None:
            self.copy_rule(first, relation, branches[0])
            branches = branches[1:]
        for branch in branches:
            self.translate_branch(branch, relation, env)
        return relation

    def copy_rule(self, source: str, target: str, node: exp.Expression) -> None:
        variables = [self.fresh_variable(c) for c in self.program.relations[source].columns]
        self.add_rule(Rule(target, tuple(var(v) for v in variables), (Atom(source, tuple(variables)),)), node)

    def translate_branch(self, branch: exp.Expression, relation: str, env: dict[str, str]) -> None:
        """Add the rules of one UNION branch to `relation`."""
        target = self.program.relations[relation]
        if isinstance(branch, exp.Select) and not (branch.args.get("distinct") and not target.distinct):
            self.translate_select(branch, env, None, relation)
            return
        source = self.translate_query(branch, env, None, name_hint=f"{target.display_name}_branch")
        self.copy_rule(source, relation, branch)

    def translate_except_intersect(self, node: exp.Expression, env: dict[str, str], name_hint: str) -> str:
        if not node.args.get("distinct", True):
            raise UnsupportedError.at_node(f"{node.key.upper()} ALL is not supported", node)
        env = self.translate_with(node.args.get("with_"), env)
        left = self.translate_query(node.this, env, None, name_hint=f"{name_hint}_left")
        right = self.translate_query(node.expression, env, None, name_hint=f"{name_hint}_right")
        columns = self.program.relations[left].columns
        if len(self.program.relations[right].columns) != len(columns):
            raise TranslationError.at_node(f"both sides of {node.key.upper()} must have the same number of columns", node)
        relation = self.new_relation(name_hint, columns, distinct=True)
        variables = tuple(self.fresh_variable(c) for c in columns)
        negated = isinstance(node, exp.Except)
        body = (Atom(left, variables), Atom(right, variables, negated=negated, nulls_equal=True))
        self.add_rule(Rule(relation, tuple(var(v) for v in variables), body), node)
        return relation

    def translate_values(self, values: exp.Values, name_hint: str) -> str:
        rows = values.expressions
        alias = values.args.get("alias")
        width = len(rows[0].expressions) if rows else 0
        columns = tuple(c.name for c in alias.columns) if alias and alias.columns else tuple(
            f"col{i + 1}" for i in range(width)
        )
        relation = self.new_relation(alias.name if alias and alias.name else name_hint, columns)
        for row in rows:
            terms = row.expressions if isinstance(row, exp.Tuple) else [row]
            for term in terms:
                if term.find(exp.Column):
                    raise TranslationError.at_node("VALUES rows may hold only constants", term)
            self.add_rule(Rule(relation, tuple(t.copy() for t in terms), ()), row)
        return relation

    def branch_columns(self, branch: exp.Expression, required: bool = True) -> tuple[str, ...] | None:
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
        ctes = list(with_.expressions)
        names = {cte.alias_or_name.lower() for cte in ctes}
        recursive = bool(with_.args.get("recursive"))
        declared: list[tuple[exp.CTE, str]] = []
        for cte in ctes:
            name = cte.alias_or_name.lower()
            if recursive and (self.reads_any(cte.this, names) or cte.args.get("aggregates") or cte.args.get("max_level")):
                columns = self.cte_columns(cte)
                relation = self.new_relation(name, columns, **self.cte_properties(cte, columns), label=name)
                declared.append((cte, relation))
                env[name] = relation
        for cte in ctes:
            name = cte.alias_or_name.lower()
            match = next((relation for declared_cte, relation in declared if declared_cte is cte), None)
            if match is None:  # an ordinary CTE: a named subquery
                env[name] = self.translate_cte_query(cte, env)
                continue
            for branch in flatten_union(cte.this):
                self.translate_branch(branch, match, env)
        return env

    def translate_cte_query(self, cte: exp.CTE, env: dict[str, str]) -> str:
        name = cte.alias_or_name.lower()
        relation = self.translate_query(cte.this, env, None, name_hint=name)
        alias = cte.args.get("alias")
        if alias is not None and alias.columns:
            info = self.program.relations[relation]
            columns = tuple(column.name for column in alias.columns)
            if len(columns) != len(info.columns):
                raise TranslationError.at_node(
                    f"CTE '{name}' names {len(columns)} columns but its query has {len(info.columns)}", cte
                )
            self.program.relations[relation] = replace(info, columns=columns, label=name)
        return relation

    @staticmethod
    def reads_any(query: exp.Expression, names: set[str]) -> bool:
        return any(table.name.lower() in names for table in query.find_all(exp.Table))

    def cte_columns(self, cte: exp.CTE) -> tuple[str, ...]:
        alias = cte.args.get("alias")
        if alias is not None and alias.columns:
            return tuple(column.name for column in alias.columns)
        return self.branch_columns(flatten_union(cte.this)[0])

    def cte_properties(self, cte: exp.CTE, columns: tuple[str, ...]) -> dict:
        body = cte.this
        union_distinct = [node.args.get("distinct") for node in union_nodes(body)]
        aggregates = cte.args.get("aggregates") or {}
        if len(aggregates) > 1:
            raise UnsupportedError.at_node(
                f"CTE '{cte.alias_or_name}' declares {len(aggregates)} aggregates; one per CTE is supported", cte
            )
        header = None
        for column, function in aggregates.items():
            header = HeaderAggregate(function, [c.lower() for c in columns].index(column.lower()))
        max_level = cte.args.get("max_level")
        bag = bool(union_distinct) and not any(union_distinct)
        return {
            "distinct": bool(union_distinct) and not bag,
            "aggregate": header,
            "iteration": Iteration.BAG if bag else Iteration.FIXPOINT,
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
        for unsupported in ("windows", "qualify", "distribute", "sort", "cluster", "pivots", "laterals"):
            if select.args.get(unsupported):
                raise UnsupportedError.at_node(f"{unsupported.upper()} is not supported", select)
        if any(select.find_all(exp.Window)):
            raise UnsupportedError.at_node("window functions are not supported", select.find(exp.Window))
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

        items = self.expand_stars(select, block)
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

    def translate_from(self, select: exp.Select, env: dict[str, str], block: Block) -> list[exp.Expression]:
        """Add an atom per FROM item; returns the join conditions as conjuncts."""
        conjuncts: list[exp.Expression] = []
        from_ = select.args.get("from_")
        if from_ is None:
            if select.args.get("joins"):
                raise TranslationError.at_node("JOIN without FROM", select)
            return conjuncts
        self.add_source(from_.this, env, block)
        for join in select.args.get("joins") or []:
            side = (join.args.get("side") or "").upper()
            kind = (join.args.get("kind") or "").upper()
            if (side and side != "LEFT") or kind in {"SEMI", "ANTI", "NATURAL"} or join.args.get("method"):
                raise UnsupportedError.at_node(f"{(side + ' ' + kind).strip()} JOIN is not supported", join)
            before = {s.alias for s in block.scope.sources}
            self.add_source(join.this, env, block)
            if side == "LEFT":
                self.make_optional(join, block, env)
                continue
            if join.args.get("on") is not None:
                conjuncts.extend(split_conjuncts(join.args["on"]))
            for column in join.args.get("using") or []:
                (new_source,) = [s for s in block.scope.sources if s.alias not in before]
                left = [s for s in block.scope.sources if s.alias in before and column.name.lower() in
                        [c.lower() for c in s.columns]]
                if not left:
                    raise TranslationError.at_node(f"USING column '{column.name}' not found on the left", column)
                conjuncts.append(
                    exp.EQ(this=exp.column(column.name, left[0].alias), expression=exp.column(column.name, new_source.alias))
                )
        return conjuncts

    def make_optional(self, join: exp.Join, block: Block, env: dict[str, str]) -> None:
        """LEFT JOIN: the atom just added becomes optional, its ON condition the condition of the outer join."""
        if join.args.get("using"):
            raise UnsupportedError.at_node("LEFT JOIN ... USING is not supported; use ON", join)
        on = join.args.get("on")
        if on is None:
            raise TranslationError.at_node("LEFT JOIN needs an ON condition", join)
        if on.find(exp.Subquery):
            raise UnsupportedError.at_node("subqueries in a LEFT JOIN's ON condition are not supported", on)
        atom = block.body.pop()
        block.optional |= atom.variables()
        condition = self.translate_expression(on, block, env)
        block.body.append(replace(atom, optional=True, on=condition))

    def add_source(self, node: exp.Expression, env: dict[str, str], block: Block) -> None:
        alias_node = node.args.get("alias")
        alias = alias_node.name.lower() if alias_node is not None and alias_node.name else None
        column_aliases = [c.name for c in alias_node.columns] if alias_node is not None and alias_node.columns else None
        call_args: tuple[exp.Expression, ...] = ()
        if isinstance(node, exp.Table) and isinstance(node.this, (exp.Anonymous, exp.Func)):
            function = node.this
            fname = (function.name if isinstance(function, exp.Anonymous) else function.sql_name()).lower()
            if fname not in TABLE_FUNCTIONS:
                raise UnsupportedError.at_node(f"unknown table-valued function '{fname}'", node)
            relation, columns = fname, TABLE_FUNCTIONS[fname]
            call_args = tuple(function.expressions)
            alias = alias or fname
        elif isinstance(node, exp.Table):
            name = node.name.lower()
            if node.args.get("db"):
                raise UnsupportedError.at_node(f"qualified table names ('{node.sql()}') are not supported", node)
            version = node.args.get("version")
            if version is not None:
                relation, columns = self.resolve_table(self.table_version(name, version, env), {}, node)
            else:
                relation, columns = self.resolve_table(name, env, node)
            alias = alias or name
        elif isinstance(node, (exp.Subquery, exp.Values)):
            inner = node.this if isinstance(node, exp.Subquery) else node
            relation = self.translate_query(inner, env, None, name_hint=alias or "derived")
            columns = self.program.relations[relation].columns
            alias = alias or relation
        else:
            raise UnsupportedError.at_node(f"unsupported FROM item {node.key.upper()}", node)
        if column_aliases is not None:
            if len(column_aliases) != len(columns):
                raise TranslationError.at_node(
                    f"'{alias}' has {len(columns)} columns but {len(column_aliases)} column aliases", node
                )
            columns = tuple(column_aliases)
        variables = [self.fresh_variable(c) for c in columns]
        block.scope.add(Source(alias, tuple(columns), variables), node)
        block.body.append(Atom(relation, tuple(variables), call_args=call_args))

    def resolve_table(self, name: str, env: dict[str, str], node: exp.Expression) -> tuple[str, tuple[str, ...]]:
        if name in env:
            relation = env[name]
            return relation, self.program.relations[relation].columns
        columns = self.catalog.table_columns(name)
        if columns is not None:
            return name, tuple(columns)
        view = self.catalog.view_query(name)
        if view is not None:
            relation = self.translate_view(name, view, node)
            return relation, self.program.relations[relation].columns
        raise TranslationError.at_node(f"table or view '{name}' not found", node)

    def table_version(self, name: str, version: exp.Version, env: dict[str, str]) -> str:
        """`t VERSION AS OF 3` / `t TIMESTAMP AS OF '...'`: the relation the catalog names that version by."""
        kind = str(version.this).upper()
        value = version.expression
        if isinstance(value, exp.Cast) and isinstance(value.this, exp.Literal):  # TIMESTAMP '...'
            value = value.this
        if name in env or not isinstance(value, exp.Literal) or kind not in ("VERSION", "TIMESTAMP"):
            raise UnsupportedError.at_node(f"{kind} AS OF takes a table and a literal version or timestamp", version)
        if kind == "VERSION" and not (value.is_int and int(value.name) >= 0):
            raise TranslationError.at_node(f"VERSION AS OF takes a version number, not {value.sql()}", version)
        return self.catalog.versioned(name, kind, int(value.name) if kind == "VERSION" else value.name)

    def translate_view(self, name: str, query: exp.Expression, node: exp.Expression) -> str:
        if name in self.views:
            return self.views[name]
        if name in self.views_in_progress:
            raise TranslationError.at_node(f"view '{name}' is defined in terms of itself", node)
        self.views_in_progress.append(name)
        try:
            relation = self.translate_query(query, {}, None, name_hint=name)
        except TranslationError as error:
            raise type(error).at_node(f"in view '{name}': {error.message}", node) from None
        finally:
            self.views_in_progress.pop()
        self.views[name] = relation
        return relation

    def expand_stars(self, select: exp.Select, block: Block) -> list[tuple[str, exp.Expression]]:
        """(output name, SQL expression) per select item, `*` and `alias.*` expanded to qualified columns."""
        items: list[tuple[str, exp.Expression]] = []
        for i, expression in enumerate(select.expressions):
            if isinstance(expression, exp.Star) or (isinstance(expression, exp.Column) and expression.is_star):
                qualifier = expression.table if isinstance(expression, exp.Column) else None
                items.extend(
                    (name, exp.column(name, table=alias, quoted=True))
                    for alias, name in block.scope.star(qualifier, expression)
                )
            else:
                items.append((output_name(expression, i), expression.unalias()))
        return items

    # ------------------------------------------------------------------ conditions

    def translate_conjuncts(self, conjuncts: list[exp.Expression], block: Block, env: dict[str, str]) -> None:
        for conjunct in conjuncts:
            if self.try_unify(conjunct, block) or self.try_subquery_predicate(conjunct, block, env):
                continue
            if block.scope.parent is not None and self.try_correlation(conjunct, block, env):
                continue
            block.body.append(Condition(self.translate_expression(conjunct, block, env)))

    def try_unify(self, conjunct: exp.Expression, block: Block) -> bool:
        """`a.x = b.y` between columns of this block joins by sharing one variable."""
        if not (isinstance(conjunct, exp.EQ) and isinstance(conjunct.this, exp.Column)
                and isinstance(conjunct.expression, exp.Column)):
            return False
        left, left_depth = block.scope.resolve(conjunct.this)
        right, right_depth = block.scope.resolve(conjunct.expression)
        if left_depth or right_depth or {left, right} & block.optional:
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

    def try_correlation(self, conjunct: exp.Expression, block: Block, env: dict[str, str]) -> bool:
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
            raise UnsupportedError.at_node("subqueries correlated across two levels are not supported", conjunct)
        block.outer_conditions.append(self.translate_expression(conjunct, block, env, correlated=True))
        return True

    def try_subquery_predicate(self, conjunct: exp.Expression, block: Block, env: dict[str, str]) -> bool:
        """[NOT] EXISTS (subquery) and x [NOT] IN (subquery) as semi- and anti-joins."""
        negated = isinstance(conjunct, exp.Not)
        node = conjunct.this if negated else conjunct
        if isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Exists):
            query, probe = node.this, None
        elif isinstance(node, exp.In) and node.args.get("query") is not None:
            query, probe = node.args["query"], node.this
        else:
            return False
        query = query.this if isinstance(query, exp.Subquery) else query
        correlations = Correlation()
        if probe is None and isinstance(query, exp.Select):
            query = query.copy()
            query.set("expressions", [exp.alias_(exp.Literal.number(1), "one")])
        relation = self.translate_query(query, env, block.scope, "exists_sub" if probe is None else "in_sub", correlations)
        relation_info = self.program.relations[relation]
        semi = bool(correlations.conditions) and not negated
        if not (negated or semi):  # joined: one fact per match, so that no outer row is repeated
            self.program.relations[relation] = replace(relation_info, distinct=True)
        width = len(relation_info.columns) - correlations.width
        if probe is not None and width != 1:
            raise TranslationError.at_node(f"the subquery of IN must select one column, not {width}", query)
        args: list[str] = []
        conditions = []
        if probe is not None and negated:
            # x NOT IN (...) holds only when no member equals x, is NULL, or meets a NULL x (SQL's three values)
            probe_variable, member = self.bind_expression(probe, block, env), self.fresh_variable("member")
            conditions.append(exp.or_(
                exp.EQ(this=var(member), expression=var(probe_variable)),
                exp.Is(this=var(member), expression=exp.Null()),
                exp.Is(this=var(probe_variable), expression=exp.Null()),
            ))
            args.append(member)
        elif probe is not None:
            args.append(self.bind_expression(probe, block, env))
        elif width:
            args.append(WILDCARD if negated or correlations.inner else self.fresh_variable("one"))
        args.extend(self.bind_expression(outer_column, block, env) for outer_column in correlations.outer)
        if correlations.conditions:
            local = {inner: self.fresh_variable(inner) for inner in correlations.inner}
            args.extend(local.values())
            conditions.extend(renamed(condition, local) for condition in correlations.conditions)
        on = exp.and_(*conditions) if conditions else None
        block.body.append(Atom(relation, tuple(args), negated=negated, semi=semi, on=on))
        return True

    def bind_expression(self, expression: exp.Expression, block: Block, env: dict[str, str]) -> str:
        """A variable holding `expression`: the column's own variable, or a new assigned one."""
        translated = self.translate_expression(expression, block, env)
        if isinstance(translated, exp.Column):
            return translated.name
        variable = self.fresh_variable("e")
        block.body.append(Assignment(variable, translated))
        return variable

    # ------------------------------------------------------------------ expressions

    def translate_expression(
        self, expression: exp.Expression, block: Block, env: dict[str, str], correlated: bool = False
    ) -> exp.Expression:
        """Replace column references by variables and scalar subqueries by joined auxiliary relations.
        `correlated`: references to the enclosing query's columns become its variables."""

        def rewrite(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Placeholder):
                raise TranslationError.at_node("a query parameter (?) has no value bound", node)
            if isinstance(node, (exp.Exists, exp.In)) and (isinstance(node, exp.Exists) or node.args.get("query")):
                raise UnsupportedError.at_node(
                    "EXISTS / IN with a subquery are supported only as conditions joined by AND in WHERE", node
                )
            if isinstance(node, exp.Subquery):
                return var(self.scalar_subquery(node, block, env))
            if isinstance(node, exp.Column) and not node.is_star:
                variable, depth = block.scope.resolve(node)
                if depth and not (correlated and depth == 1):
                    raise UnsupportedError.at_node(
                        f"correlated reference '{node.sql()}' is supported only in equalities in WHERE", node
                    )
                return var(variable)
            return node

        return expression.copy().transform(rewrite, copy=False)

    def scalar_subquery(self, subquery: exp.Subquery, block: Block, env: dict[str, str]) -> str:
        """A scalar subquery as an outer join: NULL when it returns no row (for its correlation values)."""
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
        block.body.append(Atom(relation, (value, *keys), optional=True, on=on))
        return value

    # ------------------------------------------------------------------ GROUP BY

    def translate_aggregation(
        self, select: exp.Select, items: list[tuple[str, exp.Expression]], block: Block, env: dict[str, str]
    ) -> tuple[Block, list[exp.Expression], list[exp.Expression]]:
        """Emit the grouping rule. Returns the block reading its result, with the select list's terms and
        the HAVING conditions over that block (both already translated)."""
        group = select.args.get("group")
        group_exprs = [self.group_expression(g, items) for g in (group.expressions if group else [])]
        group_terms = [self.translate_expression(g, block, env) for g in group_exprs]
        having = select.args.get("having")
        having_conjuncts = split_conjuncts(having.this) if having is not None else []
        aggregate_calls: dict[str, exp.Expression] = {}
        for node in [e for _, e in items] + having_conjuncts:
            for call in outermost_aggregates(node):
                for inner in call.find_all(exp.AggFunc):
                    if inner is not call:
                        raise TranslationError.at_node("aggregate calls cannot be nested", inner)
                aggregate_calls.setdefault(call.sql(), self.translate_expression(call, block, env))

        direct = self.direct_aggregation_terms(items, group_terms, block, env)
        if direct is not None and not having_conjuncts and not block.correlations:
            relation = self.new_relation("agg", tuple(name for name, _ in items))
            self.add_rule(block.rule(relation, direct), select)
            variables = [self.fresh_variable(name) for name, _ in items]
            aggregated = Block(Scope(parent=block.scope.parent), [Atom(relation, tuple(variables))])
            return aggregated, [var(v) for v in variables], []

        # correlation columns of a correlated subquery are grouping keys too
        correlation_terms = [inner for inner, _ in block.correlations]
        keys = group_terms + correlation_terms
        relation = self.new_relation(
            "agg", tuple([f"g{i}" for i in range(len(keys))] + [f"a{i}" for i in range(len(aggregate_calls))])
        )
        self.add_rule(block.rule(relation, keys + list(aggregate_calls.values())), select)
        key_vars = [self.fresh_variable(f"g_{i}") for i in range(len(keys))]
        call_vars = [self.fresh_variable(f"agg_{i}") for i in range(len(aggregate_calls))]
        aggregated = Block(Scope(parent=block.scope.parent), [Atom(relation, tuple(key_vars + call_vars))])
        aggregated.correlations = [
            (var(v), outer) for v, (_, outer) in zip(key_vars[len(group_terms):], block.correlations)
        ]
        replacements = {term.sql(): v for term, v in zip(group_terms, key_vars)}
        replacements.update(zip(aggregate_calls, call_vars))

        def post(expression: exp.Expression) -> exp.Expression:
            """An expression over the grouped rows, rewritten over the grouping rule's output."""
            expression = expression.copy()
            calls = {id(c) for c in outermost_aggregates(expression)}

            def swap(node: exp.Expression) -> exp.Expression:
                if id(node) in calls:
                    return var(replacements[node.sql()])
                if isinstance(node, exp.Subquery):
                    return var(self.scalar_subquery(node, aggregated, env))
                if isinstance(node, exp.Literal) or node.find(exp.AggFunc) or node.find(exp.Subquery):
                    return node
                if node.find(exp.Column):
                    translated = self.translate_expression(node, block, env)
                    if translated.sql() in replacements:
                        return var(replacements[translated.sql()])
                if isinstance(node, exp.Column):
                    raise TranslationError.at_node(
                        f"column '{node.sql()}' must appear in GROUP BY or be used in an aggregate function", node
                    )
                return node

            return expression.transform(swap, copy=False)

        return aggregated, [post(e) for _, e in items], [post(c) for c in having_conjuncts]

    def direct_aggregation_terms(
        self, items: list[tuple[str, exp.Expression]], group_terms: list[exp.Expression], block: Block, env: dict
    ) -> list[exp.Expression] | None:
        """When each select item is a group key or an aggregate call, and each key is selected, the grouping
        rule can produce the answer directly: `q(k, sum<x>) :- ...`."""
        group_sql = {term.sql() for term in group_terms}
        terms, keys_seen = [], set()
        for _, expression in items:
            translated = self.translate_expression(expression, block, env)
            if isinstance(translated, exp.AggFunc) and len(outermost_aggregates(translated)) == 1:
                terms.append(translated)
            elif translated.sql() in group_sql:
                terms.append(translated)
                keys_seen.add(translated.sql())
            else:
                return None
        return terms if keys_seen == group_sql else None

    def group_expression(self, node: exp.Expression, items: list[tuple[str, exp.Expression]]) -> exp.Expression:
        """GROUP BY 2 and GROUP BY alias refer to select items."""
        if isinstance(node, exp.Literal) and node.is_int:
            position = int(node.this)
            if not 1 <= position <= len(items):
                raise TranslationError.at_node(f"GROUP BY position {position} is out of range", node)
            return items[position - 1][1]
        return node

    # ------------------------------------------------------------------ ORDER BY / LIMIT

    def _hidden_order_columns(self, query: exp.Expression, order: exp.Order | None) -> list[exp.Expression]:
        """ORDER BY expressions that are not output columns become hidden trailing columns."""
        if order is None or not isinstance(query, exp.Select):
            return []
        names = [output_name(e, i).lower() for i, e in enumerate(query.expressions)]
        selected = {e.unalias().sql() for e in query.expressions}
        hidden = []
        for ordered in order.expressions:
            key = ordered.this
            if isinstance(key, exp.Literal) and key.is_int:
                continue
            if isinstance(key, exp.Column) and not key.table and key.name.lower() in names:
                continue
            if key.sql() in selected or any(isinstance(e, exp.Star) for e in query.expressions):
                continue
            if query.args.get("distinct"):
                raise TranslationError.at_node("with SELECT DISTINCT, ORDER BY expressions must appear in the select list", key)
            hidden.append(key)
        for i, key in enumerate(hidden):
            query.append("expressions", exp.alias_(key.copy(), f"__order{i}"))
        return hidden

    def _sort_keys(self, query: exp.Expression, order: exp.Order, hidden: list[exp.Expression]) -> tuple[SortKey, ...]:
        columns = [c.lower() for c in self.program.relations[self.program.output].columns]
        visible = len(columns) - len(hidden)
        select = query if isinstance(query, exp.Select) else None
        selected = [e.unalias().sql() for e in select.expressions] if select is not None else []
        keys = []
        hidden_sql = [h.sql() for h in hidden]
        for ordered in order.expressions:
            key = ordered.this
            if isinstance(key, exp.Literal) and key.is_int:
                position = int(key.this) - 1
                if not 0 <= position < visible:
                    raise TranslationError.at_node(f"ORDER BY position {position + 1} is out of range", key)
            elif isinstance(key, exp.Column) and not key.table and key.name.lower() in columns[:visible]:
                position = columns.index(key.name.lower())
            elif key.sql() in hidden_sql:
                position = visible + hidden_sql.index(key.sql())
            elif key.sql() in selected:
                position = selected.index(key.sql())
            else:
                raise TranslationError.at_node(f"ORDER BY expression '{key.sql()}' is not an output column", key)
            nulls_first = ordered.args.get("nulls_first")
            keys.append(SortKey(position, bool(ordered.args.get("desc")), nulls_first))
        return tuple(keys)

    def _limit_value(self, limit: exp.Limit) -> int:
        value = limit.expression
        if not (isinstance(value, exp.Literal) and value.is_int):
            raise TranslationError.at_node("LIMIT takes a non-negative integer", value)
        return int(value.this)


# ---------------------------------------------------------------------- helpers


def flatten_union(node: exp.Expression) -> list[exp.Expression]:
    """The branches of a tree of UNIONs (parentheses around branches dropped)."""
    if isinstance(node, exp.Subquery) and not node.args.get("alias"):
        return flatten_union(node.this)
    if isinstance(node, exp.Union) and not node.args.get("order") and not node.args.get("limit") \
            and not node.args.get("with_"):
        return flatten_union(node.this) + flatten_union(node.expression)
    return [node]


def union_nodes(node: exp.Expression) -> list[exp.Union]:
    if isinstance(node, exp.Subquery):
        return union_nodes(node.this)
    if isinstance(node, exp.Union):
        return [node] + union_nodes(node.this) + union_nodes(node.expression)
    return []


def split_conjuncts(condition: exp.Expression) -> list[exp.Expression]:
    if isinstance(condition, exp.And):
        return split_conjuncts(condition.this) + split_conjuncts(condition.expression)
    if isinstance(condition, exp.Paren) and isinstance(condition.this, exp.And):
        return split_conjuncts(condition.this)
    return [condition]


def output_name(expression: exp.Expression, position: int) -> str:
    if isinstance(expression, exp.Alias):
        return expression.alias
    if isinstance(expression, exp.Column):
        return expression.name
    return expression.sql(dialect="spark")


def outermost_aggregates(expression: exp.Expression) -> list[exp.AggFunc]:
    """Aggregate calls not nested in another aggregate or in a subquery."""
    found = []

    def visit(node: exp.Expression) -> None:
        if isinstance(node, exp.Subquery):
            return
        if isinstance(node, exp.AggFunc):
            found.append(node)
            return
        for child in node.iter_expressions():
            visit(child)

    visit(expression)
    return found


def column_depth(scope: Scope, column: exp.Column) -> int:
    return scope.resolve(column)[1]


def in_subquery(node: exp.Expression, root: exp.Expression) -> bool:
    parent = node.parent
    while parent is not None and parent is not root:
        if isinstance(parent, exp.Subquery):
            return True
        parent = parent.parent
    return False


__all__ = ["translate", "SchemaProvider", "Translator"]
