"""The programs that maintain one stratum of a materialized view's program, as rewrites of its rules
(Datalog in, Datalog out: the same optimizer, planner and strategies run them as any query).

A relation the stratum reads from outside (a table, or a relation of a lower stratum already maintained)
is known in four versions (`Inputs`): before the change, after it, the facts it gained, the facts it
lost. A stratum of set relations without aggregation is maintained by DRed (Gupta, Mumick and
Subrahmanian's delete and re-derive):

1. over-deletion: every fact with a derivation that read a lost fact (or, through a negation, a gained
   one), to a fixpoint over the old facts;
2. what is left (the old facts less those) is sound;
3. insertion and re-derivation: the over-deleted facts that still have a derivation from what is left,
   and the facts derived from the gained ones (or, through a negation, from lost ones), to a fixpoint.

A stratum with nothing lost skips 1 and the re-derivation: its insertions are a semi-naive evaluation
seeded with the facts derived from the gained ones. The fixpoint of 3 does not compare its facts with
the (large) old relation at each iteration, only once at its end: what it derives again of the old facts
stays within the part of the relation the change reached.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations

from sqlglot import exp

from recsql.analysis import Component
from translator.ir import (
    WILDCARD,
    Aggregate,
    Assignment,
    Atom,
    Condition,
    Iteration,
    Literal,
    Program,
    Relation,
    Rule,
    var,
)


@dataclass(frozen=True)
class Inputs:
    """The relations naming a relation the stratum reads from outside: before and after the change, and
    the facts it gained and lost (None: none)."""

    old: str
    new: str
    plus: str | None = None
    minus: str | None = None

    @property
    def changed(self) -> bool:
        return self.plus is not None or self.minus is not None


def why_recomputed(program: Program, component: Component, aggregates_kept: bool = False) -> str:
    """Why DRed does not maintain a stratum (it is computed again from its inputs' new versions); "" when
    it does. `aggregates_kept`: an aggregate in the recursion is no reason (see group_rules.regrowable)."""
    for name in component.relations:
        relation = program.relations[name]
        if relation.aggregate is not None and not aggregates_kept:
            return f"{relation.display_name} aggregates with {relation.aggregate.function.value}() in its recursion"
        if relation.iteration is Iteration.BAG:
            return f"{relation.display_name} iterates as UNION ALL"
        if not relation.distinct and not component.recursive:  # a recursion's facts are a set
            return f"{relation.display_name} keeps duplicate rows"
        if relation.max_level is not None:
            return f"{relation.display_name} has a MAX RECURSION LEVEL"
        if relation.window is not None:
            return f"{relation.display_name} keeps some rows only (LIMIT / OFFSET)"
    for rule in program.rules:
        if rule.head in component and rule.is_aggregate:
            return f"{program.relations[rule.head].display_name} aggregates (GROUP BY)"
        if rule.head in component and any(atom.optional for atom in rule.atoms):
            return f"{program.relations[rule.head].display_name} has an outer join"
    return ""


def changes(rules: list[Rule], inputs: dict[str, Inputs], gains: bool) -> bool:
    """Whether the change can add facts to the stratum (`gains`: an input gained facts a rule reads
    positively, or lost facts a rule reads through a negation), or remove some (the other way round)."""
    for rule in rules:
        for atom in rule.atoms:
            change = inputs.get(atom.relation)
            if change is None:
                continue
            adding, removing = (change.minus, change.plus) if atom.negated else (change.plus, change.minus)
            if (adding if gains else removing) is not None:
                return True
    return False


class StratumRules:
    """The rules of one stratum of a view's program and the names the maintenance programs give its
    relations' versions."""

    def __init__(self, program: Program, component: Component, inputs: dict[str, Inputs]):
        self.program = program
        self.component = component
        self.inputs = inputs
        self.rules = [rule for rule in program.rules if rule.head in component]

    # -------------------------------------------------------------- programs

    def over_deletion(self, old: dict[str, str], target: str) -> Program:
        """The facts of `target` (one relation of the stratum) with a derivation over the old versions
        that reads a lost fact, a gained fact through a negation, or an over-deleted fact."""
        rules = []
        for rule in self.rules:
            for position, literal in enumerate(rule.body):
                cause = self.deleting(literal)
                if cause is None:
                    continue
                body = tuple(
                    cause if i == position else self.version(other, old, "old") for i, other in enumerate(rule.body)
                )
                rules.append(Rule(deleted(rule.head), rule.terms, body))
        return self.program_of(rules, deleted, target, "over-deleted")

    def insertion(self, old: dict[str, str], over_deleted: dict[str, str] | None, target: str) -> Program:
        """Facts of `target` derivable after the change that the facts kept (the old ones less the
        over-deleted: read as the old, less those, never copied) may lack: the over-deleted ones
        derivable again from what is kept, those derived from gained facts, and, to a fixpoint, those
        derived from these. When nothing can insert a fact (the change only deletes), every fact derived
        is an over-deleted one: each rule is restricted to those, and the fixpoint stays within them."""
        rules = []
        only_again = over_deleted is not None and not changes(self.rules, self.inputs, gains=True)

        def after(literal: Literal, position: int) -> tuple[Literal, ...]:
            """What `literal` reads after the change: the kept facts of the stratum, the new versions."""
            if not self.reads_stratum(literal):
                return (self.version(literal, {}, "new"),)
            return kept(literal, old[literal.relation], over_deleted and over_deleted[literal.relation], position)

        for rule in self.rules:
            if over_deleted is not None:
                body = sum((after(literal, i) for i, literal in enumerate(rule.body)), ())
                rules.append(Rule(inserted(rule.head), rule.terms, body + restriction(rule, over_deleted[rule.head])))
            for position, literal in enumerate(rule.body):
                for cause in self.inserting(literal):
                    body = sum((after(other, i) for i, other in enumerate(rule.body) if i != position), ())
                    rules.append(Rule(inserted(rule.head), rule.terms, body + cause))
            own = [i for i, literal in enumerate(rule.body) if self.reads_stratum(literal)]
            for size in range(1, len(own) + 1):
                for chosen in combinations(own, size):
                    body = sum(
                        (
                            (replace(literal, relation=inserted(literal.relation)),)
                            if i in chosen
                            else after(literal, i)
                            for i, literal in enumerate(rule.body)
                        ),
                        (),
                    )
                    if only_again:
                        body += restriction(rule, over_deleted[rule.head])
                    rules.append(Rule(inserted(rule.head), rule.terms, body))
        return self.program_of(rules, inserted, target, "derived")

    def closure_insertion(self, step: str, old: str, target: str) -> Program:
        """For a closure of `step` (see `closure_of`) that only gained steps: its new facts in a few
        iterations instead of one per step of the longest new path, the old facts serving as every
        stretch of old steps: a new path is old paths joined by gained steps. The old facts are read
        twice, outside the recursion, which joins only the few paths ending with a gained step."""
        gained = self.inputs[step].plus
        reach = inserted("step")  # (u, w): an old path from u (or none) and a gained step to w
        through = inserted("gained")  # (a, w): a path ending with a gained step
        rules = [
            Rule(reach, (var("u"), var("w")), (Atom(gained, ("u", "w")),)),
            Rule(reach, (var("u"), var("w")), (Atom(old, ("u", "v")), Atom(gained, ("v", "w")))),
            Rule(through, (var("a"), var("w")), (Atom(reach, ("a", "w")),)),
            Rule(through, (var("a"), var("w")), (Atom(through, ("a", "u")), Atom(reach, ("u", "w")))),
        ]
        rules += [
            Rule(inserted(target), (var("a"), var("d")), (Atom(through, ("a", "d")),)),
            Rule(inserted(target), (var("a"), var("d")), (Atom(through, ("a", "w")), Atom(old, ("w", "d")))),
        ]
        program = self.closure_program(rules, through, target, "derived")
        program.relations[reach] = Relation(reach, ("u", "w"), distinct=True, label="gained steps after old paths")
        return program

    def closure_rederivation(self, step: str, old: str, over_deleted: str, target: str) -> Program:
        """For a closure of `step` that only lost steps: the over-deleted paths that remain, each a
        step of the new version followed by a kept path (the old facts less the over-deleted) or by a
        path found again; every rule is restricted to the over-deleted paths (NULL equal to NULL), so
        the joins stay within them."""
        new, again = self.inputs[step].new, inserted(target)
        within = Atom(over_deleted, ("a", "d"), nulls_equal=True)
        rules = [
            Rule(again, (var("a"), var("d")), body + (within,))
            for body in (
                (Atom(new, ("a", "d")),),
                (Atom(new, ("a", "w")), *kept(Atom(target, ("w", "d")), old, over_deleted, 1)),
                (Atom(new, ("a", "w")), Atom(again, ("w", "d"))),
            )
        ]
        return self.program_of(rules, inserted, target, "derived")

    def closure_over_deletion(self, step: str, old: str, target: str) -> Program:
        """For a closure of `step` that lost steps: the old facts with a path through a lost step (no
        recursion: the old facts are every old path)."""
        lost = self.inputs[step].minus
        through = deleted("lost")
        rules = [
            Rule(through, (var("a"), var("w")), body)
            for body in ((Atom(lost, ("a", "w")),), (Atom(old, ("a", "u")), Atom(lost, ("u", "w"))))
        ]
        rules += [
            Rule(deleted(target), (var("a"), var("d")), (Atom(through, ("a", "d")),)),
            Rule(deleted(target), (var("a"), var("d")), (Atom(through, ("a", "w")), Atom(old, ("w", "d")))),
        ]
        return self.closure_program(rules, through, target, "over-deleted")

    def closure_program(self, rules: list[Rule], through: str, target: str, what: str) -> Program:
        program = self.program_of(rules, inserted if what == "derived" else deleted, target, what)
        program.relations[through] = Relation(through, ("a", "w"), distinct=True, label=f"paths ({what})")
        return program

    def improvement(self, old: dict[str, str], target: str) -> Program:
        """For a stratum of min()/max() relations whose inputs only gained facts: the groups whose value
        improves, with the better value. Values only improve then, and an improved value comes from a
        derivation reading a gained fact or an improved one (the insertion's rules); every candidate is
        compared with the old value of its group as it is derived, so only improvements travel on."""
        program = self.insertion(old, None, target)
        names = {inserted(name): name for name in self.component.relations}
        program.rules = [
            Rule(
                rule.head,
                rule.terms,
                rule.body + improves(self.program.relations[names[rule.head]], rule, old[names[rule.head]]),
            )
            for rule in program.rules
        ]
        for derived, name in names.items():
            program.relations[derived] = replace(
                program.relations[derived], aggregate=self.program.relations[name].aggregate
            )
        return program

    def recomputation(self, target: str) -> Program:
        """The stratum's rules over the new versions of what they read."""
        own = {name: name for name in self.component.relations}
        rules = [
            Rule(rule.head, rule.terms, tuple(self.version(literal, own, "new") for literal in rule.body))
            for rule in self.rules
        ]
        relations = {name: self.program.relations[name] for name in self.component.relations}
        return Program(relations, rules, target)

    # -------------------------------------------------------------- literals

    def reads_stratum(self, literal: Literal) -> bool:
        return isinstance(literal, Atom) and literal.relation in self.component and not literal.call_args

    def version(self, literal: Literal, own: dict[str, str], version: str) -> Literal:
        """A literal reading a version of what it reads: `own` names the stratum's relations, `version`
        (old or new) the inputs'."""
        if not isinstance(literal, Atom) or literal.call_args:
            return literal
        if literal.relation in self.component:
            return replace(literal, relation=own[literal.relation])
        change = self.inputs.get(literal.relation)
        return replace(literal, relation=getattr(change, version)) if change is not None else literal

    def deleting(self, literal: Literal) -> Atom | None:
        """The literal restricted to what may delete a fact through it (None: nothing)."""
        if not isinstance(literal, Atom) or literal.call_args:
            return None
        if literal.relation in self.component:
            return replace(literal, relation=deleted(literal.relation))
        change = self.inputs.get(literal.relation)
        if change is None:
            return None
        if literal.negated:
            return replace(literal, relation=change.plus, negated=False, semi=True) if change.plus else None
        return replace(literal, relation=change.minus) if change.minus else None

    def inserting(self, literal: Literal) -> list[tuple[Literal, ...]]:
        """The literals that stand for `literal` where it may insert a fact (none, or one choice)."""
        if not isinstance(literal, Atom) or literal.call_args or literal.relation in self.component:
            return []
        change = self.inputs.get(literal.relation)
        if change is None:
            return []
        if literal.negated:  # a fact that blocked the row is gone, and none blocks it now
            if change.minus is None:
                return []
            return [
                (
                    replace(literal, relation=change.new),
                    replace(literal, relation=change.minus, negated=False, semi=True),
                )
            ]
        return [(replace(literal, relation=change.plus),)] if change.plus else []

    def program_of(self, rules: list[Rule], naming, target: str, what: str) -> Program:
        relations = {}
        for name in self.component.relations:
            relation = self.program.relations[name]
            relations[naming(name)] = Relation(
                naming(name), relation.columns, distinct=True, label=f"{relation.display_name} ({what})"
            )
        return Program(relations, rules, naming(target))


def closure_of(program: Program, component: Component) -> str | None:
    """The relation whose transitive closure the stratum is, if it is one: a single binary relation
    r with the rules r(x, y) :- e(x, y) and r(x, z) :- r(x, y), e(y, z) (or e(x, y), r(y, z), or
    r(x, y), r(y, z)), e read from outside the stratum."""
    if len(component.relations) != 1:
        return None
    (name,) = component.relations
    rules = program.rules_for(name)
    if len(rules) != 2 or len(program.relations[name].columns) != 2:
        return None
    plain = all(
        isinstance(literal, Atom)
        and not (literal.filters or literal.optional or literal.call_args or literal.nulls_equal)
        and len(set(literal.args)) == 2
        and "_" not in literal.args
        for rule in rules
        for literal in rule.body
    )
    heads = all(all(isinstance(term, exp.Column) for term in rule.terms) for rule in rules)
    if not plain or not heads:
        return None
    exit_rule, recursive = sorted(rules, key=lambda rule: any(atom.relation == name for atom in rule.atoms))
    if len(exit_rule.body) != 1 or exit_rule.body[0].relation == name or len(recursive.body) != 2:
        return None
    step = exit_rule.body[0].relation
    if [term.name for term in exit_rule.terms] != list(exit_rule.body[0].args):
        return None
    first, second = recursive.body
    x, z = (term.name for term in recursive.terms)
    chained = first.args[1] == second.args[0] and first.args[0] == x and second.args[1] == z and x != z
    kinds = {first.relation, second.relation}
    return step if chained and kinds <= {name, step} and name in kinds else None


def deleted(name: str) -> str:
    return f"{name}__overdeleted"


def inserted(name: str) -> str:
    return f"{name}__derived"


EXTREMES = tuple(function for function in Aggregate if function.is_extremum)
SUMS = tuple(function for function in Aggregate if function.is_sum)


def aggregated_by(program: Program, component: Component, functions: tuple[Aggregate, ...]) -> bool:
    """Whether every relation of the stratum keeps one of `functions` per group (EXTREMES: improvement
    applies), and nothing else keeps the stratum from being maintained."""
    return all(
        program.relations[name].aggregate is not None and program.relations[name].aggregate.function in functions
        for name in component.relations
    ) and not why_recomputed(program, component, True)


def improves(relation: Relation, rule: Rule, old: str) -> tuple[Literal, ...]:
    """Literals keeping the rule's candidates better than the old value of their group (or of a group
    without one): the head's group terms bound to variables, and no old fact of the group as good."""
    literals: list[Literal] = []
    args = []
    for position, term in enumerate(rule.terms):
        if position == relation.aggregate.column:
            args.append("__old_value")
            value = term
        elif isinstance(term, exp.Column):
            args.append(term.name)
        else:
            args.append(f"__group{position}")
            literals.append(Assignment(f"__group{position}", term.copy()))
    compare = relation.aggregate.function.better(or_equal=True)
    on = compare(this=var("__old_value"), expression=value.copy())
    return (*literals, Atom(old, tuple(args), negated=True, on=on))


def kept(atom: Atom, old: str, over_deleted: str | None, position: int) -> tuple[Literal, ...]:
    """An atom reading the facts kept of a relation: its old facts, less the over-deleted (NULL equal to
    NULL); a wildcard becomes a variable of its own, for the over-deleted fact to match whole."""
    if over_deleted is None:
        return (replace(atom, relation=old),)
    args = tuple(f"__kept{position}_{i}" if arg == WILDCARD else arg for i, arg in enumerate(atom.args))
    return replace(atom, relation=old, args=args), Atom(over_deleted, args, negated=True, nulls_equal=True)


def restriction(rule: Rule, over_deleted: str) -> tuple[Literal, ...]:
    """Literals that keep the rule's derivations of over-deleted facts only: the head's terms joined
    (NULL equal to NULL) with the facts of `over_deleted`."""
    args, conditions = [], []
    for position, term in enumerate(rule.terms):
        if isinstance(term, exp.Column) and term.name not in args:
            args.append(term.name)
            continue
        fresh = f"__head{position}"
        args.append(fresh)
        conditions.append(Condition(exp.NullSafeEQ(this=var(fresh), expression=term.copy())))
    return (Atom(over_deleted, tuple(args), nulls_equal=True), *conditions)
