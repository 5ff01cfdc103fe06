"""DRed on groups: the programs that maintain a stratum of aggregates in recursion (min()/max() whose
inputs only lost facts, sum()/count() under any change) by deriving again only the groups a change
affects, from the values of the groups that stand.

1. the affected groups (`affected_groups`): under min()/max(), the groups whose old value came from a
   derivation that is gone (reading a lost fact or an affected group, and deriving exactly the group's
   old value); under sum()/count(), the groups one of whose contributions changed: a derivation that
   appears or goes with a changed fact, or that reads an affected group;
2. their values after the change (`affected_rederivation`): the stratum's rules restricted to them,
   reading the stratum's relations as the groups that stand (old values) or as the affected groups
   being derived again. Under sum()/count(), each contributor counts once: the contributions of the
   standing groups are summed per group first (two equal values stay two).

A group none of whose derivations a change reaches keeps its value, so the rest of the relation is
never read but to join with the few affected groups.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from recsql.analysis import Component
from recsql.views.delta_rules import EXTREMES, SUMS, StratumRules, aggregated_by, inserted
from translator.contributions import contributor
from translator.ir import WILDCARD, Atom, Condition, Literal, Program, Relation, Rule, var, variables_of


def affected_groups(stratum: StratumRules, old: dict[str, str], target: str) -> Program:
    """For a stratum of aggregates in recursion (see `regrowable`): the groups of `target` whose
    value may change (its group columns). Under min()/max() with only lost facts, a group is
    affected when its old value came from a derivation that is gone: one reading a lost fact (a
    gained one through a negation) or the old value of an affected group, and deriving exactly the
    group's old value (a derivation that did not give it its value changes nothing by going).
    Under sum()/count(), every contribution counts: a group is affected by a derivation read from a
    changed fact, in either direction, or from an affected group."""
    extreme = stratum.program.relations[target].aggregate.function in EXTREMES
    rules = []
    for rule in stratum.rules:
        head = stratum.program.relations[rule.head]
        kept_value = tight(head, rule, old[rule.head]) if extreme else ()
        for position, literal in enumerate(rule.body):
            before, after = (rest_of_body(stratum, rule, old, version, position) for version in ("old", "new"))
            if stratum.reads_stratum(literal):
                relation = stratum.program.relations[literal.relation]
                cause = Atom(affected(literal.relation), tuple(literal.args[i] for i in relation.group_key))
                bodies = (
                    [(cause, stratum.version(literal, old, "old"), *before)]
                    if extreme
                    else [(cause, *before), (cause, *after)]
                )
            else:
                lost = stratum.deleting(literal)
                bodies = [(lost, *before)] if lost is not None else []
                if not extreme:
                    bodies += [(*cause, *after) for cause in stratum.inserting(literal)]
            rules += [Rule(affected(rule.head), group_terms(head, rule), body + kept_value) for body in bodies]
    relations = {}
    for name in stratum.component.relations:
        relation = stratum.program.relations[name]
        relations[affected(name)] = Relation(
            affected(name),
            tuple(relation.columns[i] for i in relation.group_key),
            distinct=True,
            label=f"{relation.display_name} (affected groups)",
        )
    return Program(relations, rules, affected(target))


def rest_of_body(
    stratum: StratumRules, rule: Rule, old: dict[str, str], version: str, position: int
) -> tuple[Literal, ...]:
    """The rule's literals but the one at `position`, reading the `version` (old or new) of what they read."""
    return tuple(stratum.version(other, old, version) for i, other in enumerate(rule.body) if i != position)


def affected_rederivation(stratum: StratumRules, old: dict[str, str], groups: dict[str, str], target: str) -> Program:
    """The values of the affected groups (`groups`: each relation's, from `affected_groups`) after the
    change: every rule restricted to them, reading a relation of the stratum as its unaffected groups
    (their old values stand) or as the affected ones being derived again, the inputs as they are now.
    A sum()/count() counts each contributor once (its largest value): the contributions of the
    unaffected groups are summed per group first, so that two with the same value stay two."""
    rules = []
    relations = {
        inserted(name): replace(
            stratum.program.relations[name],
            name=inserted(name),
            label=f"{stratum.program.relations[name].display_name} (derived again)",
        )
        for name in stratum.component.relations
    }
    for number, rule in enumerate(stratum.rules):
        head = stratum.program.relations[rule.head]
        if head.aggregate.function in SUMS:  # its contributions read every column its atoms join
            rule, contributors = contributor(rule, stratum.program.relations, stratum.component.relations)
        within = group_restriction(head, rule, groups[rule.head])
        own = [i for i, literal in enumerate(rule.body) if stratum.reads_stratum(literal)]
        new = [
            literal if stratum.reads_stratum(literal) else stratum.version(literal, {}, "new") for literal in rule.body
        ]
        if not own:
            rules.append(Rule(inserted(rule.head), rule.terms, tuple(new) + within))
            continue
        (position,) = own
        atom = rule.body[position]
        keys = tuple(atom.args[i] for i in stratum.program.relations[atom.relation].group_key)
        recursive = replace(atom, relation=inserted(atom.relation))
        unaffected = (
            replace(atom, relation=old[atom.relation]),
            Atom(groups[atom.relation], keys, negated=True, nulls_equal=True),
        )
        rules.append(Rule(inserted(rule.head), rule.terms, (*new[:position], recursive, *new[position + 1 :]) + within))
        body = (*new[:position], *unaffected, *new[position + 1 :]) + within
        if head.aggregate.function in EXTREMES:
            rules.append(Rule(inserted(rule.head), rule.terms, body))
            continue
        standing, summed = contributions_summed(head, rule, body, contributors, f"{rule.head}__standing{number}")
        relations.update(standing)
        rules += summed
    return Program(relations, rules, inserted(target))


def group_terms(relation: Relation, rule: Rule) -> tuple[exp.Expression, ...]:
    return tuple(term.copy() for i, term in enumerate(rule.terms) if i != relation.aggregate.column)


def tight(relation: Relation, rule: Rule, old: str) -> tuple[Literal, ...]:
    """Literals keeping the rule's derivations that gave their group its old value (`old`: the
    relation's old facts): the group's old fact, its value equal to the one derived."""
    value = exp.NullSafeEQ(this=var("__old_value"), expression=rule.terms[relation.aggregate.column].copy())
    return of_groups(relation, rule, old, {relation.aggregate.column: "__old_value"}) + (Condition(value),)


def group_restriction(relation: Relation, rule: Rule, groups: str) -> tuple[Literal, ...]:
    """Literals keeping the rule's derivations for the groups of `groups` (NULL equal to NULL)."""
    return of_groups(relation, rule, groups, {}, nulls_equal=True)


def of_groups(
    relation: Relation, rule: Rule, name: str, others: dict[int, str], nulls_equal: bool = False
) -> tuple[Literal, ...]:
    """An atom of `name` whose group columns are the rule's head groups (a head term other than a fresh
    variable is matched by a condition), its other columns the variables `others` gives by position."""
    args, conditions = [], []
    for position in range(len(rule.terms)):
        if position in others:
            args.append(others[position])
            continue
        if position == relation.aggregate.column:
            continue
        term = rule.terms[position]
        if isinstance(term, exp.Column) and term.name not in args:
            args.append(term.name)
            continue
        args.append(f"__group{position}")
        conditions.append(Condition(exp.NullSafeEQ(this=var(f"__group{position}"), expression=term.copy())))
    return (Atom(name, tuple(args), nulls_equal=nulls_equal), *conditions)


def affected(name: str) -> str:
    return f"{name}__affected"


def contributions_summed(
    relation: Relation, rule: Rule, body: tuple[Literal, ...], contributors: tuple[str, ...], name: str
) -> tuple[dict[str, Relation], list[Rule]]:
    """A sum()/count() rule's contributions from `body` (which reads no relation of the stratum), summed
    per group into `inserted(rule.head)`: the largest value of each contributor per group (`name`),
    their sum per group (`name`_sum), one row per group for the head (as one contribution)."""
    value = relation.aggregate.column
    groups = [f"__g{i}" for i in relation.group_key]
    by_contributor = Relation(name, (*groups, *(f"__k{i}" for i in range(len(contributors))), "__c"))
    per_group = Relation(f"{name}_sum", (*groups, "__s"))
    largest = Rule(
        name,
        (*group_terms(relation, rule), *(var(k) for k in contributors), exp.Max(this=rule.terms[value].copy())),
        body,
    )
    keys = tuple(var(g) for g in groups)
    summed = Rule(per_group.name, (*keys, exp.Sum(this=var("__c"))), (Atom(name, by_contributor.columns),))
    terms = [var(groups[relation.group_key.index(i)]) if i != value else var("__s") for i in range(len(rule.terms))]
    head = Rule(inserted(rule.head), tuple(terms), (Atom(per_group.name, per_group.columns),))
    return {name: by_contributor, per_group.name: per_group}, [largest, summed, head]


def regrowable(program: Program, component: Component) -> bool:
    """Whether the stratum's aggregates in recursion are maintained by deriving again the groups a change
    affects (`affected_groups`): every relation keeps a min()/max() (then only when its inputs only lose
    facts), or every one a sum()/count(), each by some group, nothing else keeps it from being
    maintained, and values flow linearly (`values_flow_linearly`)."""
    return (
        (aggregated_by(program, component, EXTREMES) or aggregated_by(program, component, SUMS))
        and all(program.relations[name].group_key for name in component.relations)
        and values_flow_linearly(program, component)
    )


def values_flow_linearly(program: Program, component: Component) -> bool:
    """Whether each rule of the stratum reads the stratum at most once, and the value it reads there only
    into the value it derives (the re-derivation of affected groups applies)."""
    for rule in program.rules:
        if rule.head not in component:
            continue
        own = [literal for literal in rule.body if isinstance(literal, Atom) and literal.relation in component]
        if len(own) > 1 or any(
            atom.filters or atom.call_args or atom.optional or WILDCARD in atom.args for atom in own
        ):
            return False
        if own and not value_only_in_head(program, rule, own[0]):
            return False
    return True


def value_only_in_head(program: Program, rule: Rule, atom: Atom) -> bool:
    """Whether the value an atom reads of an aggregate relation is a variable used only by the value the
    rule derives (not by its groups, conditions or other literals)."""
    value = atom.args[program.relations[atom.relation].aggregate.column]
    head = program.relations[rule.head]
    if value == WILDCARD or list(atom.args).count(value) > 1:
        return False
    groups = [term for i, term in enumerate(rule.terms) if i != head.aggregate.column]
    others = [literal for literal in rule.body if literal is not atom]
    return not any(value in variables_of(term) for term in groups) and not any(
        value in literal.variables() or (isinstance(literal, Atom) and value in literal.condition_variables())
        for literal in others
    )
