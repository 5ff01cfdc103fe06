"""Questions about the shape of a sqlglot tree, asked by several parts of the translator.

Free functions of the SQL tree alone (no translator state): the branches of a UNION, the conjuncts of a
condition, a select item's output name, the aggregate calls of an expression, where a column resolves,
the order a WITH RECURSIVE's CTEs are translated in.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from translator.dialect import RecSQL
from translator.ir import reachable
from translator.scope import Scope


def windowed(query: exp.Expr) -> bool:
    """Whether a query keeps only some of its rows (LIMIT, FETCH FIRST, OFFSET); an ORDER BY alone keeps them all."""
    return bool(query.args.get("limit") or query.args.get("offset"))


def unparenthesized(query: exp.Expr) -> exp.Expr:
    """A query without the parentheses around it that change nothing (no alias, no window of their own)."""
    while isinstance(query, exp.Subquery) and not query.args.get("alias") and not windowed(query):
        query = query.this
    return query


def top_union(query: exp.Expr) -> exp.Union | None:
    """The UNION [ALL] a query is, under its parentheses; None when it is another kind of query."""
    query = unparenthesized(query)
    return query if isinstance(query, exp.Union) else None


def union_branches(query: exp.Expr) -> list[exp.Expr]:
    """The branches of the UNION [ALL] a query is: the UNIONs below it that mean what their branches joined
    to it would (one of its kind, or any under a UNION that removes duplicates) split into their branches.
    A query that is no such UNION, or that has a window or a WITH of its own, is its one branch
    (`A UNION B UNION ALL C` has two: `A UNION B` and `C`)."""
    top = top_union(query)
    return _branches(query, top is not None and bool(top.args.get("distinct")))


def joinable(union: exp.Union) -> bool:
    """Whether a UNION's branches are rows of the query around it: no window, no WITH of its own."""
    return not windowed(union) and not union.args.get("with_")


def _branches(query: exp.Expr, distinct: bool) -> list[exp.Expr]:
    union = top_union(query)
    if union is None or not joinable(union) or (union.args.get("distinct") and not distinct):
        return [query]
    return _branches(union.this, distinct) + _branches(union.expression, distinct)


HOLDER = "__subquery"  # the CTE holding a subquery's query that is not a SELECT


def select_from_holder(query: exp.Expr, items: list[exp.Expr], columns: list[str] | None = None) -> exp.Select:
    """`WITH <query's own CTEs>, __subquery[(columns)] AS (query) SELECT items FROM __subquery`: a query other
    than a SELECT (a set operation, VALUES) as a SELECT, whose items and correlation are those of a SELECT."""
    body = query.copy()
    with_ = body.args.get("with_") or exp.With(expressions=[])
    body.set("with_", None)
    names = [exp.to_identifier(column) for column in columns] if columns else None
    with_.append("expressions", exp.CTE(this=body, alias=exp.TableAlias(this=exp.to_identifier(HOLDER), columns=names)))
    select = exp.select(*items).from_(HOLDER)
    select.set("with_", with_)
    return select


def split_conjuncts(condition: exp.Expr) -> list[exp.Expr]:
    """The conditions joined by AND, whatever parentheses enclose them (`WHERE (a NOT IN (...))`)."""
    if isinstance(condition, exp.And):
        return split_conjuncts(condition.this) + split_conjuncts(condition.expression)
    if isinstance(condition, exp.Paren):
        return split_conjuncts(condition.this)
    return [condition]


def text_of(expression: exp.Expr) -> str:
    """An expression's SQL text, to tell expressions apart or name them: written in recsql's dialect, as no
    other can write the CTEs of a subquery's WITH."""
    return expression.sql(dialect=RecSQL)


def without_parentheses(expression: exp.Expr) -> exp.Expr:
    """`expression` without the parentheses around it."""
    while isinstance(expression, exp.Paren):
        expression = expression.this
    return expression


def output_name(expression: exp.Expr, position: int) -> str:
    """An unnamed item is named by its SQL text; a column, in parentheses or not, by its name (as Spark and
    DuckDB name it)."""
    if isinstance(expression, exp.Alias):
        return expression.alias
    bare = without_parentheses(expression)
    if isinstance(bare, exp.Column):
        return bare.name
    return text_of(expression)


def block_nodes(select: exp.Select) -> Iterator[exp.Expr]:
    """The nodes of a SELECT block, the queries nested in it (subqueries, derived tables) left out."""
    pending: list[exp.Expr] = [select]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(child for child in node.iter_expressions() if not isinstance(child, (exp.Query, exp.Subquery)))


def outermost_aggregates(expression: exp.Expr) -> list[exp.AggFunc]:
    """Aggregate calls not nested in another aggregate or in a subquery."""
    found = []

    def visit(node: exp.Expr) -> None:
        if isinstance(node, (exp.Subquery, exp.Query)):  # EXISTS holds its query bare
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


def in_subquery(node: exp.Expr, root: exp.Expr) -> bool:
    parent = node.parent
    while parent is not None and parent is not root:
        if isinstance(parent, exp.Subquery):
            return True
        parent = parent.parent
    return False


def cte_groups(ctes: list[exp.CTE]) -> list[tuple[list[exp.CTE], bool]]:
    """The CTEs of a WITH RECURSIVE in groups, each reading only its own and earlier groups' CTEs (a CTE
    may read one written after it), CTEs that read each other in one group; with whether the group recurses."""
    by_name = {cte.alias_or_name.lower(): cte for cte in ctes}
    reads = {
        name: {table.name.lower() for table in cte.this.find_all(exp.Table)} & by_name.keys()
        for name, cte in by_name.items()
    }
    reach = {name: reachable(name, reads) for name in by_name}
    done: set[str] = set()
    groups = []
    while len(done) < len(by_name):
        name = next(n for n in by_name if n not in done and all(m in done or n in reach[m] for m in reach[n]))
        members = [m for m in by_name if m == name or (m in reach[name] and name in reach[m])]
        done.update(members)
        groups.append(([by_name[m] for m in members], name in reach[name]))
    return groups
