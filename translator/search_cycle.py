"""PostgreSQL's SEARCH and CYCLE clauses of a recursive CTE, written as the columns they stand for: each
branch of the CTE computes them from its own row and, in a recursive branch, from the row of the CTE it
extends. What follows is ordinary recursion over arrays and structs, on every strategy.

* `SEARCH BREADTH FIRST BY c SET s`: s = struct(depth, c...), depth 0 in the non-recursive branches and
  one more than the extended row's: ORDER BY s lists the rows level by level.
* `SEARCH DEPTH FIRST BY c SET s`: s = the array of the c values (a struct of them for several columns)
  along the row's derivation: ORDER BY s lists each row right after the row it extends.
* `CYCLE c SET mark [TO v DEFAULT d] USING path`: path = that array; mark = v when the row's c values are
  already on the extended row's path, else d (TRUE / FALSE by default); a marked row is not extended.
"""

from __future__ import annotations

from sqlglot import exp

from translator.dialect import CteValue, Cycle, Search
from translator.errors import TranslationError, UnsupportedError
from translator.sql_helpers import output_name, union_branches

DEPTH = "depth"  # the level field of a breadth-first sequence


def expand_search_cycle(cte: exp.CTE) -> exp.CTE:
    """`cte` with its SEARCH and CYCLE clauses written as columns of its branches (as it is without)."""
    search: Search | None = cte.args.get("search")
    cycle: Cycle | None = cte.args.get("cycle")
    clause = search or cycle  # what an error points at
    if clause is None:
        return cte
    cte = cte.copy()
    name = cte.alias_or_name.lower()
    branches = union_branches(cte.this)
    selects = [branch for branch in branches if isinstance(branch, exp.Select)]
    if len(branches) < 2 or len(selects) < len(branches):
        raise UnsupportedError.at_node(f"SEARCH / CYCLE on '{name}' need a UNION of SELECTs", clause)
    columns = cte_columns(cte, selects[0])
    added = ([search.this] if search is not None else []) + ([cycle.this, cycle.args["path"]] if cycle else [])
    for branch in selects:
        extended = extended_row(branch, name, clause)
        if search is not None:
            values = values_of(columns, search)
            branch.append("expressions", exp.alias_(sequence(search, values, extended), search.this.name))
        if cycle is not None:
            for item in cycle_columns(cycle, values_of(columns, cycle), extended):
                branch.append("expressions", item)
            if extended is not None:
                branch.where(not_marked(cycle, extended), copy=False)
    alias = cte.args.get("alias")
    if alias is not None and alias.columns:
        alias.set("columns", [*alias.columns, *(identifier.copy() for identifier in added)])
    cte.set("search", None)
    cte.set("cycle", None)
    return cte


def cte_columns(cte: exp.CTE, anchor: exp.Select) -> list[str] | None:
    """The CTE's column names: its list, else the names of its first branch's items; None when that branch's
    `*` gives them."""
    alias = cte.args.get("alias")
    if alias is not None and alias.columns:
        return [column.name.lower() for column in alias.columns]
    if any(item.is_star for item in anchor.expressions):
        return None
    return [output_name(item, i).lower() for i, item in enumerate(anchor.expressions)]


def values_of(columns: list[str] | None, clause: Search | Cycle) -> list[exp.Expr]:
    """What a branch computes for each column the clause names: its item at the column's position among the
    CTE's `columns` (None: not known before the first branch's `*` are expanded)."""
    values: list[exp.Expr] = []
    for column in clause.expressions:
        value = CteValue(this=column.copy(), clause=clause.key.upper())
        if columns is not None:
            value.set("position", column_position(value, columns))
        values.append(value)
    return values


def column_position(value: CteValue, columns: list[str]) -> int:
    """Where the column a CteValue names is among `columns`."""
    if value.name.lower() not in columns:
        raise TranslationError.at_node(
            f"{value.args['clause']} column '{value.name}' is not a column of the CTE", value.this
        )
    return columns.index(value.name.lower())


def bind_values(branch: exp.Expr, columns: tuple[str, ...]) -> exp.Expr:
    """A branch of a relation with `columns`, its CteValue items given their positions among them."""
    if not any(value.args.get("position") is None for value in branch.find_all(CteValue)):
        return branch
    branch = branch.copy()
    names = [column.lower() for column in columns]
    for value in branch.find_all(CteValue):
        if value.args.get("position") is None:
            value.set("position", column_position(value, names))
    return branch


def resolve_values(items: list[tuple[str, exp.Expr]]) -> list[tuple[str, exp.Expr]]:
    """A SELECT's items (`*` expanded) with each CteValue in them replaced by the item it stands for, one of
    the items before those holding CteValues."""
    selected = [(name, expression) for name, expression in items if not expression.find(CteValue)]
    if len(selected) == len(items):
        return items
    names = [name.lower() for name, _ in selected]

    def value(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, CteValue):
            return node
        position = column_position(node, names) if node.args.get("position") is None else node.args["position"]
        if position >= len(selected):
            raise TranslationError.at_node(
                f"a branch of the CTE selects {len(selected)} columns, too few for {node.args['clause']} "
                f"column '{node.name}'",
                node.this,
            )
        return selected[position][1].copy()

    return [(name, expression.transform(value)) for name, expression in items]


def extended_row(branch: exp.Select, name: str, clause: exp.Expr) -> exp.Identifier | None:
    """The qualifier by which a recursive branch reads the row it extends; None in a non-recursive one."""
    reads = [table for table in branch.find_all(exp.Table) if table.name.lower() == name and not table.db]
    if not reads:
        return None
    if len(reads) > 1:
        raise UnsupportedError.at_node(f"SEARCH / CYCLE need a recursion that reads '{name}' once per branch", clause)
    return exp.to_identifier(reads[0].alias_or_name)


def field_of(row: exp.Identifier, column: exp.Identifier) -> exp.Column:
    return exp.column(column.copy(), table=row.copy())


def element(clause: exp.Expr, values: list[exp.Expr]) -> exp.Expr:
    """One row's entry in a path: its value, or a struct of its values."""
    if len(values) == 1:
        return values[0].copy()
    return struct([(column.name, value) for column, value in zip(clause.expressions, values)])


def struct(fields: list[tuple[str, exp.Expr]]) -> exp.Expr:
    return exp.Struct(
        expressions=[exp.PropertyEQ(this=exp.to_identifier(name), expression=value.copy()) for name, value in fields]
    )


def path(clause: exp.Expr, values: list[exp.Expr], extended: exp.Identifier | None, column: exp.Identifier) -> exp.Expr:
    here = exp.Array(expressions=[element(clause, values)])
    if extended is None:
        return here
    return exp.Concat(expressions=[field_of(extended, column), here])


def sequence(search: Search, values: list[exp.Expr], extended: exp.Identifier | None) -> exp.Expr:
    if search.args["kind"] == "DEPTH":
        return path(search, values, extended, search.this)
    depth = (
        exp.Literal.number(0)
        if extended is None
        else exp.Add(
            this=exp.Dot(this=field_of(extended, search.this), expression=exp.to_identifier(DEPTH)),
            expression=exp.Literal.number(1),
        )
    )
    return struct([(DEPTH, depth), *((column.name, value) for column, value in zip(search.expressions, values))])


def marks(cycle: Cycle) -> tuple[exp.Expr, exp.Expr]:
    """The mark of a row closing a cycle, and of the others."""
    if cycle.args.get("to") is None:
        return exp.true(), exp.false()
    return cycle.args["to"], cycle.args["default"]


def cycle_columns(cycle: Cycle, values: list[exp.Expr], extended: exp.Identifier | None) -> list[exp.Expr]:
    on_cycle, off_cycle = marks(cycle)
    mark = off_cycle.copy()
    if extended is not None:
        seen = exp.ArrayContains(this=field_of(extended, cycle.args["path"]), expression=element(cycle, values))
        mark = exp.If(this=seen, true=on_cycle.copy(), false=off_cycle.copy())
    return [
        exp.alias_(mark, cycle.this.name),
        exp.alias_(path(cycle, values, extended, cycle.args["path"]), cycle.args["path"].name),
    ]


def not_marked(cycle: Cycle, extended: exp.Identifier) -> exp.Expr:
    """The extended row did not close a cycle."""
    on_cycle, _ = marks(cycle)
    return exp.not_(exp.NullSafeEQ(this=field_of(extended, cycle.this), expression=on_cycle.copy()))
