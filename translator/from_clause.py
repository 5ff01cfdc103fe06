"""FROM items and joins: the atoms of a SELECT block's body and the names its columns resolve to.

Each FROM item (a stored table or one of its versions, a CTE, a view, a derived table, a table-valued
function) becomes an atom with a fresh variable per column, registered in the block's scope; inner join
conditions (ON, or USING's equalities) come back as conjuncts for WHERE's treatment, LEFT JOINs make their
atom optional, SEMI and ANTI JOINs are the EXISTS and NOT EXISTS of their right side.

Contributes: translate_from, translate_join, filter_join, add_source, make_optional, resolve_table,
table_version, translate_view, expand_stars.
Needs from the other parts: translate_query (QueriesMixin) for derived tables and views,
translate_expression (ConditionsMixin) for a LEFT JOIN's condition, try_subquery_predicate
(ConditionsMixin) for SEMI and ANTI JOINs.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from translator.block import Block
from translator.core import TranslatorCore, table_name
from translator.errors import TranslationError, UnsupportedError
from translator.ir import Atom, Iteration
from translator.scope import Source
from translator.sql_helpers import output_name, split_conjuncts

TABLE_FUNCTIONS: dict[str, tuple[str, ...]] = {"range": ("id",)}


def function_name(function: exp.Func) -> str:
    """The name of a table-valued function called in FROM."""
    return (function.name if isinstance(function, exp.Anonymous) else function.sql_name()).lower()


class FromMixin(TranslatorCore):
    """FROM items and joins as the atoms of a block."""

    def translate_from(self, select: exp.Select, env: dict[str, str], block: Block) -> list[exp.Expr]:
        """Add an atom per FROM item; returns the inner joins' conditions as conjuncts."""
        conjuncts: list[exp.Expr] = []
        from_ = select.args.get("from_")
        if from_ is None:
            if select.args.get("joins"):
                raise TranslationError.at_node("JOIN without FROM", select)
            return conjuncts
        self.add_source(from_.this, env, block)
        for join in select.args.get("joins") or []:
            conjuncts.extend(self.translate_join(join, env, block))
        return conjuncts

    def translate_join(self, join: exp.Join, env: dict[str, str], block: Block) -> list[exp.Expr]:
        """One JOIN: an inner join's condition comes back as conjuncts, a LEFT JOIN's atom becomes optional,
        a SEMI or ANTI JOIN filters the rows joined so far."""
        side = (join.args.get("side") or "").upper()
        kind = (join.args.get("kind") or "").upper()
        if side not in ("", "LEFT") or join.args.get("method"):
            words = " ".join(word for word in (join.args.get("method"), side, kind) if word).upper()
            raise UnsupportedError.at_node(f"{words} JOIN is not supported", join)
        if kind in ("SEMI", "ANTI"):
            self.filter_join(join, kind, block, env)
            return []
        self.add_source(join.this, env, block)
        using = join.args.get("using")
        condition = exp.and_(*block.scope.join_using(using)) if using else join.args.get("on")
        if side == "LEFT":
            self.make_optional(join, condition, block, env)
            return []
        return split_conjuncts(condition) if condition is not None else []

    def filter_join(self, join: exp.Join, kind: str, block: Block, env: dict[str, str]) -> None:
        """[LEFT] SEMI / ANTI JOIN: EXISTS / NOT EXISTS of the right side under the ON condition, so it keeps
        or drops rows of the left side, never repeats one, and adds no column."""
        if join.args.get("using"):
            raise UnsupportedError.at_node(f"{kind} JOIN ... USING is not supported; use ON", join)
        on = join.args.get("on")
        if on is None:
            raise TranslationError.at_node(f"{kind} JOIN needs an ON condition", join)
        query = exp.select(exp.Literal.number(1)).from_(join.this.copy()).where(on.copy())
        predicate = exp.Not(this=exp.Exists(this=query)) if kind == "ANTI" else exp.Exists(this=query)
        self.try_subquery_predicate(predicate, block, env, name_hint=f"{kind.lower()}_join")

    def make_optional(self, join: exp.Join, condition: exp.Expr | None, block: Block, env: dict[str, str]) -> None:
        """LEFT JOIN: the atom just added becomes optional, its ON (or USING) condition the condition of the
        outer join."""
        if condition is None:
            raise TranslationError.at_node("LEFT JOIN needs an ON or USING condition", join)
        if condition.find(exp.Subquery):
            raise UnsupportedError.at_node("subqueries in a LEFT JOIN's ON condition are not supported", condition)
        atom = block.body.pop()
        assert isinstance(atom, Atom)  # the joined table's, add_source's last
        block.optional |= atom.variables()
        block.body.append(replace(atom, optional=True, on=self.translate_expression(condition, block, env)))

    def add_source(self, node: exp.Expr, env: dict[str, str], block: Block) -> None:
        pivots = node.args.get("pivots")
        if pivots:  # a FROM item's own PIVOT / UNPIVOT
            kind = "UNPIVOT" if pivots[0].args.get("unpivot") else "PIVOT"
            raise UnsupportedError.at_node(f"{kind} is not supported", pivots[0])
        alias_node = node.args.get("alias")
        alias = alias_node.name.lower() if alias_node is not None and alias_node.name else None
        column_aliases = [c.name for c in alias_node.columns] if alias_node is not None and alias_node.columns else None
        call_args: tuple[exp.Expr, ...] = ()
        recurring = False
        if isinstance(node, exp.Table) and isinstance(node.this, (exp.Anonymous, exp.Func)):
            function = node.this
            fname = function_name(function)
            if fname not in TABLE_FUNCTIONS:
                raise UnsupportedError.at_node(f"unknown table-valued function '{fname}'", node)
            relation, columns = fname, TABLE_FUNCTIONS[fname]
            call_args = tuple(function.expressions)
            alias = alias or fname
        elif isinstance(node, exp.Table) and self.recurring(node, env):
            relation = env[node.name.lower()]
            columns, recurring = self.program.relations[relation].columns, True
            alias = alias or node.name.lower()
        elif isinstance(node, exp.Table):
            name = table_name(node, self.catalog)
            version = node.args.get("version")
            if version is not None:
                relation, columns = self.resolve_table(self.table_version(name, version, env), {}, node)
            else:
                relation, columns = self.resolve_table(name, env, node)
            alias = alias or name
        elif isinstance(node, (exp.Subquery, exp.Values)):
            inner = node.this if isinstance(node, exp.Subquery) else node
            relation = self.translate_query(inner, env, None, name_hint=alias or "derived")
            if alias:
                self.label(relation, alias)
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
        block.scope.add(Source(alias, tuple(columns), variables, relation, call_args), node)
        block.body.append(Atom(relation, tuple(variables), call_args=call_args, recurring=recurring))

    def resolve_table(self, name: str, env: dict[str, str], node: exp.Expr) -> tuple[str, tuple[str, ...]]:
        if name in env:
            relation = env[name]
            return relation, self.program.relations[relation].columns
        columns = self.catalog.table_columns(name)
        if columns is not None:
            return name, tuple(columns)
        view = self.view_query(name)
        if view is not None:
            relation = self.translate_view(name, view, node)
            return relation, self.program.relations[relation].columns
        raise TranslationError.at_node(f"table or view '{name}' not found", node)

    def recurring(self, table: exp.Table, env: dict[str, str]) -> bool:
        """Whether a table reference is DuckDB's `recurring.t`: every row a USING KEY recursion `t` whose
        branches are being translated knows so far (`t` alone: the last round's rows)."""
        name = table.name.lower()
        if table.db.lower() != "recurring" or table.catalog or name not in env:
            return False
        relation = self.program.relations[env[name]]
        if relation.iteration is not Iteration.KEYED or env[name] not in self.recursing:
            raise TranslationError.at_node(
                f"'recurring.{name}' reads a USING KEY recursive CTE within its own recursive branches only", table
            )
        return True

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

    def translate_view(self, name: str, query: exp.Expr, node: exp.Expr) -> str:
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
        self.label(relation, name)
        self.views[name] = relation
        return relation

    def expand_stars(self, select: exp.Select, block: Block) -> list[tuple[str, exp.Expr]]:
        """(output name, SQL expression) per select item, `*` and `alias.*` expanded to qualified columns."""
        items: list[tuple[str, exp.Expr]] = []
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
