"""The state of one SELECT block while its rule is built, and what a correlated subquery exposes.

Every part of the translator reads or extends a `Block` (FROM adds atoms, WHERE conditions and
unifications, aggregation a new block over the grouping rule), so it lives apart from all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sqlglot import exp

from translator.ir import WILDCARD, Assignment, Atom, Condition, Literal, Rule, var
from translator.scope import Scope


@dataclass
class Correlation:
    """What a correlated subquery exposes to the query around it, as columns after its own: one per
    equality with an outer column (`outer`: the outer side of each), then one per inner variable that its
    other conditions on outer columns read (`inner`). Those `conditions` (over inner and outer variables)
    become the condition of the outer query's semi- or anti-join."""

    outer: list[exp.Expr] = field(default_factory=list)
    inner: list[str] = field(default_factory=list)
    conditions: list[exp.Expr] = field(default_factory=list)

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
    correlations: list[tuple[exp.Expr, exp.Expr]] = field(default_factory=list)
    # its other conditions reading outer columns, over inner and outer variables
    outer_conditions: list[exp.Expr] = field(default_factory=list)
    optional: set[str] = field(default_factory=set)  # variables of LEFT JOINed atoms: never unified

    def outer_joined(self) -> set[str]:
        """The variables an outer join may leave NULL: its atom's, and those assigned from them. They are bound
        only once the outer joins are made, after every inner join."""
        found = {self.find(v) for v in self.optional}
        for literal in self.body:
            if isinstance(literal, Assignment) and {self.find(v) for v in literal.variables()} & found:
                found.add(self.find(literal.variable))
        return found

    def find(self, variable: str) -> str:
        while self.parent_of.get(variable, variable) != variable:
            variable = self.parent_of[variable]
        return variable

    def unify(self, a: str, b: str) -> None:
        a, b = self.find(a), self.find(b)
        if a != b:
            self.parent_of[b] = a

    def canonical(self, expression: exp.Expr) -> exp.Expr:
        if not self.parent_of:
            return expression
        return expression.transform(
            lambda node: var(self.find(node.name)) if isinstance(node, exp.Column) and not node.table else node
        )

    def rule(self, head: str, terms: list[exp.Expr]) -> Rule:
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
