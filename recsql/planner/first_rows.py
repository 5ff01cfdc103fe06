"""When a recursion may stop before its end: every row read from it goes, one by one, to a LIMIT with no ORDER BY.

Such a LIMIT n (OFFSET m) keeps any n rows of what it reads after skipping any m, so any n + m rows make a right
answer. When what it reads is made from a recursive relation's facts by relations each passing rows on without
merging or needing them all (a copy, a projection keeping duplicates, a filter, computed columns, a UNION ALL of
such), every fact derived gives rows the LIMIT may keep: without aggregates in the recursion, each fact derived
is one of the fixpoint's (or, for UNION ALL, one of its rows). The evaluation may then stop once those relations
would hold n + m rows, as Spark and PostgreSQL stop a LIMITed recursion: a UNION ALL recursion that never ends
alone gives its first rows. A window of a subquery, a CTE or a view counts as the answer's does; what reads the
window's rows afterwards (an aggregate, an ORDER BY) reads them all, and so does not matter.

The planner gives a recursive stratum a `Stop` when every reader of its relations leads to such a LIMIT (an
aggregate, DISTINCT, an ORDER BY before the LIMIT, a join or negation of the recursion, or the answer without a
LIMIT needs every row): its watches say how many rows each LIMIT needs and how to count them from the new facts
of each iteration (engine/fixpoint.py's `iterate`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from translator.ir import WILDCARD, Assignment, Condition, Program, Rule, renamed, variables_of

ANSWER = ""  # the answer's window, beside those of relations named by the relation


@dataclass(frozen=True)
class Path:
    """How rows of a window come from the facts of `relation` (a relation of the stratum): one row per fact
    (`rule` None), or the rows `rule` derives from them (its one atom reads `relation`)."""

    relation: str
    rule: Rule | None


@dataclass(frozen=True)
class Watch:
    """A LIMIT (OFFSET) needing `rows` rows, the sum of what its paths give."""

    rows: int
    paths: tuple[Path, ...]


@dataclass(frozen=True)
class Stop:
    """The stratum's evaluation may end once every watch has its rows."""

    watches: tuple[Watch, ...]

    @property
    def filtered(self) -> bool:
        """Whether some watch counts rows that not every fact gives: the independent parts of a decomposed
        evaluation could then each go on forever, none having the rows alone."""
        return any(path.rule is not None for watch in self.watches for path in watch.paths)

    def __str__(self) -> str:
        return "; ".join(
            f"{watch.rows} rows from {', '.join(sorted({path.relation for path in watch.paths}))}"
            for watch in self.watches
        )


def first_rows_stop(program: Program, relations: tuple[str, ...], recursive: set[str]) -> Stop | None:
    """The Stop of the recursive stratum of `relations` (None: some reader needs every row); `recursive`:
    the relations of every recursive stratum of the program."""
    if any(program.relations[name].aggregate is not None for name in relations):
        return None
    needs: dict[str, int] = {}
    paths: dict[str, list[Path]] = {}
    for name in relations:
        found = window_paths(program, name, Path(name, None), set(relations), recursive)
        if found is None:
            return None
        for window, rows, path in found:
            needs[window] = rows
            paths.setdefault(window, []).append(counted(path))
    return Stop(tuple(Watch(needs[window], tuple(paths[window])) for window in needs)) if needs else None


def window_paths(
    program: Program, relation: str, path: Path, stratum: set[str], recursive: set[str]
) -> list[tuple[str, int, Path]] | None:
    """The windows `relation`'s rows reach (by relation name, ANSWER for the answer's), each with the rows it
    needs and the path of those rows from the stratum; None when a reader needs them all."""
    info = program.relations[relation]
    if relation not in stratum:
        if info.window is not None:
            window = info.window
            keeps_first = window.limit is not None and not window.order_by
            return [(relation, window.limit + window.offset, path)] if keeps_first else None
        if relation in recursive:
            return None
    found: list[tuple[str, int, Path]] = []
    if relation == program.output:
        if program.limit is None or program.order_by:
            return None
        found.append((ANSWER, program.limit + program.offset, path))
    for rule in program.rules:
        if rule.head in stratum or not any(atom.relation == relation for atom in rule.atoms):
            continue
        if not passes_rows(program, rule, relation, path):
            return None
        further = window_paths(program, rule.head, Path(path.relation, followed(path, rule)), stratum, recursive)
        if further is None:
            return None
        found.extend(further)
    return found


def passes_rows(program: Program, rule: Rule, relation: str, path: Path) -> bool:
    """Whether `rule` makes rows of its head from rows of `relation` one by one: one positive atom reading it,
    conditions and computed columns, no aggregate; DISTINCT only over a copy of rows already distinct."""
    head = program.relations[rule.head]
    atoms = rule.atoms
    if rule.is_aggregate or head.aggregate is not None or len(atoms) != 1:
        return False
    (atom,) = atoms
    if atom.relation != relation or atom.filters or atom.optional or atom.call_args:
        return False
    return not head.distinct or (
        copies(rule)
        and len(program.rules_for(rule.head)) == 1
        and program.relations[path.relation].distinct
        and (path.rule is None or copies(path.rule))
    )


def copies(rule: Rule) -> bool:
    """Whether a rule of one atom gives its rows as they are (it may filter them)."""
    (atom,) = rule.atoms
    return [term.name if isinstance(term, exp.Column) else None for term in rule.terms] == list(atom.args)


def followed(path: Path, rule: Rule) -> Rule:
    """The rule giving the rows of `rule`'s head from the path's relation: `rule`, its atom reading the rows
    the path gives, after the path's rule (its variables renamed apart, its atom's bound to the path's terms)."""
    if path.rule is None:
        return rule
    (atom,) = rule.atoms
    names = renamed_apart(rule, path.rule)
    bindings = tuple(
        Assignment(names[arg], term.copy()) for arg, term in zip(atom.args, path.rule.terms) if arg != WILDCARD
    )
    others = tuple(renamed_literal(literal, names) for literal in rule.body if literal is not atom)
    return Rule(
        rule.head, tuple(renamed(term.copy(), names) for term in rule.terms), path.rule.body + bindings + others
    )


def renamed_apart(rule: Rule, before: Rule) -> dict[str, str]:
    """New names for `rule`'s variables, none of them one that `before` uses."""
    taken = rule_variables(before)
    ours = rule_variables(rule)
    number = 1
    while any(f"{name}_{number}" in taken for name in ours):
        number += 1
    return {name: f"{name}_{number}" for name in ours}


def rule_variables(rule: Rule) -> set[str]:
    found = set().union(*(variables_of(term) for term in rule.terms))
    for literal in rule.body:
        found |= literal.variables()
        if isinstance(literal, Assignment):
            found.add(literal.variable)
    return found


def renamed_literal(literal: Condition | Assignment, names: dict[str, str]) -> Condition | Assignment:
    if isinstance(literal, Assignment):
        return Assignment(names[literal.variable], renamed(literal.expression.copy(), names))
    return Condition(renamed(literal.expression.copy(), names))


def counted(path: Path) -> Path:
    """The path as its rows are counted: by the facts of its relation when each gives one row (no condition,
    no column compared with another)."""
    if path.rule is None:
        return path
    (atom,) = path.rule.atoms
    assigned = [literal.variable for literal in path.rule.body if isinstance(literal, Assignment)]
    bound = [arg for arg in atom.args if arg != WILDCARD] + assigned
    filters = any(isinstance(literal, Condition) for literal in path.rule.body) or len(set(bound)) < len(bound)
    return path if filters else Path(path.relation, None)
