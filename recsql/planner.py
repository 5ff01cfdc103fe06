"""Planner: turns an analysed program into evaluation steps, one per strongly connected component.

A recursive component is evaluated semi-naively. For each recursive rule the planner emits one delta
variant per body atom of the component: in variant j, atom j reads the facts new in the last iteration
(Δ), the atoms before it read everything known (full), the atoms after it what was known before the last
iteration (old). Every combination of facts with at least one new fact is then joined exactly once.
UNION ALL components follow the SQL standard instead: every recursive reference reads the previous
round's rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from recsql.analysis import Component
from translator.ir import Atom, Iteration, Program, Rule

FULL, DELTA, OLD = "full", "delta", "old"
LOCAL, DISTRIBUTED = "local", "distributed"


@dataclass(frozen=True)
class Variant:
    """A rule with a version (full / delta / old) chosen for each body atom of the component."""

    rule: Rule
    versions: tuple[str | None, ...]  # per body literal; None for literals outside the component

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
    strategy: str = DISTRIBUTED  # recursive strata: LOCAL (one process, Arrow) or DISTRIBUTED (Spark jobs)

    @property
    def relations(self) -> tuple[str, ...]:
        return self.component.relations


@dataclass(frozen=True)
class Plan:
    program: Program
    strata: tuple[Stratum, ...]

    def explain(self) -> str:
        lines = ["== Datalog ==", self.program.to_datalog(), "", "== Strata =="]
        for number, stratum in enumerate(self.strata, start=1):
            names = ", ".join(self.program.relations[r].display_name for r in stratum.relations)
            if not stratum.component.recursive:
                lines.append(f"{number}. {names}")
                continue
            how = "UNION ALL iteration" if stratum.iteration is Iteration.BAG else "semi-naive fixpoint"
            where = "local, in one process" if stratum.strategy == LOCAL else "distributed on Spark"
            lines.append(f"{number}. {names}  (recursive: {how}, {where})")
            lines.extend(f"     {variant}" for variant in stratum.variants)
        return "\n".join(lines)


def plan(program: Program, components: list[Component], strategy: str = DISTRIBUTED) -> Plan:
    strata = []
    for component in components:
        rules = [rule for rule in program.rules if rule.head in component]
        iteration = program.relations[component.relations[0]].iteration
        if not component.recursive:
            strata.append(Stratum(component, tuple(rules), (), iteration))
            continue
        exit_rules = tuple(rule for rule in rules if not reads_component(rule, component))
        variants = tuple(
            variant
            for rule in rules
            if reads_component(rule, component)
            for variant in delta_variants(rule, component, iteration)
        )
        strata.append(Stratum(component, exit_rules, variants, iteration, strategy))
    return Plan(program, tuple(strata))


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
