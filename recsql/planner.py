"""Planner: turns an optimized program into evaluation steps, one per strongly connected component.

A recursive component is evaluated semi-naively. For each recursive rule the planner emits one delta
variant per body atom of the component: in variant j, atom j reads the facts new in the last iteration
(Δ), the atoms before it read everything known (full), the atoms after it what was known before the last
iteration (old). Every combination of facts with at least one new fact is then joined exactly once.
The Δ atom drives its variant's join order; the order is chosen again each iteration from the sizes seen
in the last one. UNION ALL components follow the SQL standard instead: every recursive reference reads
the previous round's rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from recsql.analysis import Component
from recsql.optimizer import Optimized
from recsql.optimizer.cardinality import atom_estimate
from recsql.optimizer.explain import explain_passes
from recsql.optimizer.ordering import order_body
from translator.ir import Atom, Iteration, Program, Rule

FULL, DELTA, OLD = "full", "delta", "old"
AUTO, LOCAL, DISTRIBUTED = "auto", "local", "distributed"


@dataclass(frozen=True)
class Variant:
    """A rule with a version (full / delta / old) chosen for each body atom of the component."""

    rule: Rule
    versions: tuple[str | None, ...]  # per body literal; None for literals outside the component

    @property
    def driver(self) -> int | None:
        """The body position of the Δ atom (semi-naive variants)."""
        return self.versions.index(DELTA) if self.versions.count(DELTA) == 1 else None

    def __str__(self) -> str:
        marks = {DELTA: "Δ", OLD: "old ", FULL: ""}
        parts = []
        for literal, version in zip(self.rule.body, self.versions):
            text = str(literal)
            parts.append(marks[version] + text if version else text)
        head = str(self.rule).split(" :- ")[0]
        return f"{head} :- {', '.join(parts)}."


@dataclass(frozen=True)
class Stratum:
    component: Component
    exit_rules: tuple[Rule, ...]
    variants: tuple[Variant, ...]
    iteration: Iteration
    strategy: str = DISTRIBUTED  # LOCAL (in this process, over Arrow) or DISTRIBUTED (Spark jobs)
    capacity: int | None = None  # LOCAL chosen from estimates: past this many facts it moves to Spark

    @property
    def relations(self) -> tuple[str, ...]:
        return self.component.relations

    @property
    def inputs(self) -> dict[str, Atom]:
        """The relations and tables the stratum reads from outside itself (an atom reading each)."""
        rules = list(self.exit_rules) + [variant.rule for variant in self.variants]
        return {
            atom.relation: atom
            for rule in rules
            for atom in rule.atoms
            if atom.relation not in self.relations and not atom.call_args
        }


class Plan:
    def __init__(self, optimized: Optimized, strata: tuple[Stratum, ...]):
        self.optimized = optimized
        self.program: Program = optimized.program
        self.strata = strata

    @property
    def local(self) -> bool:
        """Every stratum is planned to run in this process: the whole query can, without Spark."""
        return all(stratum.strategy == LOCAL for stratum in self.strata)

    def order_variant(self, variant: Variant, delta_rows: dict[str, float]) -> Variant:
        """`variant` with its joins ordered for a Δ of the given size (rows seen in the last iteration)."""
        return order_variant(self.optimized, variant, delta_rows)

    def explain(self) -> str:
        lines = explain_passes(self.optimized)
        lines += ["", "== Strata =="]
        for number, stratum in enumerate(self.strata, start=1):
            names = ", ".join(self.program.relations[r].display_name for r in stratum.relations)
            if not stratum.component.recursive:
                lines.append(f"{number}. {names}")
                continue
            how = "UNION ALL iteration" if stratum.iteration is Iteration.BAG else "semi-naive fixpoint"
            where = "local, in one process" if stratum.strategy == LOCAL else "distributed on Spark"
            if stratum.strategy == LOCAL and stratum.capacity is not None:
                where += f"; on Spark past {stratum.capacity:,} facts"
            lines.append(f"{number}. {names}  (recursive: {how}, {where})")
            lines.extend(f"     {variant}" for variant in stratum.variants)
        return "\n".join(lines)


def plan(optimized: Optimized, components: list[Component], strategy: str = AUTO, local_rows: float = 0) -> Plan:
    """The strata of the optimized program. `strategy` AUTO runs a component locally when what it reads
    from outside the local part of the plan holds at most `local_rows` rows (estimated), else
    distributed. The size of a recursive result is hard to estimate (a closure's estimate can be off by
    orders of magnitude): it is not estimated but bounded at run time instead, a local recursive
    component moving to Spark when it derives more than `local_rows` facts (engine/executor.py)."""
    program = optimized.program
    strata: list[Stratum] = []
    local: set[str] = set()  # relations of the strata planned LOCAL so far
    for component in components:
        rules = [rule for rule in program.rules if rule.head in component]
        iteration = program.relations[component.relations[0]].iteration
        chosen = strategy if strategy != AUTO else choose_strategy(optimized, component, rules, local, local_rows)
        capacity = int(local_rows) if strategy == AUTO and chosen == LOCAL and component.recursive else None
        if chosen == LOCAL:
            local.update(component.relations)
        if not component.recursive:
            strata.append(Stratum(component, tuple(rules), (), iteration, chosen))
            continue
        exit_rules = tuple(rule for rule in rules if not reads_component(rule, component))
        seeds = {name: optimized.estimator.seed(name).rows for name in component.relations}
        variants = tuple(
            order_variant(optimized, variant, seeds)
            for rule in rules
            if reads_component(rule, component)
            for variant in delta_variants(rule, component, iteration)
        )
        strata.append(Stratum(component, exit_rules, variants, iteration, chosen, capacity))
    return Plan(optimized, tuple(strata))


def choose_strategy(
    optimized: Optimized, component: Component, rules: list[Rule], local: set[str], local_rows: float
) -> str:
    """LOCAL when the relations the component reads from outside itself, leaving out those computed
    locally already, hold at most `local_rows` rows."""
    inputs = {
        atom.relation for rule in rules for atom in rule.atoms
        if atom.relation not in component and atom.relation not in local and not atom.call_args
    }
    rows = sum(optimized.estimator.relation(name).rows for name in inputs)
    return LOCAL if rows <= local_rows else DISTRIBUTED


def order_variant(optimized: Optimized, variant: Variant, delta_rows: dict[str, float]) -> Variant:
    driver = variant.driver
    if driver is None:
        return variant
    atom = variant.rule.body[driver]
    estimator, relation = optimized.estimator, optimized.estimator.relation(atom.relation)
    rows = max(delta_rows.get(atom.relation, relation.rows), 1.0)
    scaled = type(relation)(rows, tuple(min(d, rows) for d in relation.distinct), relation.ranges)
    body = order_body(variant.rule, estimator, optimized.model, driver, {driver: atom_estimate(atom, scaled)})
    if body.positions == tuple(range(len(variant.rule.body))):
        return variant
    rule = Rule(variant.rule.head, variant.rule.terms, body.literals)
    return Variant(rule, tuple(variant.versions[i] for i in body.positions))


def reads_component(rule: Rule, component: Component) -> bool:
    return any(atom.relation in component and not atom.call_args for atom in rule.atoms)


def delta_variants(rule: Rule, component: Component, iteration: Iteration) -> list[Variant]:
    positions = [
        i for i, literal in enumerate(rule.body)
        if isinstance(literal, Atom) and literal.relation in component and not literal.call_args
    ]
    if iteration is Iteration.BAG:
        versions = tuple(DELTA if i in positions else None for i in range(len(rule.body)))
        return [Variant(rule, versions)]
    variants = []
    for j in positions:
        versions = tuple(
            None if i not in positions else DELTA if i == j else FULL if i < j else OLD
            for i in range(len(rule.body))
        )
        variants.append(Variant(rule, versions))
    return variants
