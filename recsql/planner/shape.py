"""The shape of a plan: what its strata do, without the names its relations and variables were given.

A Datalog program and its SQL twin name things differently (`tc(X, Y)` and `tc(SRC1, DST2)`, `n` and
`answer`) but, translated alike, plan alike: the same strata in the same order, each with its strategy and
iteration, the same rules with the same atoms in the same join order, the same delta variants. Two plans of
one shape run alike; `shape(a) == shape(b)` is what "the same plan" means in tests and benchmarks.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlglot import exp

from recsql.planner.plan import Plan, Stratum, Variant
from translator.ir import WILDCARD, Assignment, Atom, Condition, Literal, Rule, variables_of


def shape(plan: Plan) -> tuple[Any, ...]:
    """The plan's strata with their relations numbered in plan order (tables keep their names); a stratum
    copying a relation as it is (`answer(X, Y) :- tc(X, Y).`) is that relation."""
    numbers: dict[str, str] = {}
    kept = []
    for stratum in plan.strata:
        copied = copy_of(stratum)
        if copied is not None:
            numbers[stratum.relations[0]] = numbers.get(copied, copied)
            continue
        kept.append(stratum)
        for name in stratum.relations:
            numbers.setdefault(name, f"r{len(set(numbers.values()))}")
    strata = []
    for stratum in kept:
        relations = [plan.program.relations[name] for name in stratum.relations]
        strata.append(
            (
                tuple(numbers[relation.name] for relation in relations),
                tuple((relation.columns.__len__(), relation.distinct, relation.aggregate) for relation in relations),
                stratum.component.recursive,
                stratum.strategy,
                stratum.iteration,
                tuple(rule_shape(rule, numbers) for rule in stratum.exit_rules),
                tuple(variant_shape(variant, numbers) for variant in stratum.variants),
                stratum.opaque is not None,
                stratum.part_aggregate is not None,
                stratum.exit_in_tasks,
                stratum.owner,
                stratum.stop is not None,
                stratum.single_query.fits if stratum.single_query is not None else None,
            )
        )
    return tuple(strata)


def copy_of(stratum: Stratum) -> str | None:
    """The relation a stratum of one rule `r(X, Y) :- s(X, Y).` copies, as it is."""
    if stratum.component.recursive or len(stratum.exit_rules) != 1 or stratum.variants:
        return None
    (rule,) = stratum.exit_rules
    if len(rule.body) != 1 or not isinstance(rule.body[0], Atom):
        return None
    atom = rule.body[0]
    plain = atom.on is None and not (atom.negated or atom.semi or atom.optional or atom.call_args)
    same = [term.name if isinstance(term, exp.Column) and not term.table else None for term in rule.terms]
    return atom.relation if plain and same == list(atom.args) and len(set(atom.args)) == len(atom.args) else None


def mentioned(literal: Literal) -> list[str]:
    """The variables a literal names, as often as it names them."""
    if isinstance(literal, Atom):
        found = list(literal.args)
        return found + (sorted(variables_of(literal.on)) if literal.on is not None else [])
    if isinstance(literal, Assignment):
        return [literal.variable, *variables_of(literal.expression)]
    return sorted(variables_of(literal.expression))


def variant_shape(variant: Variant, numbers: dict[str, str]) -> tuple[Any, ...]:
    return rule_shape(variant.rule, numbers), variant.versions


def rule_shape(rule: Rule, numbers: dict[str, str]) -> tuple[Any, ...]:
    """A rule with its variables numbered in order of appearance, body first; one used once is `_`."""
    variables: dict[str, str] = {}
    uses = Counter(variable for literal in rule.body for variable in mentioned(literal))
    uses.update(variable for term in rule.terms for variable in variables_of(term))

    def named(variable: str) -> str:
        if variable == WILDCARD or uses[variable] == 1:
            return WILDCARD
        return variables.setdefault(variable, f"v{len(variables)}")

    def expression(node: exp.Expr) -> str:
        def renamed(sub: exp.Expr) -> exp.Expr:
            if isinstance(sub, exp.Column) and not sub.table:
                return exp.column(named(sub.name))
            return sub

        return node.transform(renamed).sql(dialect="spark")

    def literal(item: Literal) -> tuple[Any, ...]:
        if isinstance(item, Atom):
            on = expression(item.on) if item.on is not None else None
            return (
                "atom",
                numbers.get(item.relation, item.relation),
                tuple(named(arg) for arg in item.args),
                item.negated,
                item.semi,
                item.optional,
                on,
            )
        if isinstance(item, Assignment):
            return "assign", named(item.variable), expression(item.expression)
        assert isinstance(item, Condition)
        return "condition", expression(item.expression)

    body = tuple(literal(item) for item in rule.body)
    head = (numbers.get(rule.head, rule.head), tuple(expression(term) for term in rule.terms))
    return head, body, rule.joins
