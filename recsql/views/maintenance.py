"""Brings a materialized view's stored relations from the base versions they reflect to the current
ones, stratum by stratum of the view's program: what changed in a table is read from its Delta log
(the files added and removed between the two versions), each stratum is maintained from what changed
in what it reads (delta_rules.py), and the relations that changed are committed to their tables.

Computing a view (CREATE, REFRESH, or a view whose definition or base tables were replaced) is the same
walk with every stratum computed from the new versions."""

from __future__ import annotations

import itertools
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

import pyarrow as pa

from recsql import analysis
from recsql.catalog.catalog import Catalog
from recsql.engine.answer import Answer
from recsql.services import Services
from recsql.settings import Settings
from recsql.storage.names import version_name
from recsql.storage.snapshots import Snapshot
from recsql.views.closure_memory import IN_MEMORY, ClosuresInMemory
from recsql.views.delta_rules import EXTREMES, Inputs, StratumRules, aggregated_by, changes, closure_of, why_recomputed
from recsql.views.fact_sets import FactSets, positional
from recsql.views.group_rules import affected_groups, affected_rederivation, regrowable
from recsql.views.relation_commits import RelationCommits
from recsql.views.results import ChangedRelation, Maintained, Method, nonempty
from recsql.views.stored import Reflected
from translator.ir import Atom, Program

BaseVersions = dict[str, list]  # table -> [its directory, its version]


@dataclass
class MaintenanceTrace:
    view: str
    relations: list[Maintained] = field(default_factory=list)
    seconds: float = 0.0

    def report(self) -> list[str]:
        lines = [f"== Maintenance of {self.view} ({self.seconds:.3f} s) =="]
        return lines + [f"  {relation}" for relation in self.relations]


class Maintenance:
    """One bringing up to date of a view's relations (`reflected` None: all computed from the tables)."""

    def __init__(
        self,
        session: Services,
        view: str,
        root: Path,
        program: Program,
        output_names: list[str],
        reflected: Reflected | None,
        trace: MaintenanceTrace,
    ):
        self.session = session
        self.catalog: Catalog = session.catalog
        self.view = view
        self.root = root  # the view's directory
        self.program = program
        self.output_names = output_names
        self.reflected = reflected
        self.trace = trace
        self.token = uuid.uuid4().hex[:8]
        self.names = itertools.count()
        self.registered: list[str] = []
        self.read = read_by_strata(program)
        self.held: dict[str, int] = {}  # the rows of each table in memory that programs read, by name
        self.closures = ClosuresInMemory(self.catalog, session.settings.local_rows)
        self.sets = FactSets(self.catalog.timezone)

    def run(self, bases: BaseVersions, parts: dict[str, str], statement: str) -> Reflected:
        """Maintain (or compute) every relation; commit the changed ones; the new Reflected."""
        started = time.monotonic()
        try:
            inputs = self.base_inputs(bases)
            results: dict[str, ChangedRelation] = {}
            for component in analysis.stratify(self.program):
                self.stratum(component, parts, inputs, results)
            commits = RelationCommits(
                self.catalog,
                self.view,
                self.root,
                self.reflected,
                self.closures,
                self.program.output,
                self.output_names,
            )
            versions = commits.commit(results, parts, statement)
        finally:
            self.closures.close()
            for name in self.registered:
                self.catalog.registered.remove(name)
        self.trace.seconds = time.monotonic() - started
        return Reflected(parts[self.program.output], parts, self.program.to_datalog(), versions, bases)

    # -------------------------------------------------------------- inputs

    def base_inputs(self, bases: BaseVersions) -> dict[str, Inputs]:
        """What each base table is now and, when the view is maintained, what it gained and lost (the
        caller computes the view again when a table's directory is another: it was dropped and made anew)."""
        inputs = {}
        for name, (directory, version) in bases.items():
            new = version_name(name, version)
            if self.reflected is None:
                inputs[name] = Inputs(new, new, plus=new)  # all of it is new
                continue
            before = self.reflected.bases[name]
            assert before[0] == directory, f"{name} is another table than the view reflects"
            inputs[name] = Inputs(new, new) if before[1] == version else self.table_changes(name, before[1], version)
        return inputs

    def table_changes(self, name: str, old: int, new: int) -> Inputs:
        """A base table's versions, and the rows it gained and lost between them, from the files the
        commits since `old` added and removed: the rows of the added files not in the removed ones, and
        the other way round. A row also in a file no commit touched (a table may hold a row twice) is
        then counted as gained or lost when it was not; that costs a little work, never a wrong fact: a
        row the table had already derives nothing new, and a fact over-deleted through a row still
        there is derived again."""
        table = self.catalog.managed(name)  # the catalog's: it keeps the log it has read
        before, after = table.snapshot(old), table.snapshot(new)
        old_files, new_files = set(before.files), set(after.files)
        added = self.files_read(after, new_files - old_files)
        removed = self.files_read(before, old_files - new_files)
        if added.num_rows and removed.num_rows:
            added, removed = self.sets.differences(added, removed)
        return Inputs(
            version_name(name, old),
            version_name(name, new),
            self.register(nonempty(added)),
            self.register(nonempty(removed)),
        )

    def files_read(self, snapshot: Snapshot, files: set) -> pa.Table:
        """The rows of some files of a version (all of them: the rows kept of it, if they are)."""
        if files == set(snapshot.files):
            return positional(self.catalog.kept_rows.get(snapshot.identity, snapshot.read_arrow))
        return read_files(snapshot.restricted(tuple(files)))

    # -------------------------------------------------------------- strata

    def stratum(
        self,
        component: analysis.Component,
        parts: dict[str, str],
        inputs: dict[str, Inputs],
        results: dict[str, ChangedRelation],
    ) -> None:
        program = self.program
        rules = [rule for rule in program.rules if rule.head in component]
        reads = {
            atom.relation
            for rule in rules
            for atom in rule.atoms
            if not atom.call_args and atom.relation not in component
        }
        stored = (
            {name: self.reflected.relation(self.view, name) for name in component.relations}
            if self.reflected is not None
            else {}
        )
        source = alias_source(program, component)
        if source is not None:  # the same facts as the relation it copies
            (name,) = component.relations
            inputs[name] = inputs[source]
            if source in results:
                results[name] = results[source]
            return
        if not any(inputs[name].changed for name in reads):
            for name in component.relations:
                inputs[name] = Inputs(stored[name], stored[name])
            return
        stratum = StratumRules(program, component, inputs)
        why = "computed" if self.reflected is None else why_recomputed(program, component)
        extreme = bool(why) and self.reflected is not None and aggregated_by(program, component, EXTREMES)
        regrow = bool(why) and self.reflected is not None and regrowable(program, component)
        gains, losses = (changes(stratum.rules, inputs, gains=gaining) for gaining in (True, False))
        started = time.monotonic()
        records = {
            name: Maintained(
                program.relations[name].display_name,
                Method.COMPUTED if self.reflected is None else Method.RECOMPUTED,
                why,
            )
            for name in component.relations
        }
        if extreme and not losses:
            for record in records.values():
                record.method = Method.IMPROVEMENT
            maintained = {name: self.improve(stratum, stored, name) for name in component.relations}
        elif regrow and not (extreme and gains):
            maintained = self.regrow(stratum, stored, records)
        elif why:
            maintained = {name: self.recompute(stratum, name, stored.get(name)) for name in component.relations}
        else:
            maintained = self.dred(stratum, stored, records)
        if closure_of(program, component) is not None and self.session.settings.strategy in IN_MEMORY:
            for name, result in maintained.items():
                if result.index is None:
                    result.index = self.closures.index_after(stored.get(name), result)
        for name, result in maintained.items():
            record = records[name]
            record.added = result.plus.num_rows if result.plus is not None else 0
            record.removed = result.minus.num_rows if result.minus is not None else 0
            record.seconds = (time.monotonic() - started) / len(maintained)
            if record.method is Method.COMPUTED:
                record.added = result.facts.num_rows
            self.trace.relations.append(record)
            results[name] = result
            if name in self.read:  # what later strata read it by
                inputs[name] = Inputs(
                    stored.get(name, ""),
                    self.register(result.facts),
                    self.register(result.plus),
                    self.register(result.minus),
                )
            else:
                inputs[name] = Inputs(stored.get(name, ""), stored.get(name, ""))

    def improve(self, stratum: StratumRules, stored: dict[str, str], name: str) -> ChangedRelation:
        """A min()/max() relation whose inputs only gained facts: the groups that improve replace theirs."""
        old = self.stored_facts(stored[name])
        improved = self.evaluate(stratum.improvement(stored, name)).table.cast(old.schema)
        keys = [f"c{i}" for i in self.program.relations[name].group_key]
        replaced = self.sets.matching(old, improved, keys)
        facts = pa.concat_tables([self.sets.difference(old, replaced, distinct=True), improved])
        return ChangedRelation(facts, nonempty(improved), nonempty(replaced))

    def regrow(
        self, stratum: StratumRules, stored: dict[str, str], records: dict[str, Maintained]
    ) -> dict[str, ChangedRelation]:
        """Aggregates in recursion maintained as DRed on groups (min()/max() whose inputs only lost facts,
        sum()/count()): the groups a change affects are derived again, from the values of the other groups
        (which stand) and the inputs' new versions."""
        names = stratum.component.relations
        groups = {name: self.evaluate(affected_groups(stratum, stored, name)).table for name in names}
        registered = {name: self.register(table) for name, table in groups.items()}
        results = {}
        for name in names:
            records[name].method = Method.DRED
            old = self.stored_facts(stored[name])
            keys = [f"c{i}" for i in self.program.relations[name].group_key]
            replaced = self.sets.matching(old, groups[name].rename_columns(keys), keys)
            again = self.evaluate(affected_rederivation(stratum, stored, registered, name)).table.cast(old.schema)
            records[name].over_deleted, records[name].rederived = replaced.num_rows, again.num_rows
            results[name] = ChangedRelation(
                pa.concat_tables([self.sets.difference(old, replaced, distinct=True), again]),
                nonempty(self.sets.difference(again, replaced)),
                nonempty(self.sets.difference(replaced, again)),
            )
        return results

    def recompute(self, stratum: StratumRules, name: str, stored: str | None) -> ChangedRelation:
        answer = self.evaluate(stratum.recomputation(name))
        facts = answer.table
        if stored is None:
            return ChangedRelation(facts, facts, None, answer.types)
        old = self.stored_facts(stored, facts.schema)
        return ChangedRelation(
            facts, nonempty(self.sets.difference(facts, old)), nonempty(self.sets.difference(old, facts))
        )

    def dred(
        self, stratum: StratumRules, stored: dict[str, str], records: dict[str, Maintained]
    ) -> dict[str, ChangedRelation]:
        """The stratum's relations maintained by DRed (insertions only when nothing can be deleted); a
        transitive closure with rules of its own for both steps (delta_rules.closure_of)."""
        names = stratum.component.relations
        step = closure_of(self.program, stratum.component)
        old = {name: self.stored_facts(stored[name]) for name in names}
        if step is not None and self.session.settings.strategy in IN_MEMORY:
            (name,) = names
            maintained = self.closures.maintained(stored[name], stratum.inputs[step], old[name], records[name])
            if maintained is not None:
                return {name: maintained}
        kept_facts, over_deleted, over = old, None, None
        if changes(stratum.rules, stratum.inputs, gains=False):
            over_deleted = {
                name: self.evaluate(
                    stratum.closure_over_deletion(step, stored[name], name)
                    if step is not None
                    else stratum.over_deletion(stored, name)
                ).table.cast(old[name].schema)
                for name in names
            }
            kept_facts = {name: self.sets.difference(old[name], over_deleted[name], distinct=True) for name in names}
            over = {name: self.register(facts) for name, facts in over_deleted.items()}
        gains = changes(stratum.rules, stratum.inputs, gains=True)
        results = {}
        for name in names:
            records[name].method = Method.INSERTION if over is None else Method.DRED
            if step is not None and over is None:
                program = stratum.closure_insertion(step, stored[name], name)
            elif step is not None and not gains:
                program = stratum.closure_rederivation(step, stored[name], over[name], name)
            else:
                program = stratum.insertion(stored, over, name)
            derived = self.evaluate(program).table.cast(old[name].schema)
            if over_deleted is not None and not gains:  # every fact derived is an over-deleted one found again
                records[name].over_deleted = over_deleted[name].num_rows
                records[name].rederived = derived.num_rows
                results[name] = ChangedRelation(
                    pa.concat_tables([kept_facts[name], derived]),
                    None,
                    nonempty(self.sets.difference(over_deleted[name], derived)),
                )
                continue
            fresh = self.sets.difference(derived, kept_facts[name])
            facts = pa.concat_tables([kept_facts[name], fresh])
            if over_deleted is None:
                results[name] = ChangedRelation(facts, nonempty(fresh), None)
                continue
            plus = self.sets.difference(fresh, over_deleted[name])
            records[name].over_deleted = over_deleted[name].num_rows
            records[name].rederived = fresh.num_rows - plus.num_rows
            results[name] = ChangedRelation(
                facts, nonempty(plus), nonempty(self.sets.difference(over_deleted[name], fresh))
            )
        return results

    # -------------------------------------------------------------- evaluation

    def evaluate(self, program: Program) -> Answer:
        """A maintenance program's answer, planned and run as any query's (its strategies included)."""
        plan = self.session.plan_program(program, self.planning_settings())
        answer = self.session.executor().fetch(plan)  # no trace: a trace makes Spark count every step
        return Answer(answer.names, answer.types, positional(answer.table))

    def planning_settings(self) -> Settings:
        """The session's settings with room in recsql.local_rows for the tables in memory already (the
        stored relations read, and what was computed from them and the changes): a maintenance program
        joins small changes with them, and what it derives is bounded by them (over-deleted or
        re-derived facts are stored facts), so it need not go to Spark because they are large; a
        stratum deriving past its capacity still moves there."""
        settings = self.session.settings
        return replace(settings, local_rows=settings.local_rows + sum(self.held.values()))

    def stored_facts(self, name: str, schema: pa.Schema | None = None) -> pa.Table:
        facts = positional(self.catalog.arrow_table(name))
        self.held[name] = facts.num_rows
        return facts.cast(schema) if schema is not None else facts

    def register(self, facts: pa.Table | str | None) -> str | None:
        """A name the next programs read `facts` by (a table's name as it is)."""
        if facts is None or isinstance(facts, str):
            return facts
        name = f"mv_{self.token}_{next(self.names)}"
        self.catalog.register(name, None, facts)
        self.held[name] = facts.num_rows
        self.registered.append(name)
        return name


def alias_source(program: Program, component: analysis.Component) -> str | None:
    """The relation a non-recursive relation copies unchanged (`answer(x, y) :- tc(x, y).`), if it does:
    it stores nothing of its own."""
    if component.recursive or len(component.relations) != 1:
        return None
    (name,) = component.relations
    rules = program.rules_for(name)
    if len(rules) != 1 or len(rules[0].body) != 1 or not isinstance(rules[0].body[0], Atom):
        return None
    rule, atom = rules[0], rules[0].body[0]
    source = program.relations.get(atom.relation)
    if (
        source is None
        or program.relations[name].window is not None
        or atom.filters
        or atom.optional
        or atom.call_args
        or atom.nulls_equal
        or len(set(atom.args)) != len(atom.args)
        or "_" in atom.args
        or [term.sql() for term in rule.terms] != [f"{arg}" for arg in atom.args]
        or (program.relations[name].distinct and not source.distinct)
    ):
        return None
    return atom.relation


def read_by_strata(program: Program) -> set[str]:
    """The relations a later stratum reads, other than a copy (which reads what it copies)."""
    components = analysis.stratify(program)
    stratum_of = {name: component for component in components for name in component.relations}
    copies = {name for component in components if alias_source(program, component) for name in component.relations}
    return {
        atom.relation
        for rule in program.rules
        if rule.head not in copies
        for atom in rule.atoms
        if atom.relation not in stratum_of.get(rule.head, ())
    }


def read_files(snapshot: Snapshot) -> pa.Table:
    return positional(snapshot.read_arrow())
