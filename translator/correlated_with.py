"""A WITH inside a correlated subquery, whose queries read columns of the query around it (PostgreSQL
answers `SELECT a, (WITH RECURSIVE r(n) AS (SELECT e.a UNION SELECT n + 1 FROM r WHERE n < 5) SELECT
max(n) FROM r) FROM e` row by row).

The CTEs are computed once for all the outer values they read: each CTE that reads outer columns, or
reads such a CTE, gets those values as leading columns. A branch whose FROM item is such a CTE takes the
values from it, any other branch from the domain of outer values (every combination of the distinct values
of the outer FROM items they come from); the other such CTEs a branch reads are joined at the same values
(in the ON condition of an outer, semi- or anti-join), and the outer columns in the branch become them. The
subquery's own query then reads each such CTE where its values equal the outer row's: a correlation by
equalities like any other. An outer value that is NULL finds no rows there (the equality is not true),
where a query run row by row would compute the CTEs with a NULL.

A column of a WITH's query is the outer query's when no FROM item of a query around it inside the WITH has
it (qualified: has its alias), as SQL resolves names from the innermost query out. A subquery whose own
query is a set operation reading outer columns (in its WITH or its branches) is first made the SELECT of a
CTE holding that set operation.

Needs from the other parts: resolve_table (FromMixin), branch_columns and cte_column_list (QueriesMixin),
to know the columns of a FROM item inside the WITH before translating it.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from translator.core import TranslatorCore, table_name
from translator.errors import NotInSpark, TranslationError, UnsupportedError
from translator.from_clause import TABLE_FUNCTIONS, function_name
from translator.ir import Atom, Rule, reachable, var
from translator.scope import Scope
from translator.sql_helpers import HOLDER, outermost_aggregates, select_from_holder, split_conjuncts, union_branches

DOMAIN = "__outer_values"  # the outer values, as the CTEs read them

OuterColumn = tuple[str, str]  # (alias of an outer FROM item, column)
Reference = tuple[exp.Column, OuterColumn]  # a column of a WITH's query and the outer column it names
NamesOf = dict[int, set[str] | None]  # the column names of FROM items (by id), found once per WITH


class CorrelatedWithMixin(TranslatorCore):
    def parameterized_with(
        self, select: exp.Select, outer: Scope, env: dict[str, str]
    ) -> tuple[exp.Select, dict[str, str]]:
        """`select` with its WITH's CTEs carrying the outer values they read, and the names its
        translation reads (the domain of those values added); as it is when they read none."""
        select = select.copy()
        with_ = select.args["with_"]
        references = self.outer_references(with_, outer, env)
        if not references:
            return select, env
        keys = list(dict.fromkeys(key for _, key in references))
        columns = {id(column): key for column, key in references}
        carrying = carrying_ctes(with_, set(columns))
        labelled = self.reads_recursion({alias for alias, _ in keys}, outer)
        domain_read = False
        for cte in with_.expressions:
            if cte.alias_or_name.lower() in carrying:
                domain_read |= carry_values(cte, keys, carrying, columns, labelled)
        correlate(select, keys, carrying)
        if not domain_read:
            return select, env
        return select, {**env, DOMAIN: self.outer_domain(keys, outer, references[0][0])}

    def reads_recursion(self, aliases: set[str], outer: Scope) -> bool:
        """Whether an outer FROM item of `aliases` reads a recursive CTE whose branches are being
        translated: a domain of its values would be computed inside that recursion, which could then not
        negate or aggregate the CTEs reading it (NOT EXISTS, a scalar count(*))."""
        reads: dict[str, set[str]] = {}
        for rule in self.program.rules:
            reads.setdefault(rule.head, set()).update(atom.relation for atom in rule.atoms)
        relations = {outer.named(alias).relation for alias in aliases}
        return any(relation in self.recursing or reachable(relation, reads) & self.recursing for relation in relations)

    def correlated_set_operation(self, query: exp.SetOperation, outer: Scope, env: dict[str, str]) -> exp.Select | None:
        """A subquery's set operation that reads the outer query's columns (in its branches or its WITH) as
        the SELECT of a CTE holding it (`SELECT c0 AS name, ... FROM __subquery`), whose WITH
        parameterized_with then carries them through; None when it reads none."""
        names = self.branch_columns(query, required=False)
        positions = [f"c{i}" for i in range(len(names or ()))]
        select = select_from_holder(
            query,
            [
                exp.alias_(exp.column(position, table=HOLDER), name, quoted=True)
                for position, name in zip(positions, names or ())
            ],
            positions,
        )
        if not self.outer_references(select.args["with_"], outer, env):
            return None
        if names is None:
            raise UnsupportedError.at_node(
                "a set operation reading columns of the outer query lists its columns, not *", query
            )
        return select

    def outer_references(self, with_: exp.With, outer: Scope, env: dict[str, str]) -> list[Reference]:
        """The columns of a WITH's queries that name a column of the enclosing query: that no FROM item of
        a query around them inside the WITH has, and the enclosing query's scope knows."""
        ctes = {cte.alias_or_name.lower(): cte for cte in with_.find_all(exp.CTE)}
        names: NamesOf = {}
        references = []
        for column in with_.find_all(exp.Column):
            if column.is_star or self.named_inside(column, with_, ctes, env, names):
                continue
            source = outer.owner(column)
            if source is not None:
                references.append((column, (source.alias, column.name.lower())))
        return references

    def named_inside(
        self, column: exp.Column, with_: exp.With, ctes: dict[str, exp.CTE], env: dict[str, str], names: NamesOf
    ) -> bool:
        """Whether a FROM item of a query around `column` inside `with_` has it (its alias, when qualified);
        a FROM item whose columns only its translation knows (a `SELECT *`) is taken to have it. A CTE's
        query does not see the FROM items of the query its WITH belongs to."""
        child: exp.Expr
        child, node = column, column.parent
        while node is not None and node is not with_:
            if isinstance(node, exp.Select) and child is not node.args.get("with_"):
                for item, _ in from_items(node):
                    if column.table and item_alias(item) == column.table.lower():
                        return True
                    if not column.table:
                        if id(item) not in names:
                            names[id(item)] = self.item_columns(item, ctes, env)
                        known = names[id(item)]
                        if known is None or column.name.lower() in known:
                            return True
            child, node = node, node.parent
        return False

    def item_columns(self, item: exp.Expr, ctes: dict[str, exp.CTE], env: dict[str, str]) -> set[str] | None:
        """The column names of a FROM item inside a WITH, before it is translated (None: unknown)."""
        alias = item.args.get("alias")
        columns: Sequence[str] | None
        if alias is not None and alias.columns:
            columns = [column.name for column in alias.columns]
        elif isinstance(item, exp.Table) and isinstance(item.this, (exp.Anonymous, exp.Func)):
            columns = list(TABLE_FUNCTIONS.get(function_name(item.this), ()))
        elif isinstance(item, exp.Table) and not item.db and item.name.lower() in ctes:
            cte = ctes[item.name.lower()]
            columns = self.cte_column_list(cte) or self.branch_columns(cte.this, required=False)
        elif isinstance(item, exp.Table):
            try:
                columns = self.resolve_table(table_name(item, self.catalog), env, item)[1]
            except TranslationError:
                return None
        elif isinstance(item, exp.Subquery):
            columns = self.branch_columns(item.this, required=False)
        else:
            return None
        return None if columns is None else {column.lower() for column in columns}

    def outer_domain(self, keys: list[OuterColumn], outer: Scope, node: exp.Expr) -> str:
        """A relation of every combination of the distinct values of the outer columns `keys`."""
        body: list[Atom] = []
        variables: dict[OuterColumn, str] = {}
        for alias in dict.fromkeys(alias for alias, _ in keys):
            source = outer.named(alias)
            names = [self.fresh_variable(column) for column in source.columns]
            body.append(Atom(source.relation, tuple(names), call_args=source.call_args))
            variables |= {(alias, column.lower()): name for column, name in zip(source.columns, names)}
        relation = self.new_relation(
            "outer_values",
            tuple(parameter(i) for i in range(len(keys))),
            distinct=True,
            outer_columns=", ".join(f"{alias}.{column}" for alias, column in keys),
        )
        self.add_rule(Rule(relation, tuple(var(variables[key]) for key in keys), tuple(body)), node)
        return relation


def parameter(position: int) -> str:
    return f"__outer_{position}"


def item_alias(item: exp.Expr) -> str:
    """The name a FROM item's columns are qualified by."""
    alias: exp.TableAlias | None = item.args.get("alias")
    if alias is not None and alias.name:
        return alias.name.lower()
    if isinstance(item, exp.Table) and isinstance(item.this, (exp.Anonymous, exp.Func)):
        return function_name(item.this)
    return item.name.lower()


def from_items(select: exp.Select) -> list[tuple[exp.Expr, exp.Join | None]]:
    """The FROM items of `select` (not of its subqueries), each with its JOIN (None for the FROM clause's)."""
    from_ = select.args.get("from_")
    items = [(from_.this, None)] if from_ is not None else []
    return items + [(join.this, join) for join in select.args.get("joins") or ()]


def carrying_ctes(with_: exp.With, references: set[int]) -> set[str]:
    """The CTEs that read outer columns, or read a CTE that does (directly or not)."""
    reading = {cte.alias_or_name.lower(): cte for cte in with_.expressions}
    carrying = {
        name for name, cte in reading.items() if any(id(column) in references for column in cte.find_all(exp.Column))
    }
    while True:
        more = {
            name
            for name, cte in reading.items()
            if name not in carrying and any(table.name.lower() in carrying for table in cte.find_all(exp.Table))
        }
        if not more:
            return carrying
        carrying |= more


def carrying_reads(select: exp.Select, names: set[str]) -> list[tuple[exp.Table, exp.Join | None]]:
    """The FROM items of `select` (not of its subqueries) that read one of `names`, with their JOIN."""
    return [
        (item, join) for item, join in from_items(select) if isinstance(item, exp.Table) and item.name.lower() in names
    ]


def refuse_other_reads(select: exp.Select, names: set[str], star: bool) -> None:
    """A CTE carrying outer values read elsewhere than in a FROM item (in a nested subquery), or a `*`
    where the values are columns (`star`), would see them unrestricted to the outer row's."""
    reads = [item for item, _ in carrying_reads(select, names)]
    for node in select.walk(prune=lambda node: isinstance(node, exp.With)):
        if isinstance(node, exp.Table) and node.name.lower() in names and not any(node is read for read in reads):
            raise NotInSpark.at_node(
                f"'{node.name}' reads columns of the outer query: read it in the FROM clause of a query of its WITH",
                node,
            )
    if star and any(item.is_star for item in select.expressions):
        raise NotInSpark.at_node(
            "a query of a WITH reading columns of the outer query lists its columns, not *", select
        )


def refuse_unrestricted_rows(branch: exp.Select, references: list[exp.Column]) -> None:
    """Forms of a CTE's query whose rows would not be those of each outer row apart: a LIMIT over all
    of them, an aggregate without GROUP BY (one row over all, where each outer row has its own, even over
    no rows), an outer column inside a derived table (which no outer value reaches)."""
    if branch.args.get("limit") or branch.args.get("offset"):
        raise NotInSpark.at_node("LIMIT / OFFSET in a CTE reading columns of the outer query are not supported", branch)
    aggregating = branch.args.get("having") or any(outermost_aggregates(item) for item in branch.expressions)
    if aggregating and branch.args.get("group") is None:
        raise NotInSpark.at_node(
            "a CTE reading columns of the outer query aggregates only with GROUP BY; "
            "aggregate in the subquery's own query",
            branch,
        )
    for column in references:
        derived = next(
            (
                node
                for node in ancestors(column, branch)
                if isinstance(node, exp.Subquery) and isinstance(node.parent, (exp.From, exp.Join))
            ),
            None,
        )
        if derived is not None:
            raise NotInSpark.at_node(
                f"a derived table in a WITH cannot read the outer query's column "
                f"'{column.sql()}'; make it a CTE of that WITH",
                derived,
            )


def ancestors(node: exp.Expr, root: exp.Expr) -> list[exp.Expr]:
    """The nodes between `node` and `root` (both excluded)."""
    found = []
    parent = node.parent
    while parent is not None and parent is not root:
        found.append(parent)
        parent = parent.parent
    return found


def filtering_join(join: exp.Join | None) -> str:
    """The words of an outer, semi- or anti-join (LEFT, LEFT SEMI, ...); "" for the FROM item or an inner join."""
    if join is None:
        return ""
    side, kind = ((join.args.get(arg) or "").upper() for arg in ("side", "kind"))
    return " ".join(word for word in (side, kind) if word) if side or kind in ("SEMI", "ANTI") else ""


def restrict(select: exp.Select, item: exp.Table, join: exp.Join | None, equalities: list[exp.Expr]) -> None:
    """`select` reads `item` only where `equalities` hold: in its WHERE for the FROM item or an inner join,
    in the ON condition of an outer, semi- or anti-join (where WHERE would drop the rows those keep)."""
    if join is None or not filtering_join(join):
        select.where(*equalities, copy=False)
    elif join.args.get("using"):
        raise NotInSpark.at_node(f"'{item.name}' reads columns of the outer query: join it with ON, not USING", join)
    else:
        join.set("on", exp.and_(join.args.get("on"), *equalities) if join.args.get("on") else exp.and_(*equalities))


def carry_values(
    cte: exp.CTE, keys: list[OuterColumn], carrying: set[str], outer: dict[int, OuterColumn], labelled: bool
) -> bool:
    """The outer values as the leading columns of each branch of `cte`, the outer columns read by them;
    `labelled`: a branch whose conjuncts equate each outer value with an expression of its own takes the
    values from those expressions rather than from the domain. Whether a branch reads the domain."""
    domain_read = False
    for branch in union_branches(cte.this):
        if not isinstance(branch, exp.Select):
            raise NotInSpark.at_node("a CTE reading columns of the outer query must be made of SELECTs", branch)
        refuse_other_reads(branch, carrying, star=True)
        references = [column for column in branch.find_all(exp.Column) if id(column) in outer]
        refuse_unrestricted_rows(branch, references)
        reads = carrying_reads(branch, carrying)
        first = reads[0] if reads and reads[0][1] is None else None
        labels = equated_values(branch, keys, outer, references) if labelled and first is None else None
        if first is None and labels is None:
            read_domain(branch)
            domain_read = True
        source = first[0].alias_or_name if first else DOMAIN
        values = labels or [exp.column(parameter(i), table=source) for i in range(len(keys))]
        for column in references:  # a select item keeps its name
            value = values[keys.index(outer[id(column)])].copy()
            column.replace(exp.alias_(value, column.name) if column.parent is branch else value)
        for item, join in reads:
            if first is None or item is not first[0]:
                restrict(
                    branch,
                    item,
                    join,
                    [
                        exp.EQ(this=exp.column(parameter(i), table=item.alias_or_name), expression=value.copy())
                        for i, value in enumerate(values)
                    ],
                )
        branch.set(
            "expressions", [exp.alias_(value, parameter(i)) for i, value in enumerate(values)] + branch.expressions
        )
        if branch.args.get("group") is not None:
            branch.set(
                "group", exp.Group(expressions=[value.copy() for value in values] + branch.args["group"].expressions)
            )
    alias = cte.args.get("alias")
    if alias is not None and alias.columns:
        alias.set("columns", [exp.to_identifier(parameter(i)) for i in range(len(keys))] + alias.columns)
    return domain_read


def equated_values(
    branch: exp.Select, keys: list[OuterColumn], outer: dict[int, OuterColumn], references: list[exp.Column]
) -> list[exp.Expr] | None:
    """Per outer value, an expression over the branch's own columns that a conjunct of its WHERE (or of an
    inner join's ON) equates the value with, when every value has one and the branch reads them at its
    own level only: each row of the branch belongs to the outer value it equals, so the branch holds the
    rows of every outer row without reading a domain of them (a NULL finds no outer row, as it finds no
    row for a NULL outer value). None otherwise."""
    if any(column.find_ancestor(exp.Select) is not branch for column in references):
        return None  # an expression of the branch would not mean the same inside a nested query
    found: dict[OuterColumn, exp.Expr] = {}
    for conjunct in inner_conjuncts(branch):
        if not isinstance(conjunct, exp.EQ):
            continue
        for side, other in ((conjunct.this, conjunct.expression), (conjunct.expression, conjunct.this)):
            if isinstance(side, exp.Column) and id(side) in outer and own_expression(other, outer):
                found.setdefault(outer[id(side)], other)
    if len(found) < len(keys):
        return None
    return [found[key].copy() for key in keys]


def inner_conjuncts(select: exp.Select) -> list[exp.Expr]:
    """The conjuncts every row of `select` satisfies: its WHERE's and its inner joins' ON conditions'."""
    conditions = [select.args["where"].this] if select.args.get("where") else []
    conditions += [
        join.args["on"]
        for join in select.args.get("joins") or ()
        if join.args.get("on") is not None and not filtering_join(join)
    ]
    return [conjunct for condition in conditions for conjunct in split_conjuncts(condition)]


def own_expression(expression: exp.Expr, outer: dict[int, OuterColumn]) -> bool:
    """An expression of a branch's own columns, one value per row: no outer column, subquery or aggregate."""
    return not any(
        isinstance(node, (exp.Query, exp.AggFunc)) or (isinstance(node, exp.Column) and id(node) in outer)
        for node in expression.walk()
    )


def read_domain(branch: exp.Select) -> None:
    """The domain of outer values as the branch's first FROM item (joined before any other, whose ON
    conditions may read it)."""
    domain = exp.to_table(DOMAIN)
    if branch.args.get("from_") is None:
        branch.from_(domain, copy=False)
        return
    branch.set("joins", [exp.Join(this=domain, kind="CROSS")] + list(branch.args.get("joins") or ()))


def correlate(select: exp.Select, keys: list[OuterColumn], carrying: set[str]) -> None:
    """The subquery's own query reads each CTE carrying outer values at the outer row's values."""
    reads = carrying_reads(select, carrying)
    refuse_other_reads(select, carrying, star=bool(reads))
    for item, join in reads:
        if filtering_join(join):  # its ON condition would read the outer query
            raise NotInSpark.at_node(
                f"'{item.name}' reads columns of the outer query: read it in the FROM "
                f"clause or an inner join, not a {filtering_join(join)} JOIN",
                join,
            )
        select.where(
            *(
                exp.EQ(
                    this=exp.column(parameter(i), table=item.alias_or_name), expression=exp.column(column, table=alias)
                )
                for i, (alias, column) in enumerate(keys)
            ),
            copy=False,
        )
