"""What every part of the translator shares: the catalog it reads and the program it builds.

`TranslatorCore` holds the translation's state (the catalog, the Program being built, the variable names
taken, the views already translated) and the bookkeeping every part uses on it: new relations, fresh
variables, rules checked against their head. The parts (queries, FROM, conditions, aggregation) are
mixins over this core, combined into `Translator` in translator/translate.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from sqlglot import exp

from translator.errors import TranslationError
from translator.ir import Program, Relation, Rule

if TYPE_CHECKING:
    from translator.block import Block, Correlation
    from translator.dialect import DatalogQuery
    from translator.scope import Scope

PATH_FORMATS = ("parquet", "csv", "json", "orc", "delta")  # `parquet.`/data/edges``: a path table


class SchemaProvider(Protocol):
    """What the translator needs to know of stored tables and views."""

    def path_table(self, format: str, path: str) -> str:
        """The relation name of the files at `path`, read as `format` (one of PATH_FORMATS)."""

    def table_columns(self, name: str) -> tuple[str, ...] | None: ...

    def view_query(self, name: str) -> exp.Expr | None: ...

    def versioned(self, name: str, kind: str, value: int | str) -> str:
        """The name of a table's version (kind VERSION: a number; TIMESTAMP: the version of that time)."""


def table_name(node: exp.Table, catalog: SchemaProvider) -> str:
    """The relation a table reference names: `t`, `db.t`, `catalog.db.t`, or a path table
    (parquet.`/data/edges`, whose path keeps its case)."""
    if node.db.lower() in PATH_FORMATS and node.this.quoted and not node.catalog:
        return catalog.path_table(node.db, node.name)
    return ".".join(part.name.lower() for part in node.parts)


def reference_name(table: exp.Table) -> str:
    """The name a table reference makes, as written (`t`, `db.t`), lower case."""
    return ".".join(part.name.lower() for part in table.parts)


def names_a_cte_in_scope(table: exp.Table, name: str) -> bool:
    """Whether a table reference is to a CTE in whose scope it is: in the body of a query whose WITH defines
    the name, or in a CTE of a recursive WITH that does (a non-recursive WITH's own CTEs may read tables of
    their names: left to the catalog)."""
    child: exp.Expr = table
    node = table.parent
    while node is not None:
        if (isinstance(node, exp.With) and node.args.get("recursive")) or (
            isinstance(node, exp.Query) and child is not node.args.get("with_")
        ):
            with_ = node if isinstance(node, exp.With) else node.args.get("with_")
            if with_ is not None and any(cte.alias_or_name.lower() == name for cte in with_.expressions):
                return True
        child, node = node, node.parent
    return False


class TranslatorCore:
    """The state of one translation and the relation, variable and rule bookkeeping over it."""

    def __init__(self, catalog: SchemaProvider) -> None:
        self.catalog = catalog
        self.program = Program()
        self.variable_names: set[str] = set()
        self.views: dict[str, str] = {}
        self.views_in_progress: list[str] = []
        self.table_names: set[str] = set()  # what the statement's table references name, in views' too
        self.cte_names: set[str] = set()
        self.unbound_names: set[str] = set()  # the names of references that may read a table (no CTE's)
        self.view_queries: dict[str, exp.Expr | None] = {}
        # recursive CTEs whose UNION or UNION ALL chose how their recursion iterates (see iterate_as_recursion)
        self.set_iterations: set[str] = set()
        self.recursing: set[str] = set()  # the recursive CTEs whose branches are being translated

    if TYPE_CHECKING:
        # What the mixins call of one another; each is defined by the mixin named in its comment.

        # fmt: off
        def translate_query(self, query: exp.Expr, env: dict[str, str], outer: Scope | None,  # queries
                            name_hint: str = "q", correlations: Correlation | None = None) -> str: ...
        # fmt: on

        def branch_columns(self, branch: exp.Expr, required: bool = True) -> tuple[str, ...] | None: ...  # queries

        @staticmethod
        def cte_column_list(cte: exp.CTE) -> tuple[str, ...] | None: ...  # queries

        def translate_from(self, select: exp.Select, env: dict[str, str], block: Block) -> list[exp.Expr]: ...  # from

        def resolve_table(self, name: str, env: dict[str, str], node: exp.Expr) -> tuple[str, tuple[str, ...]]: ...

        def table_version(self, name: str, version: exp.Version, env: dict[str, str]) -> str: ...  # from

        def translate_view(self, name: str, query: exp.Expr, node: exp.Expr) -> str: ...  # from

        def translate_datalog(self, query: DatalogQuery) -> str: ...  # datalog.embedded

        def translate_with(self, with_: exp.With | None, env: dict[str, str]) -> dict[str, str]: ...  # queries

        def or_opaque(  # opaque
            self, translate: Callable[[], str], query: exp.Expr, env: dict[str, str], name_hint: str
        ) -> str: ...

        def expand_stars(self, select: exp.Select, block: Block) -> list[tuple[str, exp.Expr]]: ...  # from

        def translate_conjuncts(self, conjuncts: list[exp.Expr], block: Block, env: dict[str, str]) -> None: ...

        @staticmethod
        def inner_variables(block: Block) -> list[str]: ...  # conditions

        def try_subquery_predicate(  # conditions
            self, conjunct: exp.Expr, block: Block, env: dict[str, str], name_hint: str | None = None
        ) -> bool: ...

        def translate_expression(  # conditions
            self, expression: exp.Expr, block: Block, env: dict[str, str], correlated: bool = False
        ) -> exp.Expr: ...

        def scalar_subquery(self, subquery: exp.Subquery, block: Block, env: dict[str, str]) -> exp.Expr: ...

        def translate_aggregation(  # aggregation
            self, select: exp.Select, items: list[tuple[str, exp.Expr]], block: Block, env: dict[str, str]
        ) -> tuple[Block, list[exp.Expr], list[exp.Expr]]: ...

    def saved_state(self) -> tuple[Any, ...]:
        """What a translation attempt changes, to give it up (restore_state) and translate otherwise."""
        return (
            dict(self.program.relations),
            list(self.program.rules),
            set(self.variable_names),
            dict(self.views),
            set(self.set_iterations),
            set(self.recursing),
        )

    def restore_state(self, saved: tuple[Any, ...]) -> None:
        relations, rules, variables, views, set_iterations, recursing = saved
        self.program.relations, self.program.rules = dict(relations), list(rules)
        self.variable_names, self.views = set(variables), dict(views)
        self.set_iterations, self.recursing = set(set_iterations), set(recursing)

    def reserve_names(self, query: exp.Expr) -> None:
        """Note every name a table reference of the query makes, through the views it reads, and the
        names of its CTEs: a derived relation must not take the name of a table the program reads, and
        knowing them up front spares asking the catalog of each new name (Spark's answers by a round trip)."""
        pending = [query]
        while pending:
            node = pending.pop()
            self.cte_names.update(cte.alias_or_name.lower() for cte in node.find_all(exp.CTE))
            for table in node.find_all(exp.Table):
                name = reference_name(table)
                if not names_a_cte_in_scope(table, name):
                    self.unbound_names.add(name)
                if name not in self.table_names:
                    self.table_names.add(name)
                    view = self.view_query(name)
                    if view is not None:
                        pending.append(view)

    def view_query(self, name: str) -> exp.Expr | None:
        """The query of the stored view `name` (None: no such view), parsed once per translation."""
        name = name.lower()
        if name not in self.view_queries:
            self.view_queries[name] = self.catalog.view_query(name)
        return self.view_queries[name]

    def new_relation(self, hint: str, columns: tuple[str, ...], **properties: Any) -> str:
        base = hint.lower()
        name, n = base, 1
        while name in self.program.relations or self._is_stored(name):
            n += 1
            name = f"{base}_{n}"
        self.program.relations[name] = Relation(name, columns, **properties)
        return name

    def label(self, relation: str, name: str) -> None:
        """Give `relation` the name the user wrote for it (a CTE's, a derived table's, a view's), which
        messages use; the relations made for other parts of a query (a subquery, a side of an EXCEPT) have none."""
        info = self.program.relations[relation]
        if not info.label:
            self.program.relations[relation] = replace(info, label=name)

    def _is_stored(self, name: str) -> bool:
        """Whether a name is taken by a table the program may read. A CTE's name may also be a stored
        table's that its own body reads (`WITH edge AS (SELECT ... FROM edge)`): the catalog says."""
        if name in self.cte_names:  # a table only where some reference of the name is not the CTE's
            return name in self.unbound_names and (
                self.catalog.table_columns(name) is not None or self.view_query(name) is not None
            )
        return name in self.table_names

    def fresh_variable(self, hint: str) -> str:
        base = "".join(ch for ch in hint.upper() if ch.isalnum() or ch == "_").lstrip("_0123456789") or "V"
        name, n = base, 0
        while name.lower() in self.variable_names:
            n += 1
            name = f"{base}{n}"
        self.variable_names.add(name.lower())
        return name

    def add_rule(self, rule: Rule, node: exp.Expr | None = None) -> None:
        relation = self.program.relations[rule.head]
        if len(rule.terms) != len(relation.columns):
            raise TranslationError.at_node(
                f"{relation.display_name} has {len(relation.columns)} columns but a branch of it "
                f"selects {len(rule.terms)}",
                node,
            )
        self.program.rules.append(rule)
