"""Magic sets (generalized supplementary magic sets): derive only the facts the query can use.

When a rule reads a derived relation with some arguments bound, by constants (`WHERE src = 7`, a bound
parameter) or by a join with a small relation or with bindings passed along the body, the relation is
replaced by an adorned copy (`reach_bf`: first argument bound, second free) whose rules start from a
magic relation holding the bindings that are asked for (`m_reach_bf`). Bindings travel sideways through
each body in join order: an atom passes its variables on when it is restricted by a bound variable or is
small. Magic rules compute the bindings each body passes to the adorned atoms it reads; supplementary
relations hold the join of a body's prefix so that it is computed once for the magic rule and once, not
twice, for the rule itself. A relation read with several binding patterns gets one copy per pattern.

Only relations with set semantics or a monotonic min/max/sum/count are rewritten (a UNION ALL recursion
counts derivations, which magic sets would change); for an aggregate the bound arguments must be group
keys, never the aggregated column. If the rewritten program does not stratify like the original one,
the original is kept.

The pass (`magic_sets`) keeps the rewrite only where recsql.magic allows it: always (on), never (off),
or where the estimates say it derives fewer facts (auto).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sqlglot import exp

from recsql.analysis import AnalysisError, stratify, strongly_connected_components
from recsql.optimizer.cardinality import Estimator
from recsql.optimizer.context import Context, Magic, Outcome
from recsql.optimizer.join_order import atom_at, inner_atom_positions
from translator.ir import Assignment, Atom, Condition, Literal, Program, Relation, Rule, bound_by, var

SMALL_ROWS = 10_000.0  # a relation this small passes its bindings on even when nothing restricts it
BOUND, FREE = "b", "f"
# Without recursion, magic sets must at least halve the derived facts: on Spark their extra relations are
# extra joins and shuffles, each magic relation computed again for every rule reading it.
NON_RECURSIVE_GAIN = 2.0


def magic_sets(context: Context) -> Outcome:
    """The pass: the program rewritten with magic sets, as recsql.magic decides (see the module's
    docstring), with the estimated derived facts that decided it. The rewritten rules are not in join
    order: the pipeline orders them next."""
    program, estimator, mode = context.program, context.estimator, context.settings.magic
    if mode == Magic.OFF:
        return context.unchanged("off (recsql.magic)")
    rewritten = magic_rewrite(program, estimator)
    if rewritten is program:
        return context.unchanged("not applicable")
    rewritten_estimator = context.estimate(rewritten)
    before, after = derived_rows(program, estimator), derived_rows(rewritten, rewritten_estimator)
    gain = 1.0 if any(component.recursive for component in stratify(program)) else NON_RECURSIVE_GAIN
    if mode == Magic.AUTO and after * gain >= before:
        needed = "" if gain == 1.0 else f" (no recursion: they must cut the facts by {gain:g}x)"
        return context.unchanged(f"not used: estimated {after:.0f} derived facts with, {before:.0f} without{needed}")
    return Outcome(rewritten, rewritten_estimator, f"used: estimated {after:.0f} derived facts instead of {before:.0f}")


def derived_rows(program: Program, estimator: Estimator) -> float:
    """The facts a program is expected to derive: the sum of its relations' estimated sizes."""
    return sum(estimator.relation(name).rows for name in program.relations)


@dataclass
class Rewrite:
    """The program being built: adorned copies, magic and supplementary relations and their rules."""

    source: Program
    estimator: Estimator
    relations: dict[str, Relation] = field(default_factory=dict)
    rules: list[Rule] = field(default_factory=list)
    pending: list[tuple[str, str]] = field(default_factory=list)  # (relation, adornment) to rewrite
    done: set[tuple[str, str]] = field(default_factory=set)
    supplementary: int = 0

    # -------------------------------------------------------------- names

    def adorned_name(self, name: str, adornment: str) -> str:
        return f"{name}_{adornment}"

    def magic_name(self, name: str, adornment: str) -> str:
        return f"m_{name}_{adornment}"

    # -------------------------------------------------------------- relations

    def eligible(self, name: str) -> bool:
        relation = self.source.relations.get(name)
        if (
            relation is None
            or name == self.source.output
            or relation.iteration.by_rounds
            or relation.window is not None
        ):  # bindings would filter the rows before the window keeps some
            return False
        rules = self.source.rules_for(name)
        return (
            bool(rules)
            and (relation.distinct or relation.aggregate is not None)
            and not any(rule.is_aggregate for rule in rules)
        )

    def adornment_of(self, atom: Atom, bound: frozenset[str]) -> str | None:
        """The binding pattern `atom` is read with, or None when it stays the original relation."""
        if atom.filters or atom.optional or atom.nulls_equal or atom.call_args or not self.eligible(atom.relation):
            return None
        relation = self.source.relations[atom.relation]
        aggregated = relation.aggregate.column if relation.aggregate else -1
        pattern = "".join(BOUND if arg in bound and i != aggregated else FREE for i, arg in enumerate(atom.args))
        return pattern if BOUND in pattern else None

    def request(self, name: str, adornment: str) -> str:
        """The adorned copy of `name` for `adornment`, queued for rewriting on first request."""
        key = (name, adornment)
        if key not in self.done:
            self.done.add(key)
            self.pending.append(key)
            relation = self.source.relations[name]
            self.relations[self.adorned_name(name, adornment)] = replace(
                relation, name=self.adorned_name(name, adornment), label=relation.display_name
            )
            bound_columns = tuple(c for c, mark in zip(relation.columns, adornment) if mark == BOUND)
            self.relations[self.magic_name(name, adornment)] = Relation(
                self.magic_name(name, adornment),
                bound_columns,
                distinct=True,
                label=f"magic {relation.display_name}",
            )
        return self.adorned_name(name, adornment)

    def new_supplementary(self, head: str, variables: list[str]) -> str:
        self.supplementary += 1
        name = f"sup_{head}_{self.supplementary}"
        self.relations[name] = Relation(name, tuple(v.lower() for v in variables), distinct=True, label=name)
        return name

    # -------------------------------------------------------------- rules

    def rewrite_rule(self, rule: Rule, head: str, magic: Atom | None, supplementary: bool) -> None:
        """Emit `rule` for relation `head`, restricted by `magic` (an adorned rule) or not (a rule of a
        relation kept whole), with magic rules for the adorned atoms it reads."""
        steps, equalities = self.sideways_order(rule, set(magic.args) if magic else set())
        conditions = [literal for literal in rule.body if isinstance(literal, Condition)]
        prefix: list[Literal] = [magic] if magic else []
        body: list[Literal] = []
        for literal, bound in steps:
            if isinstance(literal, Atom) and not literal.filters and not literal.optional:
                adornment = self.adornment_of(literal, bound)
                if adornment is not None:
                    adorned = self.request(literal.relation, adornment)
                    if supplementary and body:
                        prefix, body = self.cut(rule, head, prefix + body, steps, literal, conditions), []
                    self.magic_rule(literal, adornment, prefix + body, conditions, equalities)
                    literal = replace(literal, relation=adorned)
            body.append(literal)
        self.rules.append(Rule(head, rule.terms, tuple(prefix + body)))

    def cut(
        self,
        rule: Rule,
        head: str,
        prefix: list[Literal],
        steps: list[tuple[Literal, frozenset[str]]],
        at: Atom,
        conditions: list[Condition],
    ) -> list[Literal]:
        """A supplementary relation for the join of `prefix`, keeping the variables used from `at` on."""
        literals = [literal for literal, _ in steps]
        later: set[str] = set()
        for literal in literals[literals.index(at) :]:
            later |= literal.variables() | (literal.condition_variables() if isinstance(literal, Atom) else set())
        for term in rule.terms:
            later |= {c.name for c in term.find_all(exp.Column)}
        keep = sorted(bound_by(prefix) & later)
        name = self.new_supplementary(head, keep)
        self.rules.append(Rule(name, tuple(var(v) for v in keep), tuple(with_filters(prefix, conditions))))
        return [Atom(name, tuple(keep))]

    def magic_rule(
        self,
        atom: Atom,
        adornment: str,
        prefix: list[Literal],
        conditions: list[Condition],
        equalities: dict[str, exp.Expr],
    ) -> None:
        """m_q(bound arguments of `atom`) :- what is bound before it."""
        bound_args = tuple(arg for arg, mark in zip(atom.args, adornment) if mark == BOUND)
        name = self.magic_name(atom.relation, adornment)
        if (
            len(prefix) == 1
            and isinstance(prefix[0], Atom)
            and prefix[0].relation == name
            and prefix[0].args == bound_args
        ):
            return  # m_q(X) :- m_q(X): adds nothing
        available = bound_by(prefix)
        body = with_filters(prefix, conditions)
        body += [Assignment(v, equalities[v]) for v in dict.fromkeys(bound_args) if v not in available]
        self.rules.append(Rule(name, tuple(var(v) for v in bound_args), tuple(body)))

    def sideways_order(
        self, rule: Rule, bound: set[str]
    ) -> tuple[list[tuple[Literal, frozenset[str]]], dict[str, exp.Expr]]:
        """The body in the order bindings travel (atoms restricted by a binding first, then small relations
        that are not rewritten themselves, in join order), each
        literal with the variables bound before it, and the variables that equalities such as `X = 7` bind."""
        bound = set(bound)
        equalities: dict[str, exp.Expr] = {}
        conditions = [lit for lit in rule.body if isinstance(lit, (Condition, Assignment))]
        self.close(bound, conditions, equalities)
        remaining = [atom_at(rule, i) for i in inner_atom_positions(rule)]
        steps: list[tuple[Literal, frozenset[str]]] = []
        while remaining:
            passing = next((a for a in remaining if a.variables() & bound), None) or next(
                (a for a in remaining if self.small(a) and not self.eligible(a.relation)), None
            )
            if passing is None:
                break
            remaining.remove(passing)
            steps.append((passing, frozenset(bound)))
            bound |= passing.variables()
            self.close(bound, conditions, equalities)
        placed = {id(literal) for literal, _ in steps}
        steps += [(lit, frozenset()) for lit in rule.body if id(lit) not in placed]
        return steps, equalities

    @staticmethod
    def close(bound: set[str], conditions: list[Condition | Assignment], equalities: dict[str, exp.Expr]) -> None:
        """Variables bound by assignments and by `X = expression over bound variables`."""
        changed = True
        while changed:
            changed = False
            for literal in conditions:
                target: str | None
                if isinstance(literal, Assignment):
                    target, source = literal.variable, literal.expression
                elif isinstance(literal.expression, exp.EQ):
                    target, source = equality_target(literal.expression, bound)
                    if target is None:
                        continue
                else:
                    continue
                if target not in bound and {c.name for c in source.find_all(exp.Column)} <= bound:
                    bound.add(target)
                    equalities[target] = source
                    changed = True

    def small(self, atom: Atom) -> bool:
        if atom.call_args:
            return False
        return self.estimator.relation(atom.relation).rows <= SMALL_ROWS


def with_filters(prefix: list[Literal], conditions: list[Condition]) -> list[Literal]:
    """`prefix` plus the conditions it binds every variable of (filters pushed into magic rules)."""
    available = bound_by(prefix)
    kept = [literal for literal in prefix if not (isinstance(literal, Atom) and literal.optional)]
    return kept + [c for c in conditions if c.variables() <= available and c not in kept]


def equality_target(condition: exp.EQ, bound: set[str]) -> tuple[str | None, exp.Expr]:
    """For `X = e` (or `e = X`) with X a variable: X and e, the side that is not yet bound first."""
    for target, source in ((condition.left, condition.right), (condition.right, condition.left)):
        if isinstance(target, exp.Column) and target.name not in bound:
            return target.name, source
    return None, condition


def magic_rewrite(program: Program, estimator: Estimator) -> Program:
    """The program rewritten with magic sets, or the program itself when nothing is bound or the
    rewritten program would not stratify like the original."""
    rewrite = Rewrite(program, estimator)
    for rule in program.rules:
        if not rewrite.eligible(rule.head) or rule.head == program.output:
            rewrite.rewrite_rule(rule, rule.head, None, supplementary=False)
        else:
            rewrite.rules.append(rule)
    if not rewrite.pending:
        return program
    while rewrite.pending:
        name, adornment = rewrite.pending.pop(0)
        relation = program.relations[name]
        head = rewrite.adorned_name(name, adornment)
        bound_vars = [f"MAGIC{i}" for i, mark in enumerate(adornment) if mark == BOUND]
        for rule in program.rules_for(name):
            magic, renamed = magic_atom(rule, adornment, rewrite.magic_name(name, adornment), bound_vars)
            rewrite.rewrite_rule(renamed, head, magic, supplementary=relation.aggregate is None)
    relations = dict(program.relations)
    relations.update(rewrite.relations)
    rewritten = prune(replace(program, relations=relations, rules=rewrite.rules))
    return rewritten if stratifies_like(program, rewritten) else program


def magic_atom(rule: Rule, adornment: str, magic: str, fresh: list[str]) -> tuple[Atom, Rule]:
    """The magic atom restricting an adorned rule: the head terms at bound positions. A bound head term
    that is not a variable the rule's inner joins bind gets a fresh variable and an equality condition:
    the magic atom, joined first, must not bind a LEFT JOIN's variable, whose unmatched rows would keep
    the magic value where the rule gives NULL."""
    args, conditions = [], []
    inner = bound_by(rule.body)
    bound_terms = [term for term, mark in zip(rule.terms, adornment) if mark == BOUND]
    for term, name in zip(bound_terms, fresh):
        if isinstance(term, exp.Column) and term.name in inner and term.name not in args:
            args.append(term.name)
        else:
            args.append(name)
            conditions.append(Condition(exp.EQ(this=var(name), expression=term.copy())))
    return Atom(magic, tuple(args)), Rule(rule.head, rule.terms, rule.body + tuple(conditions))


def prune(program: Program) -> Program:
    """Drop the relations (and their rules) the answer no longer reads."""
    needed, stack = set(), [program.output]
    while stack:
        name = stack.pop()
        if name in needed:
            continue
        needed.add(name)
        stack.extend(read for read in program.reads(name) if read in program.relations)
    relations = {name: rel for name, rel in program.relations.items() if name in needed}
    rules = [rule for rule in program.rules if rule.head in needed]
    return replace(program, relations=relations, rules=rules)


def stratifies_like(original: Program, rewritten: Program) -> bool:
    """The rewritten program must pass the same checks, and each of its recursive components may only
    join relations that were already recursive together (magic and supplementary relations aside), so no
    aggregate or negation is pulled into a recursion it was not in."""
    try:
        stratify(rewritten)
    except AnalysisError:
        return False
    component_of = {}
    for number, component in enumerate(strongly_connected_components(original)):
        for name in component.relations:
            component_of[name] = number
    for component in strongly_connected_components(rewritten):
        origins = {
            component_of[origin_of(original, name)]
            for name in component.relations
            if origin_of(original, name) in component_of
        }
        if len(origins) > 1:
            return False
    return True


def origin_of(original: Program, name: str) -> str:
    """The original relation an adorned copy stands for (magic and supplementary relations: none)."""
    if name in original.relations:
        return name
    base, _, adornment = name.rpartition("_")
    if base in original.relations and set(adornment) <= {BOUND, FREE} and not name.startswith(("m_", "sup_")):
        return base
    return ""
