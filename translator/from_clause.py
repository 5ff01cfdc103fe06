"""FROM items and joins: the atoms of a SELECT block's body and the names its columns resolve to.

Each FROM item (a stored table or one of its versions, a CTE, a view, a derived table, a table-valued
function) becomes an atom with a fresh variable per column, registered in the block's scope; inner join
conditions come back as conjuncts for WHERE's treatment, LEFT JOINs make their atom optional.

Contributes: translate_from, add_source, make_optional, resolve_table, table_version, translate_view,
expand_stars.
Needs from the other parts: translate_query (QueriesMixin) for derived tables and views,
translate_expression (ConditionsMixin) for a LEFT JOIN's ON condition.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from translator.block import Block
from translator.core import TranslatorCore, table_name
from translator.errors import TranslationError, UnsupportedError
from translator.ir import Atom
from translator.scope import Source
from translator.sql_helpers import output_name, split_conjuncts

TABLE_FUNCTIONS = {"range": ("id",)}


class FromMixin(TranslatorCore):
    """FROM items and joins as the atoms of a block."""

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
        view = self.view_query(name)
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
