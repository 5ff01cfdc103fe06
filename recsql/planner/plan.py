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

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from sqlglot import exp

from recsql.analysis import Component
from recsql.optimizer import Optimized
from recsql.optimizer.cardinality import atom_estimate
from recsql.optimizer.decomposition import Decomposition, NotDecomposable, decompose
from recsql.optimizer.explain import explain_passes
from recsql.optimizer.join_order import order_body
from recsql.optimizer.ownership import owner_column
from recsql.planner.first_rows import Stop, first_rows_stop
from recsql.planner.part_aggregate import PartAggregate, part_aggregate
from recsql.planner.single_query import SingleQuery, single_query
from recsql.planner.spark_valued import spark_valued
from recsql.settings import Settings, Strategy
from translator.errors import UnsupportedError
from translator.ir import Atom, Iteration, Opaque, Program, Rule


class Version(str, Enum):
    """Which facts of a relation of the component an atom of a delta variant reads."""

    FULL = "full"  # everything known
    DELTA = "delta"  # what the last iteration added
    OLD = "old"  # what was known before the last iteration


@dataclass(frozen=True)
class Variant:
    """A rule with a version (full / delta / old) chosen for each body atom of the component."""

    rule: Rule
    versions: tuple[Version | None, ...]  # per body literal; None for literals outside the component

    @property
    def driver(self) -> int | None:
        """The body position of the Δ atom (semi-naive variants)."""
        return self.versions.index(Version.DELTA) if self.versions.count(Version.DELTA) == 1 else None

    def __str__(self) -> str:
        marks = {Version.DELTA: "Δ", Version.OLD: "old ", Version.FULL: ""}
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
    # LOCAL (in this process, over Arrow), DECOMPOSED (one Spark job, a task per part) or DISTRIBUTED
    # (a Spark job per iteration)
    strategy: Strategy = Strategy.DISTRIBUTED
    capacity: int | None = None  # LOCAL chosen from estimates: past this many facts it moves to Spark
    decomposition: Decomposition | None = None  # its pivots, when DECOMPOSED or when LOCAL may move there
    owner: int | None = None  # DISTRIBUTED as one job: the column that says which task owns a fact
    reason: str = ""  # why the strategy, for EXPLAIN
    stop: Stop | None = None  # the rows after which a LIMIT over the stratum has what it needs (first_rows.py)
    single_query: SingleQuery | None = None  # in this process: one DuckDB recursive query, or why not
    part_aggregate: PartAggregate | None = None  # what the tasks of a one-job strategy reduce their facts to
    exit_in_tasks: bool = False  # the tasks of a one-job strategy derive the exit facts themselves
    opaque: Opaque | None = None  # a relation Spark SQL gives (translator/opaque.py), not rules

    @property
    def relations(self) -> tuple[str, ...]:
        return self.component.relations

    @property
    def inputs(self) -> dict[str, Atom]:
        """The relations and tables the stratum reads from outside itself (an atom reading each)."""
        rules = list(self.exit_rules) + [variant.rule for variant in self.variants]
        read = {name: Atom(name, ()) for name in self.opaque.relations} if self.opaque is not None else {}
        read.update(
            (atom.relation, atom)
            for rule in rules
            for atom in rule.atoms
            if atom.relation not in self.relations and not atom.call_args
        )
        return read


class Plan:
    def __init__(self, optimized: Optimized, strata: tuple[Stratum, ...]):
        self.optimized = optimized
        self.program: Program = optimized.program
        self.strata = strata

    def order_variant(self, variant: Variant, delta_rows: Mapping[str, float]) -> Variant:
        """`variant` with its joins ordered for a Δ of the given size (rows seen in the last iteration)."""
        return order_variant(self.optimized, variant, delta_rows)

    def explain(self) -> str:
        lines = explain_passes(self.optimized)
        lines += ["", "== Strata =="]
        for number, stratum in enumerate(self.strata, start=1):
            names = ", ".join(self.program.relations[r].display_name for r in stratum.relations)
            if stratum.opaque is not None:
                lines.append(f"{number}. {names}  (on Spark: {stratum.reason})")
                continue
            if not stratum.component.recursive:
                lines.append(f"{number}. {names}")
                continue
            how = {Iteration.BAG: "UNION ALL iteration", Iteration.KEYED: "USING KEY iteration"}.get(
                stratum.iteration, "semi-naive fixpoint"
            )
            lines.append(f"{number}. {names}  (recursive: {how}, {self.where(stratum)})")
            if stratum.reason:
                lines.append(f"     strategy: {stratum.reason}")
            if stratum.stop is not None:
                lines.append(f"     stops early, as LIMIT needs: {stratum.stop}")
            if stratum.single_query is not None and stratum.strategy == Strategy.LOCAL:
                lines.append(f"     in process: {stratum.single_query}")
            if stratum.exit_in_tasks and self.one_job(stratum):
                lines.append("     exit facts derived in its tasks, from the relations sent to them")
            if stratum.part_aggregate is not None and self.one_job(stratum):
                lines.append(f"     aggregated in its tasks, the facts kept there: {stratum.part_aggregate}")
            lines.extend(f"     {variant}" for variant in stratum.variants)
        return "\n".join(lines)

    @staticmethod
    def one_job(stratum: Stratum) -> bool:
        """Whether the stratum may run as one Spark job of tasks keeping their facts (decomposed, or
        distributed with an owner column), planned so or once a local evaluation outgrows its capacity."""
        if stratum.strategy == Strategy.LOCAL and stratum.capacity is None:
            return False
        return stratum.decomposition is not None or stratum.owner is not None

    def where(self, stratum: Stratum) -> str:
        """Where and how a recursive stratum runs, in words."""
        decomposed = ""
        if stratum.decomposition is not None:
            parts = ", ".join(
                f"{self.program.relations[name].display_name}.{self.program.relations[name].columns[column]}"
                for name, column in stratum.decomposition.pivots.items()
            )
            decomposed = f"decomposed on Spark (one job, parts by {parts})"
        if stratum.strategy == Strategy.DECOMPOSED:
            return decomposed
        if stratum.strategy == Strategy.DISTRIBUTED:
            if stratum.owner is None:
                return "distributed on Spark (a job per iteration)"
            (name,) = stratum.relations
            relation = self.program.relations[name]
            return (
                f"distributed on Spark (one job, tasks owning facts by {relation.display_name}."
                f"{relation.columns[stratum.owner]})"
            )
        where = "local, in one process"
        if stratum.capacity is not None:
            where += f"; past {stratum.capacity:,} facts {decomposed or 'distributed on Spark'}"
        return where


def plan(optimized: Optimized, components: list[Component], settings: Settings) -> Plan:
    """The strata of the optimized program, each with its strategy (see `choose`)."""
    program = optimized.program
    strategy, local_rows = settings.strategy, settings.local_rows
    strata: list[Stratum] = []
    local: set[str] = set()  # relations of the strata planned LOCAL so far
    recursive = {name for component in components if component.recursive for name in component.relations}
    for component in components:
        rules = [rule for rule in program.rules if rule.head in component]
        iteration = component_iteration(program, component)
        spark_only = spark_computed(program, component, rules, strategy)
        opaque = program.relations[component.relations[0]].opaque
        if opaque is not None:  # never recursive (analysis.check_component)
            reason = f"Spark SQL evaluates {opaque.construct}"
            strata.append(Stratum(component, (), (), iteration, Strategy.DISTRIBUTED, reason=reason, opaque=opaque))
            continue
        if not component.recursive:
            inputs = external_rows(optimized, rules, local)
            local_enough = not spark_only and (
                strategy == Strategy.LOCAL or (strategy == Strategy.AUTO and inputs <= local_rows)
            )
            chosen = Strategy.LOCAL if local_enough else Strategy.DISTRIBUTED
            if chosen == Strategy.LOCAL:
                local.update(component.relations)
            reason = spark_only or (
                f"inputs ~{inputs:,.0f} rows {'within' if local_enough else 'past'} recsql.local_rows"
                if strategy == Strategy.AUTO
                else f"recsql.strategy = {strategy}"
            )
            strata.append(Stratum(component, tuple(rules), (), iteration, chosen, reason=reason))
            continue
        exit_rules = tuple(rule for rule in rules if not reads_component(rule, component))
        recursive_rules = [rule for rule in rules if reads_component(rule, component)]
        stop = first_rows_stop(program, component.relations, recursive)
        decomposition = decompose(program, component, recursive_rules)
        if stop is not None and stop.filtered:
            decomposition = NotDecomposable(
                "a LIMIT stopping it counts filtered rows, which a part may never have alone"
            )
        estimate = optimized.estimator.relation(component.relations[0])
        owner = owner_column(program, component, recursive_rules, estimate.distinct)
        if iteration is Iteration.KEYED:  # a round's rows replace known ones by key, which its rules also read
            decomposition, owner = NotDecomposable("USING KEY rounds read every row known (recurring)"), None
        if spark_only:  # a Spark job per iteration: Spark SQL evaluates every rule, no task the local evaluator
            choice, owner = Choice(Strategy.DISTRIBUTED, spark_only), None
        else:
            choice = choose(optimized, component, rules, decomposition, settings, local, owner)
        if choice.strategy == Strategy.LOCAL:
            local.update(component.relations)
        seeds = {name: optimized.estimator.seed(name).rows for name in component.relations}
        variants = tuple(
            order_variant(optimized, variant, seeds)
            for rule in recursive_rules
            for variant in delta_variants(rule, component, iteration)
        )
        one_query = single_query(program, component, recursive_rules, iteration, stop)
        strata.append(
            Stratum(
                component,
                exit_rules,
                variants,
                iteration,
                owner=owner,
                stop=stop,
                single_query=one_query,
                part_aggregate=part_aggregate(program, component, lambda name: optimized.estimator.relation(name).rows),
                exit_in_tasks=exit_in_tasks(optimized, exit_rules, component, settings),
                **vars(choice),
            )
        )
    return Plan(optimized, tuple(strata))


PIVOT_VALUES_PER_TASK = 2  # fewer pivot values than this many per task: some tasks idle, or few doing all


@dataclass(frozen=True)
class Choice:
    """A recursive stratum's strategy and what goes with it (the Stratum fields of the same names)."""

    strategy: Strategy
    reason: str
    capacity: int | None = None
    decomposition: Decomposition | None = None


def choose(
    optimized: Optimized,
    component: Component,
    rules: list[Rule],
    decomposition: Decomposition | NotDecomposable,
    settings: Settings,
    local: set[str],
    owner: int | None,
) -> Choice:
    """The strategy of a recursive component. Forced by recsql.strategy unless AUTO (DECOMPOSED falls back
    to DISTRIBUTED when the component has no pivot). AUTO: LOCAL when what the component reads from
    outside the local part of the plan holds at most recsql.local_rows rows (estimated); else DECOMPOSED
    when it has a pivot and the relations its recursive rules read (sent to every task) hold at most
    recsql.broadcast_rows; else DISTRIBUTED. The size of a recursive result is hard to estimate (a
    closure's estimate can be off by orders of magnitude): it is not estimated but bounded at run time
    instead, a LOCAL component moving to Spark (decomposed if it can) past `local_rows` facts. A pivot
    with too few values to keep the tasks busy (`tc(7, y)` has one) is not used where the distributed
    strategy runs the component as one job of tasks owning its facts (`owner`: by another column)."""
    strategy, local_rows, broadcast_limit = settings.strategy, settings.local_rows, settings.broadcast_rows
    pivoted = decomposition if isinstance(decomposition, Decomposition) else None
    why_not = f"not decomposable: {decomposition.reason}" if isinstance(decomposition, NotDecomposable) else ""
    if strategy == Strategy.DECOMPOSED:
        if pivoted is None:
            return Choice(Strategy.DISTRIBUTED, f"recsql.strategy = decomposed, but {why_not}")
        return Choice(Strategy.DECOMPOSED, "recsql.strategy = decomposed", decomposition=pivoted)
    if strategy != Strategy.AUTO:
        return Choice(strategy, f"recsql.strategy = {strategy}")
    narrow = narrow_pivot(optimized, component, pivoted, owner)
    if narrow:
        pivoted, why_not = None, narrow
    inputs = external_rows(optimized, rules, local)
    if inputs <= local_rows:
        fits = pivoted if pivoted is not None and broadcast_rows(optimized, pivoted) <= broadcast_limit else None
        return Choice(Strategy.LOCAL, f"inputs ~{inputs:,.0f} rows within recsql.local_rows", int(local_rows), fits)
    if pivoted is None:
        return Choice(Strategy.DISTRIBUTED, f"inputs ~{inputs:,.0f} rows; {why_not}")
    sent = broadcast_rows(optimized, pivoted)
    if sent > broadcast_limit:
        return Choice(
            Strategy.DISTRIBUTED, f"the relations each part reads hold ~{sent:,.0f} rows, past recsql.broadcast_rows"
        )
    return Choice(
        Strategy.DECOMPOSED, f"inputs ~{inputs:,.0f} rows; each part reads ~{sent:,.0f}", decomposition=pivoted
    )


def spark_computed(program: Program, component: Component, rules: list[Rule], strategy: str) -> str:
    """Why the component runs on Spark whatever its size: a call whose values only Spark gives
    (spark_valued.py); "" when it has none. Refused where recsql.strategy = local."""
    call = spark_valued(rules)
    if call is None:
        return ""
    name = f"{call.name if isinstance(call, exp.Anonymous) else call.sql_name()}()".lower()
    if strategy == Strategy.LOCAL:
        raise UnsupportedError.at_node(
            f"{name} takes its values from Spark, which the local strategy cannot compute: "
            "SET recsql.strategy = auto (or distributed) runs the query on Spark",
            call,
        )
    return f"{name} takes its values from Spark"


def narrow_pivot(
    optimized: Optimized, component: Component, decomposition: Decomposition | None, owner: int | None
) -> str:
    """Why the decomposition's pivot keeps too few tasks busy where a one-job distributed evaluation
    can run instead (an owner column): fewer values (estimated, in the exit rules'
    facts) than PIVOT_VALUES_PER_TASK per task; "" when it does not."""
    slots = optimized.model.task_slots
    if decomposition is None or owner is None or not slots:
        return ""
    (name,) = component.relations
    pivot = decomposition.pivots[name]
    values = optimized.estimator.seed(name).distinct[pivot]
    if values >= PIVOT_VALUES_PER_TASK * slots:
        return ""
    relation = optimized.program.relations[name]
    count = f"~{values:,.0f} value{'s' if round(values) != 1 else ''}"
    return f"its pivot {relation.display_name}.{relation.columns[pivot]} has {count}, too few for {slots} tasks"


def exit_in_tasks(optimized: Optimized, exit_rules: tuple[Rule, ...], component: Component, settings: Settings) -> bool:
    """Whether the tasks of a one-job strategy derive the exit facts themselves, from the relations the
    exit rules read sent to each (no Spark stage before theirs): where those relations fit under
    recsql.broadcast_rows and the exit facts (all derived by one task of the distributed strategy) under
    recsql.local_rows, as estimated."""
    if len(component.relations) != 1 or not exit_rules or any(atom.call_args for r in exit_rules for atom in r.atoms):
        return False
    estimator = optimized.estimator
    sent = sum(estimator.relation(name).rows for name in {atom.relation for r in exit_rules for atom in r.atoms})
    return sent <= settings.broadcast_rows and estimator.seed(component.relations[0]).rows <= settings.local_rows


def external_rows(optimized: Optimized, rules: list[Rule], local: set[str]) -> float:
    """Estimated rows the rules read from relations outside their component and outside the local part
    of the plan."""
    heads = {rule.head for rule in rules}
    inputs = {
        atom.relation
        for rule in rules
        for atom in rule.atoms
        if atom.relation not in heads and atom.relation not in local and not atom.call_args
    }
    return sum(optimized.estimator.relation(name).rows for name in inputs)


def broadcast_rows(optimized: Optimized, decomposition: Decomposition) -> float:
    return sum(optimized.estimator.relation(name).rows for name in decomposition.broadcast)


def order_variant(optimized: Optimized, variant: Variant, delta_rows: Mapping[str, float]) -> Variant:
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


def component_iteration(program: Program, component: Component) -> Iteration:
    """How a component iterates: USING KEY where one of its CTEs says so (the relations of its recursive
    branches iterating by rounds with it), else as its relations do (analysis.check_component: alike)."""
    kinds = [program.relations[name].iteration for name in component.relations]
    return Iteration.KEYED if Iteration.KEYED in kinds else kinds[0]


def reads_component(rule: Rule, component: Component) -> bool:
    return any(atom.relation in component and not atom.call_args for atom in rule.atoms)


def delta_variants(rule: Rule, component: Component, iteration: Iteration) -> list[Variant]:
    positions = [
        i
        for i, literal in enumerate(rule.body)
        if isinstance(literal, Atom) and literal.relation in component and not literal.call_args
    ]
    if iteration.by_rounds:  # the last round's rows; DuckDB's `recurring.t`: every row known
        versions = tuple(
            (Version.FULL if literal.recurring else Version.DELTA)
            if isinstance(literal, Atom) and i in positions
            else None
            for i, literal in enumerate(rule.body)
        )
        return [Variant(rule, versions)]
    variants = []
    for j in positions:
        versions = tuple(
            None if i not in positions else Version.DELTA if i == j else Version.FULL if i < j else Version.OLD
            for i in range(len(rule.body))
        )
        variants.append(Variant(rule, versions))
    return variants
