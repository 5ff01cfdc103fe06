"""A parsed Datalog program as the IR, the same `Program` a SQL query becomes, for the same optimizer,
planner and strategies.

Relations a rule derives become the program's relations (set semantics; a head's monotonic aggregate
`mmin<D>` becomes the relation's `HeaderAggregate`, as RaSQL's `min() AS d` does; a stratified one, `min<D>`,
an aggregate call among the rule's head terms, the other terms its groups). Every other relation an atom
names is read from a table: a recsql or Spark table of that name, or what an `.input` made it
(`sources`). The answer is `.output`'s relation.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

from sqlglot import exp

from translator.core import SchemaProvider
from translator.datalog.syntax import (
    AtomSyntax,
    Clause,
    ComparisonSyntax,
    Declaration,
    HeadAggregate,
    HeadTerm,
    Place,
    ProgramSyntax,
)
from translator.errors import TranslationError, position_of
from translator.ir import (
    WILDCARD,
    Aggregate,
    Assignment,
    Atom,
    Condition,
    HeaderAggregate,
    Literal,
    Program,
    Relation,
    Rule,
    var,
    variables_of,
)

MONOTONIC = {"mmin": Aggregate.MIN, "mmax": Aggregate.MAX, "mcount": Aggregate.COUNT, "msum": Aggregate.SUM}
STRATIFIED = {"min": exp.Min, "max": exp.Max, "count": exp.Count, "sum": exp.Sum}
ANSWER = "answer"  # the relation of the answer (with `_`s after it should the program name one so)


class Fresh:
    """The variables the translation makes (one per constant argument or repeated variable of an atom),
    kept apart from the user's."""

    def __init__(self) -> None:
        self.numbers = itertools.count()
        self.made: set[str] = set()

    def variable(self) -> str:
        name = f"_v{next(self.numbers)}"
        self.made.add(name)
        return name


def error(message: str, place: Place) -> TranslationError:
    return TranslationError(message, place.line, place.column)


def program_of(syntax: ProgramSyntax, output: str, catalog: SchemaProvider, sources: Mapping[str, str]) -> Program:
    """The IR of `syntax` answering with relation `output`; `sources` names the table each `.input`
    relation reads (its own name otherwise)."""
    derived = {clause.head.relation for clause in syntax.clauses}
    declared = {declaration.relation: declaration for declaration in syntax.declarations}
    check_stratified(syntax)
    check_declared_constants(syntax, declared)
    relations = {name: relation_of(name, syntax, declared) for name in sorted(derived)}
    names = Names(relations, catalog, sources, Fresh())
    rules = [rule_of(clause, names) for clause in syntax.clauses]
    if output not in relations:
        columns = columns_of_table(output, catalog, sources)
        if columns is None:
            raise TranslationError(f".output names '{output}', which no rule derives and no table holds")
        relations[output] = Relation(output, columns, distinct=True)
        read = [f"_o{i}" for i in range(len(columns))]
        rules.append(Rule(output, tuple(map(var, read)), (Atom(sources.get(output, output), tuple(read)),)))
    columns = relations[output].columns
    answered = [f"_a{i}" for i in range(len(columns))]
    answer = next(name for name in (ANSWER + "_" * n for n in itertools.count()) if name not in relations)
    relations[answer] = Relation(answer, columns)
    rules.append(Rule(answer, tuple(map(var, answered)), (Atom(output, tuple(answered)),)))
    return Program(relations, rules, answer)


def check_stratified(syntax: ProgramSyntax) -> None:
    """No relation depends on its own negation: a negated atom whose relation reads, through rules, the
    head of its rule is an error placed at the negation."""
    reads: dict[str, set[str]] = {}
    for clause in syntax.clauses:
        reads.setdefault(clause.head.relation, set()).update(
            literal.relation for literal in clause.body if isinstance(literal, AtomSyntax)
        )

    def depends(relation: str, on: str) -> bool:
        seen, stack = set(), [relation]
        while stack:
            current = stack.pop()
            if current == on:
                return True
            if current not in seen:
                seen.add(current)
                stack.extend(reads.get(current, ()))
        return False

    for clause in syntax.clauses:
        for literal in clause.body:
            if isinstance(literal, AtomSyntax) and literal.negated and depends(literal.relation, clause.head.relation):
                raise error(
                    f"the negation of '{literal.relation}' is inside its own recursion (it depends on "
                    f"'{clause.head.relation}'): the program cannot be stratified",
                    literal.place,
                )


SOUFFLE_KINDS = {"number": "an integer", "unsigned": "an integer", "float": "a number", "symbol": "a string"}


def check_declared_constants(syntax: ProgramSyntax, declared: Mapping[str, Declaration]) -> None:
    """The constants of facts and heads fit the types their relation's `.decl` gives its columns."""
    for clause in syntax.clauses:
        declaration = declared.get(clause.head.relation)
        if declaration is None or len(declaration.columns) != len(clause.terms):
            continue
        for term, (column, kind) in zip(clause.terms, declaration.columns):
            if not isinstance(term, exp.Literal) or kind not in SOUFFLE_KINDS:
                continue
            fits = (
                (not term.is_string and (kind == "float" or "." not in term.name))
                if kind != "symbol"
                else term.is_string
            )
            if not fits:
                line, where = position_of(term)
                raise TranslationError(
                    f"column {column} of {clause.head.relation} is a {kind} ({SOUFFLE_KINDS[kind]}), not {term.sql()}",
                    line,
                    where,
                )


def relation_of(name: str, syntax: ProgramSyntax, declared: Mapping[str, Declaration]) -> Relation:
    """A derived relation: its columns (declared, else named after the first rule's head variables, else
    c0 ..) and its monotonic aggregate, which every rule of it must agree on."""
    clauses = [clause for clause in syntax.clauses if clause.head.relation == name]
    width = len(clauses[0].terms)
    for clause in clauses:
        if len(clause.terms) != width:
            raise error(f"'{name}' has {width} columns in one rule and {len(clause.terms)} in another", clause.place)
    aggregate = None
    for clause in clauses:
        for position, term in enumerate(clause.terms):
            if isinstance(term, HeadAggregate) and term.function in MONOTONIC:
                found = HeaderAggregate(MONOTONIC[term.function], position)
                if aggregate is not None and not compatible(aggregate, found):
                    raise error(f"the rules of '{name}' aggregate differently", term.place)
                if aggregate is None or found.function is Aggregate.COUNT:
                    aggregate = found
    declaration = declared.get(name)
    if declaration is not None:
        if len(declaration.columns) != width:
            raise error(f".decl {name} has {len(declaration.columns)} columns but its rules {width}", declaration.place)
        columns = tuple(column for column, _ in declaration.columns)
    else:
        columns = column_names(clauses[0].terms)
    return Relation(name, columns, distinct=True, aggregate=aggregate)


def compatible(one: HeaderAggregate, other: HeaderAggregate) -> bool:
    """Whether two rules' monotonic aggregates are one relation's: the same, or a count and a sum (a
    count adds up its contributions, as RaSQL's count() does: `mcount<_>` contributes 1, `msum<C>` C)."""
    return one.column == other.column and (
        one.function is other.function or (one.function.is_sum and other.function.is_sum)
    )


def column_names(terms: tuple[HeadTerm, ...]) -> tuple[str, ...]:
    """Columns named after a rule's head: a variable's name, an aggregate's function (`count`), else
    c0, c1, ... by position (and so where two would be named alike)."""
    names = []
    for position, term in enumerate(terms):
        if isinstance(term, HeadAggregate):
            names.append(term.function[1:] if term.function in MONOTONIC else term.function)
        elif isinstance(term, exp.Column) and term.name != WILDCARD:
            names.append(term.name.lower())
        else:
            names.append(f"c{position}")
    return tuple(name if names.count(name) == 1 else f"c{position}" for position, name in enumerate(names))


def columns_of_table(name: str, catalog: SchemaProvider, sources: Mapping[str, str]) -> tuple[str, ...] | None:
    return catalog.table_columns(sources.get(name, name))


@dataclass(frozen=True)
class Names:
    """What a clause's atoms may name (the derived relations, the tables, the tables `.input`s read) and
    the variables the translation makes."""

    relations: Mapping[str, Relation]
    catalog: SchemaProvider
    sources: Mapping[str, str]
    fresh: Fresh


def rule_of(clause: Clause, names: Names) -> Rule:
    """The IR rule of a clause: its positive atoms, the equalities their constant arguments make, its
    comparisons (an equality binding a variable no atom binds is an assignment), its negated atoms."""
    atoms: list[Atom] = []
    equalities: list[Literal] = []
    negated: list[tuple[AtomSyntax, Atom]] = []
    for literal in clause.body:
        if isinstance(literal, AtomSyntax):
            atom = atom_of(literal, names, equalities)
            if literal.negated:
                negated.append((literal, atom))
            else:
                atoms.append(atom)
    bound = {variable for atom in atoms for variable in atom.variables()}
    compared = bind([literal for literal in clause.body if isinstance(literal, ComparisonSyntax)], bound)
    for literal, atom in negated:
        free = sorted(atom.variables() - bound - names.fresh.made)
        if free:
            raise error(
                f"unbound variable {free[0]} in the negated atom {literal.relation}(...): bind it in a positive atom",
                literal.place,
            )
    terms = tuple(head_term(term, clause, bound) for term in clause.terms)
    return Rule(clause.head.relation, terms, (*atoms, *equalities, *compared, *(atom for _, atom in negated)))


def bind(comparisons: list[ComparisonSyntax], bound: set[str]) -> list[Literal]:
    """The comparisons as conditions and assignments, in an order where each reads only variables bound
    before it; `bound` grows by the variables they assign."""
    literals: list[Literal] = []
    pending = list(comparisons)
    while pending:
        for comparison in pending:
            literal = binding(comparison.expression, bound)
            if literal is not None:
                break
        else:
            comparison = pending[0]
            unbound = sorted(variables_of(comparison.expression) - bound)
            raise error(
                f"unbound variable {unbound[0]} in a comparison: no atom of the rule binds it", comparison.place
            )
        pending.remove(comparison)
        literals.append(literal)
        if isinstance(literal, Assignment):
            bound.add(literal.variable)
    return literals


def binding(expression: exp.Expr, bound: set[str]) -> Literal | None:
    """`X = e` with X unbound and e's variables bound: an assignment; a comparison of bound variables:
    a condition; else None (not yet)."""
    if isinstance(expression, exp.EQ):
        for target, source in ((expression.this, expression.expression), (expression.expression, expression.this)):
            if (
                isinstance(target, exp.Column)
                and target.name not in bound
                and target.name != WILDCARD
                and variables_of(source) <= bound
            ):
                return Assignment(target.name, source)
    return Condition(expression) if variables_of(expression) <= bound else None


def atom_of(literal: AtomSyntax, names: Names, equalities: list[Literal]) -> Atom:
    """The IR atom of `literal`: a variable per argument. A constant, an expression or a repeated variable
    becomes a fresh variable equal to it: a condition added to `equalities` for a positive atom, the
    anti-join's own condition for a negated one."""
    name = literal.relation
    if name in names.relations:
        width, relation = len(names.relations[name].columns), name
    else:
        columns = columns_of_table(name, names.catalog, names.sources)
        if columns is None:
            raise error(f"unknown relation '{name}': no rule derives it and no table or .input holds it", literal.place)
        width, relation = len(columns), names.sources.get(name, name)
    if len(literal.arguments) != width:
        raise error(f"'{name}' has {width} columns, not {len(literal.arguments)}", literal.place)
    arguments: list[str] = []
    own: list[exp.Expr] = []
    for argument in literal.arguments:
        if isinstance(argument, exp.Column) and (argument.name == WILDCARD or argument.name not in arguments):
            arguments.append(argument.name)
            continue
        variable = names.fresh.variable()
        arguments.append(variable)
        own.append(exp.EQ(this=var(variable), expression=argument.copy()))
    if literal.negated:
        on = exp.and_(*own) if own else None
        return Atom(relation, tuple(arguments), negated=True, on=on)
    equalities.extend(Condition(condition) for condition in own)
    return Atom(relation, tuple(arguments))


def head_term(term: exp.Expr | HeadAggregate, clause: Clause, bound: set[str]) -> exp.Expr:
    if isinstance(term, HeadAggregate):
        if term.function in MONOTONIC:
            expression = term.argument if term.argument is not None else exp.Literal.number(1)
        elif term.argument is None:
            expression = exp.Count(this=exp.Star())
        else:
            expression = STRATIFIED[term.function](this=term.argument)
        check_bound(expression, bound, term.place)
        return expression
    check_bound(term, bound, clause.head.place)
    return term


def check_bound(expression: exp.Expr, bound: set[str], place: Place) -> None:
    unbound = sorted(variables_of(expression) - bound)
    if unbound:
        raise error(f"unbound variable {unbound[0]} in the head: no atom of the rule binds it", place)
