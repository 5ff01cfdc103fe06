"""Program analysis: dependency graph, strongly connected components, strata, and the checks that make
a program meaningful (stratified negation and aggregation, monotone use of recursive aggregates, safety).

A failed check is an `AnalysisError` of this layer, not a DB-API error: the optimizer checks the programs
it rewrites and keeps the original when a rewrite fails (magic sets), and the session turns what reaches
the user into ProgrammingError or NotSupportedError, as it does the translator's errors.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlglot import exp

from translator.ir import Aggregate, Assignment, Atom, Condition, Iteration, Program, Rule, variables_of

DECREASING, INCREASING = "decreasing", "increasing"


class AnalysisError(Exception):
    """A program that is not meaningful: unstratifiable, non-monotone or unsafe (the user's query is wrong)."""


class UnsupportedProgram(AnalysisError):
    """A meaningful program that recsql does not evaluate."""


DIRECTION = {
    Aggregate.MIN: DECREASING,
    Aggregate.MAX: INCREASING,
    Aggregate.SUM: INCREASING,
    Aggregate.COUNT: INCREASING,
}


@dataclass(frozen=True)
class Component:
    """A strongly connected component of the dependency graph: evaluated together, to a fixpoint if recursive."""

    relations: tuple[str, ...]
    recursive: bool

    def __contains__(self, relation: str) -> bool:
        return relation in self.relations


def stratify(program: Program) -> list[Component]:
    """Components in evaluation order (every relation after the ones it reads), checked."""
    components = strongly_connected_components(program)
    for component in components:
        check_component(program, component)
    for rule in program.rules:
        check_safety(program, rule)
    return components


def strongly_connected_components(program: Program) -> list[Component]:
    graph: dict[str, list[str]] = {name: [] for name in program.relations}
    self_loops = set()
    for body, head in program.edges():
        graph[head].append(body)
        if body == head:
            self_loops.add(head)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    order: list[Component] = []

    def visit(node: str) -> None:  # Tarjan; emits a component after all components it reads
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph[node]:
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == node:
                    break
            members.sort(key=list(program.relations).index)
            recursive = len(members) > 1 or members[0] in self_loops
            order.append(Component(tuple(members), recursive))

    for name in program.relations:
        if name not in index:
            visit(name)
    return order


def check_component(program: Program, component: Component) -> None:
    if not component.recursive:
        return
    names = ", ".join(
        named(program, component.relations) or [program.relations[name].display_name for name in component.relations]
    )
    cycle = f"the recursive cycle ({names}){outer_values_note(program, component)}"
    for name in component.relations:
        opaque = program.relations[name].opaque
        if opaque is not None:
            raise UnsupportedProgram(
                f"{opaque.construct} is inside {cycle}: recsql evaluates it by Spark SQL, once, so it may only read "
                "relations computed before the recursion"
            )
        if program.relations[name].window is not None:
            raise UnsupportedProgram(
                f"LIMIT / OFFSET through recursion: a query with LIMIT, FETCH FIRST or OFFSET (a subquery, or a "
                f"branch or the body of a recursive CTE) is inside {cycle}; it may only read relations computed "
                "before the recursion"
            )
    kinds = {program.relations[r].iteration for r in component.relations}
    if Iteration.KEYED in kinds:
        # each round evaluates its rules over fixed rows (the last round's, and every row known): any SQL
        # means what it says there, outer joins, negation and aggregates included
        return
    for rule in program.rules:
        if rule.head not in component:
            continue
        head = owner(program, component, rule.head)
        for atom in rule.atoms:
            if atom.relation not in component:
                continue
            if atom.optional:
                raise AnalysisError(
                    f"outer join through recursion: {head} LEFT JOINs {read_in_words(program, component, atom)} "
                    f"within {cycle}; an outer join may only read relations computed before the recursion"
                )
            if atom.negated:
                raise AnalysisError(
                    f"negation through recursion: {head} depends on NOT {read_in_words(program, component, atom)} "
                    f"within {cycle}; negation (NOT EXISTS, NOT IN, EXCEPT) may only read relations computed before "
                    "the recursion"
                )
            if atom.semi:
                raise UnsupportedProgram(
                    f"{head} reads {reached(program, component, atom)} within {cycle} through an EXISTS or IN "
                    "subquery that reads columns of a LEFT JOIN or is correlated by a condition other than "
                    "equalities; correlate it with equalities of inner-joined columns only, or join the recursive "
                    "CTE instead"
                )
            if rule.is_aggregate:
                raise AnalysisError(
                    f"aggregation through recursion: a GROUP BY aggregate over "
                    f"{read_in_words(program, component, atom)} is inside {cycle}; declare the aggregate in the CTE "
                    "header instead, e.g. (node, min() AS dist)"
                )
    if len(kinds) > 1:
        raise AnalysisError(f"mutually recursive CTEs ({names}) mix UNION and UNION ALL; use one of them")
    for rule in program.rules:
        if rule.head in component:
            check_monotone(program, component, rule)


def named(program: Program, names: Iterable[str]) -> list[str]:
    """The relations among `names` that the user named (CTEs, derived tables, views), by those names: the
    ones recsql made for parts of a query (a subquery, a side of an EXCEPT) carry no label."""
    return [program.relations[name].label for name in names if program.relations[name].label]


def outer_values_note(program: Program, component: Component) -> str:
    """Why a recursive cycle goes through a subquery's WITH that reads only tables: it reads columns of the
    recursion that no equality with its own columns gives, so its CTEs are computed for the recursion's rows."""
    columns = [
        program.relations[name].outer_columns for name in component.relations if program.relations[name].outer_columns
    ]
    if not columns:
        return ""
    first = columns[0].split(", ")[0]
    return (
        f" (a WITH inside a subquery reads {', '.join(columns)} of the recursion other than through an equality "
        f"with a column of its own tables, as in WHERE x.c = {first}, so its CTEs are computed from the "
        "recursion's rows)"
    )


def owner(program: Program, component: Component, name: str) -> str:
    """A relation of a recursive cycle as the user knows it: its name, or the named relations nearest
    to it among those of the cycle that read it (the CTE whose query a subquery is part of)."""
    return nearest_named(program, component, name, readers(program))


def read_in_words(program: Program, component: Component, atom: Atom) -> str:
    """What a rule of a recursive cycle reads of it, as the user knows it: a relation's name, or a subquery
    with the named relations nearest to it among those of the cycle that it reads."""
    if program.relations[atom.relation].label:
        return program.relations[atom.relation].label
    return f"a subquery reading {reached(program, component, atom)}"


def reached(program: Program, component: Component, atom: Atom) -> str:
    """The named relations of a recursive cycle nearest to what `atom` reads, itself included."""
    reads: dict[str, set[str]] = {}
    for body, head in program.edges():
        reads.setdefault(head, set()).add(body)
    return nearest_named(program, component, atom.relation, reads)


def readers(program: Program) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for body, head in program.edges():
        found.setdefault(body, set()).add(head)
    return found


def nearest_named(program: Program, component: Component, name: str, edges: dict[str, set[str]]) -> str:
    """The named relations of `component` fewest `edges` away from `name` (itself when it is named)."""
    seen, layer = {name}, [name]
    while layer:
        found = named(program, layer)
        if found:
            return ", ".join(found)
        layer = sorted(
            {n for node in layer for n in edges.get(node, ()) if n in component and n not in seen},
            key=component.relations.index,
        )
        seen.update(layer)
    return name


def check_monotone(program: Program, component: Component, rule: Rule) -> None:
    """Values of recursive aggregates may flow only into a head aggregate of the same direction, through
    monotone arithmetic, and be filtered only by comparisons that stay true as the value improves."""
    directions: dict[str, str] = {}
    for atom in rule.atoms:
        relation = program.relations.get(atom.relation)
        if atom.relation in component and relation.aggregate and not atom.negated:
            directions[atom.args[relation.aggregate.column]] = DIRECTION[relation.aggregate.function]
    if not directions:
        return
    head = program.relations[rule.head]
    where = f"in the recursive rule of {owner(program, component, rule.head)}"
    for literal in rule.body:
        if isinstance(literal, Assignment) and variables_of(literal.expression) & directions.keys():
            directions[literal.variable] = monotone_direction(literal.expression, directions, where)
    for literal in rule.body:
        if isinstance(literal, Condition) and variables_of(literal.expression) & directions.keys():
            check_condition(literal.expression, directions, where)
    for i, term in enumerate(rule.terms):
        if not variables_of(term) & directions.keys():
            continue
        if head.aggregate is None or head.aggregate.column != i:
            raise AnalysisError(
                f"non-monotone use of a recursive aggregate {where}: '{term.sql(dialect='spark')}' goes into "
                f"column {head.columns[i]}, which is not an aggregate; only the CTE's min/max/sum/count column may "
                "carry a recursive aggregate value"
            )
        direction = monotone_direction(term, directions, where)
        wanted = DIRECTION[head.aggregate.function]
        if direction != wanted:
            raise AnalysisError(
                f"non-monotone use of a recursive aggregate {where}: a {direction} value "
                f"('{term.sql(dialect='spark')}') feeds {head.aggregate.function.value}(), which needs {wanted} values"
            )


def monotone_direction(expression: exp.Expression, directions: dict[str, str], where: str) -> str:
    """The direction of `expression` in the aggregate variables it reads, or an AnalysisError when it is
    not monotone (allowed: +, * by non-negative factors, - of a non-aggregate term, casts, parentheses)."""
    found = {directions[v] for v in variables_of(expression) if v in directions}
    if len(found) > 1:
        raise AnalysisError(f"non-monotone use of recursive aggregates {where}: '{expression.sql()}' mixes min and max")
    for node in expression.walk():
        if not variables_of(node) & directions.keys() or isinstance(node, (exp.Column, exp.Identifier)):
            continue
        allowed = isinstance(node, (exp.Add, exp.Mul, exp.Paren, exp.Cast, exp.Greatest, exp.Least)) or (
            isinstance(node, exp.Sub) and not variables_of(node.expression) & directions.keys()
        )
        negative = any(isinstance(child, exp.Neg) for child in node.iter_expressions())
        if not allowed or negative:
            raise AnalysisError(
                f"non-monotone use of a recursive aggregate {where}: '{expression.sql(dialect='spark')}' is not "
                "monotone in the aggregate value (allowed: +, * by non-negative values, - of other terms)"
            )
    return found.pop()


def check_condition(condition: exp.Expression, directions: dict[str, str], where: str) -> None:
    keeps = {DECREASING: (exp.LT, exp.LTE), INCREASING: (exp.GT, exp.GTE)}
    flipped = {DECREASING: (exp.GT, exp.GTE), INCREASING: (exp.LT, exp.LTE)}
    for node in condition.walk():
        if not isinstance(node, exp.Binary) or not isinstance(
            node, (exp.LT, exp.LTE, exp.GT, exp.GTE, exp.EQ, exp.NEQ)
        ):
            continue
        left, right = variables_of(node.this) & directions.keys(), variables_of(node.expression) & directions.keys()
        if not left and not right:
            continue
        if left and right:
            break
        direction = directions[next(iter(left or right))]
        side_ok = keeps[direction] if left else flipped[direction]
        if isinstance(node, side_ok):
            continue
        break
    else:
        return
    raise AnalysisError(
        f"non-monotone use of a recursive aggregate {where}: the condition '{condition.sql(dialect='spark')}' "
        "may hold for an early value and fail for the final one; compare a min() value only with < / <=, "
        "a max(), sum() or count() value only with > / >="
    )


def local_variables(rule: Rule, atom: Atom) -> set[str]:
    """Variables of a conditional anti-join that occur nowhere else in the rule: existential, like `_`."""
    elsewhere = set()
    for literal in rule.body:
        if literal is not atom:
            elsewhere |= literal.variables() | (literal.condition_variables() if isinstance(literal, Atom) else set())
    for term in rule.terms:
        elsewhere |= variables_of(term)
    return atom.variables() - elsewhere


def check_safety(program: Program, rule: Rule) -> None:
    """Every variable used in a condition, negation or head must be bound by a positive atom or assignment."""
    bound = set()
    for literal in rule.body:
        if isinstance(literal, Atom) and not literal.filters:
            bound |= literal.variables()
        elif isinstance(literal, Assignment):
            bound.add(literal.variable)
    used = set()
    for literal in rule.body:
        if isinstance(literal, (Condition, Assignment)):
            used |= literal.variables()
        elif isinstance(literal, Atom) and literal.filters and literal.on is not None:
            used |= (literal.variables() | literal.condition_variables()) - local_variables(rule, literal)
        elif isinstance(literal, Atom) and literal.filters:
            used |= literal.variables()
        elif isinstance(literal, Atom):
            used |= literal.condition_variables()
    for term in rule.terms:
        used |= variables_of(term)
    unbound = used - bound
    if unbound:
        raise AnalysisError(
            f"unsafe rule for {program.relations[rule.head].label or 'a subquery'}: "
            f"{', '.join(sorted(unbound))} not bound by any table in FROM"
        )
