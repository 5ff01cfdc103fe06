"""A WITH inside a correlated subquery, whose queries read columns of the query around it (PostgreSQL
answers `SELECT a, (WITH RECURSIVE r(n) AS (SELECT e.a UNION SELECT n + 1 FROM r WHERE n < 5) SELECT
max(n) FROM r) FROM e` row by row).

The CTEs are computed once for all the outer values they read: each CTE that reads outer columns, or
reads such a CTE, gets those values as leading columns. A branch reading none of those CTEs takes them
from the domain of outer values (every combination of the distinct values of the outer FROM items they
come from), a branch reading one passes that one's on, and the outer columns in the branch become them.
The subquery's own query then reads each such CTE where its values equal the outer row's: a correlation
by equalities like any other. An outer value that is NULL finds no rows there (the equality is not true),
where a query run row by row would compute the CTEs with a NULL.
"""

from __future__ import annotations

from sqlglot import exp

from translator.core import TranslatorCore
from translator.errors import UnsupportedError
from translator.ir import Atom, Rule, var
from translator.scope import Scope
from translator.sql_helpers import flatten_union

DOMAIN = "__outer_values"  # the outer values, as the CTEs read them

OuterColumn = tuple[str, str]  # (alias of an outer FROM item, column)


class CorrelatedWithMixin(TranslatorCore):
    def parameterized_with(self, select: exp.Select, outer: Scope, env: dict[str, str]
                           ) -> tuple[exp.Select, dict[str, str]]:
        """`select` with its WITH's CTEs carrying the outer values they read, and the names its
        translation reads (the domain of those values added); as it is when they read none."""
        select = select.copy()
        with_ = select.args["with_"]
        references = outer_references(with_, outer)
        if not references:
            return select, env
        keys = list(dict.fromkeys(key_of(column) for column in references))
        carrying = carrying_ctes(with_, {id(column) for column in references})
        for cte in with_.expressions:
            if cte.alias_or_name.lower() in carrying:
                carry_values(cte, keys, carrying, references)
        correlate(select, keys, carrying)
        return select, {**env, DOMAIN: self.outer_domain(keys, outer, references[0])}

    def outer_domain(self, keys: list[OuterColumn], outer: Scope, node: exp.Expression) -> str:
        """A relation of every combination of the distinct values of the outer columns `keys`."""
        body, head = [], []
        for alias in dict.fromkeys(alias for alias, _ in keys):
            source = outer.source(alias)
            if source is None or not source.relation:
                raise UnsupportedError.at_node(f"a WITH inside a subquery cannot read the columns of '{alias}'", node)
            variables = [self.fresh_variable(column) for column in source.columns]
            body.append(Atom(source.relation, tuple(variables)))
            names = [column.lower() for column in source.columns]
            head += [variables[names.index(column)] for key_alias, column in keys if key_alias == alias]
        relation = self.new_relation("outer_values", tuple(parameter(i) for i in range(len(keys))), distinct=True)
        self.add_rule(Rule(relation, tuple(var(v) for v in head), tuple(body)), node)
        return relation


def parameter(position: int) -> str:
    return f"__outer_{position}"


def key_of(column: exp.Column) -> OuterColumn:
    return column.table.lower(), column.name.lower()


def outer_references(with_: exp.With, outer: Scope) -> list[exp.Column]:
    """The columns of a WITH's queries that name a FROM item of the enclosing query: qualified by an
    alias no FROM item or CTE of the WITH defines, which the enclosing query's scope knows."""
    local = {cte.alias_or_name.lower() for cte in with_.expressions}
    local |= {node.alias_or_name.lower() for node in with_.find_all(exp.Table, exp.Subquery, exp.Values)}
    return [column for column in with_.find_all(exp.Column)
            if column.table and column.table.lower() not in local and outer.has_alias(column.table.lower())]


def carrying_ctes(with_: exp.With, references: set[int]) -> set[str]:
    """The CTEs that read outer columns, or read a CTE that does (directly or not)."""
    reading = {cte.alias_or_name.lower(): cte for cte in with_.expressions}
    carrying = {name for name, cte in reading.items()
                if any(id(column) in references for column in cte.find_all(exp.Column))}
    while True:
        more = {name for name, cte in reading.items()
                if name not in carrying and any(table.name.lower() in carrying for table in cte.find_all(exp.Table))}
        if not more:
            return carrying
        carrying |= more


def direct_reads(select: exp.Select, names: set[str]) -> list[exp.Table]:
    """The FROM items of `select` (not of its subqueries) that read one of `names`."""
    items = [select.args.get("from_") and select.args["from_"].this]
    items += [join.this for join in select.args.get("joins") or ()]
    return [item for item in items if isinstance(item, exp.Table) and item.name.lower() in names]


def refuse_other_reads(select: exp.Select, names: set[str], direct: list[exp.Table], star: bool) -> None:
    """A CTE carrying outer values read elsewhere than in a FROM item (in a nested subquery), or a `*`
    where the values are columns (`star`), would see them unrestricted to the outer row's."""
    for node in select.walk(prune=lambda node: isinstance(node, exp.With)):
        if isinstance(node, exp.Table) and node.name.lower() in names and not any(node is read for read in direct):
            raise UnsupportedError.at_node(
                f"'{node.name}' reads columns of the outer query: read it in the FROM clause of a query of its WITH",
                node)
    if star and any(item.is_star for item in select.expressions):
        raise UnsupportedError.at_node("a query of a WITH reading columns of the outer query lists its columns, "
                                       "not *", select)


def carry_values(cte: exp.CTE, keys: list[OuterColumn], carrying: set[str], references: list[exp.Column]) -> None:
    """The outer values as the leading columns of each branch of `cte`, the outer columns read by them."""
    outer = {id(column) for column in references}
    for branch in flatten_union(cte.this):
        if not isinstance(branch, exp.Select):
            raise UnsupportedError.at_node("a CTE reading columns of the outer query must be made of SELECTs", branch)
        reads = direct_reads(branch, carrying)
        refuse_other_reads(branch, carrying, reads, star=True)
        if reads:
            source = reads[0].alias_or_name
            for other in reads[1:]:
                branch.where(*(exp.EQ(this=exp.column(parameter(i), table=other.alias_or_name),
                                      expression=exp.column(parameter(i), table=source)) for i in range(len(keys))),
                             copy=False)
        else:
            source = DOMAIN
            domain = exp.to_table(DOMAIN)
            if branch.args.get("from_") is None:
                branch.from_(domain, copy=False)
            else:
                branch.join(domain, join_type="cross", copy=False)
        values = [exp.column(parameter(i), table=source) for i in range(len(keys))]
        for column in list(branch.find_all(exp.Column)):
            if id(column) in outer:
                column.replace(values[keys.index(key_of(column))].copy())
        branch.set("expressions", [exp.alias_(value, parameter(i)) for i, value in enumerate(values)]
                   + branch.expressions)
        if branch.args.get("group") is not None:
            branch.set("group", exp.Group(expressions=[value.copy() for value in values]
                                          + branch.args["group"].expressions))
    alias = cte.args.get("alias")
    if alias is not None and alias.columns:
        alias.set("columns", [exp.to_identifier(parameter(i)) for i in range(len(keys))] + alias.columns)


def correlate(select: exp.Select, keys: list[OuterColumn], carrying: set[str]) -> None:
    """The subquery's own query reads each CTE carrying outer values at the outer row's values."""
    reads = direct_reads(select, carrying)
    refuse_other_reads(select, carrying, reads, star=bool(reads))
    for read in reads:
        select.where(*(exp.EQ(this=exp.column(parameter(i), table=read.alias_or_name),
                              expression=exp.column(column, table=alias)) for i, (alias, column) in enumerate(keys)),
                     copy=False)
