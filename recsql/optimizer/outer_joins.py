"""Outer joins that a condition makes inner: `LEFT JOIN s ... WHERE s.x > 5` keeps no row without a
match, since the condition is not true on the NULLs such a row has; nor does `WHERE s.x IN (SELECT ...)`,
a semi-join made after the outer joins, since no fact matches a NULL. The atom becomes an ordinary inner
join, so join ordering may move it and magic sets may pass bindings through it; equalities of its ON
condition with variables bound elsewhere become shared variables (join keys), the rest conditions.

This is what a correlated scalar subquery compared in WHERE (TPC-H Q2, Q17, Q20) needs: translated as
an outer join (NULL when the subquery has no row), it is an inner join once the comparison rejects NULL.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from recsql.optimizer.context import Context, Outcome
from recsql.optimizer.join_order import atom_at
from translator.ir import Atom, Condition, Literal, Program, Rule, bound_by, renamed, variables_of

# a condition built only of these is not true when any variable it reads is NULL
COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
STRICT = (
    exp.Column,
    exp.Identifier,
    exp.Literal,
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Neg,
    exp.Paren,
    exp.Cast,
    exp.DataType,
    exp.DataTypeParam,
)


def simplify_outer_joins(context: Context) -> Outcome:
    """The pass: outer joins made inner where a condition rejects their NULLs; new estimates, since an
    inner join keeps fewer rows than the outer join it was."""
    program = simplify_program(context.program)
    if program is context.program:
        return context.unchanged()
    made_inner = outer_joins(context.program) - outer_joins(program)
    return Outcome(program, context.estimate(program), f"outer joins made inner: {made_inner}")


def outer_joins(program: Program) -> int:
    return sum(1 for rule in program.rules for atom in rule.atoms if atom.optional)


def simplify_program(program: Program) -> Program:
    """`program` with every outer-joined atom that a body condition rejects the NULLs of made inner."""
    rules = [simplify_rule(rule) for rule in program.rules]
    if all(new is old for new, old in zip(rules, program.rules)):
        return program
    return replace(program, rules=rules)


def simplify_rule(rule: Rule) -> Rule:
    for position, literal in enumerate(rule.body):
        if isinstance(literal, Atom) and literal.optional and rejected(literal, rule.body):
            return simplify_rule(inner_join(rule, position))
    return rule


def rejected(atom: Atom, body: tuple[Literal, ...]) -> bool:
    """Some condition of the body reads a variable of `atom` and is not true when it is NULL, or a semi-join
    (EXISTS, IN) matches one by equality or such a condition: no fact matches a NULL."""
    own = atom.variables()
    return any(
        (isinstance(literal, Condition) and literal.variables() & own and null_rejecting(literal.expression))
        or (isinstance(literal, Atom) and literal is not atom and semi_join_rejects(literal, own))
        for literal in body
    )


def semi_join_rejects(atom: Atom, own: set[str]) -> bool:
    """Whether the semi-join `atom` keeps no row where a variable of `own` is NULL: it matches one of them by
    equality (a shared variable, NULL matching nothing), or its condition rejects their NULLs."""
    if not atom.semi:
        return False
    if own & atom.variables() and not atom.nulls_equal:
        return True
    return any(variables_of(conjunct) & own and null_rejecting(conjunct) for conjunct in conjuncts(atom.on))


def null_rejecting(expression: exp.Expr) -> bool:
    if not isinstance(expression, COMPARISONS):
        return False
    return all(isinstance(node, STRICT) for node in expression.this.walk()) and all(
        isinstance(node, STRICT) for node in expression.expression.walk()
    )


def inner_join(rule: Rule, position: int) -> Rule:
    """The rule with the outer-joined atom at `position` made inner: each `own = other` conjunct of its ON
    condition (`other` a variable bound elsewhere) renames `own` to `other`; the others become conditions."""
    atom = atom_at(rule, position)
    own = atom.variables()
    inner = bound_by(rule.body)
    names: dict[str, str] = {}
    conditions: list[exp.Expr] = []
    for conjunct in conjuncts(atom.on):
        pair = equated_variables(conjunct)
        if pair is not None:
            left, right = pair
            if left in own and right in inner and left not in names:
                names[left] = right
                continue
            if right in own and left in inner and right not in names:
                names[right] = left
                continue
        if not isinstance(conjunct, exp.Boolean) or not conjunct.this:
            conditions.append(conjunct)
    joined = Atom(atom.relation, tuple(names.get(arg, arg) for arg in atom.args), call_args=atom.call_args)
    body = [joined if i == position else literal for i, literal in enumerate(rule.body)]
    body += [Condition(renamed(condition, names)) for condition in conditions]
    body = [rename_literal(literal, names) for literal in body]
    return Rule(rule.head, tuple(renamed(term, names) for term in rule.terms), tuple(body))


def rename_literal(literal: Literal, names: dict[str, str]) -> Literal:
    if isinstance(literal, Condition):
        return Condition(renamed(literal.expression, names))
    if isinstance(literal, Atom):
        on = renamed(literal.on, names) if literal.on is not None else None
        return replace(literal, args=tuple(names.get(arg, arg) for arg in literal.args), on=on)
    return replace(literal, expression=renamed(literal.expression, names))


def conjuncts(condition: exp.Expr | None) -> list[exp.Expr]:
    if condition is None:
        return []
    if isinstance(condition, exp.And):
        return conjuncts(condition.this) + conjuncts(condition.expression)
    if isinstance(condition, exp.Paren):
        return conjuncts(condition.this)
    return [condition]


def equated_variables(conjunct: exp.Expr) -> tuple[str, str] | None:
    """(a, b) when the conjunct is `a = b` between two variables."""
    if (
        isinstance(conjunct, exp.EQ)
        and isinstance(conjunct.this, exp.Column)
        and isinstance(conjunct.expression, exp.Column)
    ):
        return conjunct.this.name, conjunct.expression.name
    return None
