"""A parsed Datalog program as the IR, the same `Program` a SQL query becomes, for the same optimizer,
planner and strategies.

Relations a rule derives become the program's relations (set semantics; a head's monotonic aggregate
`mmin<D>` becomes the relation's `HeaderAggregate`, as RaSQL's `min() AS d` does; a stratified one, `min<D>`,
an aggregate call among the rule's head terms, the other terms its groups). Every other relation an atom
names is read from what `Tables` finds for the name: a recsql or Spark table of that name, what an
`.input` made it, or (in a SQL statement) a view. The answer is `.output`'s relation.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from sqlglot import exp

from translator.datalog.aggregates import (
    bodies_as_sets,
    bound_outside_only,
    sums_outside_recursion,
    without_body_aggregates,
)
from translator.datalog.syntax import (
    AtomSyntax,
    BodyAggregate,
    Clause,
    ComparisonSyntax,
    Declaration,
    HeadAggregate,
    HeadTerm,
    InputOutput,
    Place,
    ProgramSyntax,
)
from translator.errors import TranslationError, UnsupportedError, position_of
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


def count_distinct(this: exp.Expr) -> exp.Expr:
    return exp.Count(this=exp.Distinct(expressions=[this]))


STRATIFIED: dict[str, Callable[..., exp.Expr]] = {
    "min": exp.Min,
    "max": exp.Max,
    "count": exp.Count,
    "sum": exp.Sum,
    "mean": exp.Avg,
    "countd": count_distinct,
}
ANSWER = "answer"  # the relation of the answer (as claimed: another name should the program name one so)


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


Tables = Callable[[str], "tuple[str, tuple[str, ...]] | None"]
"""What an atom's name reads when no rule derives it: the relation to read and its columns (None: nothing)."""


def program_of(syntax: ProgramSyntax, output: str, tables: Tables, claim: Callable[[str], str]) -> Program:
    """The IR of `syntax` answering with relation `output`, reading what `tables` finds; `claim` gives
    each relation the program derives its name in the IR (one no other relation there has)."""
    check_stratified(syntax)
    syntax = without_body_aggregates(syntax)
    recursive = Reads(syntax).recursive()
    syntax = bodies_as_sets(sums_outside_recursion(syntax, recursive))
    declared = {declaration.relation: declaration for declaration in syntax.declarations}
    check_declared_constants(syntax, declared)
    derived = sorted({clause.head.relation for clause in syntax.clauses})
    claimed = {name: claim(name) for name in derived}
    relations = {name: relation_of(name, claimed[name], syntax, declared) for name in derived}
    names = Names(relations, tables, Fresh())
    rules = [rule_of(clause, names) for clause in syntax.clauses]
    program = Program({relation.name: relation for relation in relations.values()}, rules)
    if output in relations and output not in recursive:  # the answer itself, as a SQL query's answer is
        program.output = relations[output].name
        return program
    if output in relations:
        source, columns = relations[output].name, relations[output].columns
    else:
        table = tables(output)
        if table is None:
            raise TranslationError(f".output names '{output}', which no rule derives and no table holds")
        source, columns = table
    program.output = claim(ANSWER)
    answered = tuple(f"_a{i}" for i in range(len(columns)))
    program.relations[program.output] = Relation(program.output, columns)
    program.rules.append(Rule(program.output, tuple(map(var, answered)), (Atom(source, answered),)))
    return program


def io_table(item: InputOutput) -> str | None:
    """The table an `.input` reads or an `.output` writes, when its options name one (IO=table)."""
    io = item.options.get("io", "table" if "name" in item.options else None)
    if io is None:
        return None
    if io != "table" and not (item.kind == "input" and io == "file"):
        raise UnsupportedError(
            f".{item.kind} {item.relation}: IO={io} is not supported (IO=table"
            + (", IO=file)" if item.kind == "input" else ")"),
            item.place.line,
            item.place.column,
        )
    return item.options.get("name", item.relation) if io == "table" else None


class Reads:
    """Which relations each relation's rules read (in their bodies and body aggregates)."""

    def __init__(self, syntax: ProgramSyntax) -> None:
        self.reads: dict[str, set[str]] = {}
        for clause in syntax.clauses:
            self.reads.setdefault(clause.head.relation, set()).update(atom.relation for atom in atoms_of(clause))

    def depends(self, relation: str, on: str) -> bool:
        """Whether `relation` reads `on`, directly or through rules."""
        seen, stack = set(), [relation]
        while stack:
            current = stack.pop()
            if current == on:
                return True
            if current not in seen:
                seen.add(current)
                stack.extend(self.reads.get(current, ()))
        return False

    def recursive(self) -> set[str]:
        """The relations that read themselves through rules."""
        return {name for name, read in self.reads.items() if any(self.depends(r, name) for r in read)}


def check_stratified(syntax: ProgramSyntax) -> None:
    """No relation depends on its own negation or aggregate: a negated atom, or an aggregate (in the head
    or the body), over a relation that reads, through rules, the head of its rule is an error placed there."""
    depends = Reads(syntax).depends

    def aggregate_in_recursion(function: str, over: str, head: str, place: Place) -> TranslationError:
        monotonic = f", or use m{function}<..>, the monotonic aggregate" if f"m{function}" in MONOTONIC else ""
        return error(
            f"the aggregate {function} over '{over}' is inside its own recursion (it depends on '{head}'): "
            f"compute it after the recursion{monotonic}",
            place,
        )

    for clause in syntax.clauses:
        head = clause.head.relation
        for atom in atoms_of(clause):
            if atom.negated and depends(atom.relation, head):
                raise error(
                    f"the negation of '{atom.relation}' is inside its own recursion (it depends on "
                    f"'{head}'): the program cannot be stratified",
                    atom.place,
                )
        stratified = [t for t in clause.terms if isinstance(t, HeadAggregate) and t.function in STRATIFIED]
        for aggregate in stratified:
            for literal in clause.body:
                if isinstance(literal, AtomSyntax) and depends(literal.relation, head):
                    raise aggregate_in_recursion(aggregate.function, literal.relation, head, aggregate.place)
        for inner in nested(clause.aggregates):
            for literal in inner.body:
                if isinstance(literal, AtomSyntax) and depends(literal.relation, head):
                    raise aggregate_in_recursion(inner.function, literal.relation, head, inner.place)
        recursive = [a.relation for a in clause.body if isinstance(a, AtomSyntax) and depends(a.relation, head)]
        for correlated in clause.aggregates:
            outside = sorted(bound_outside_only(correlated, clause))
            if outside and recursive:
                raise UnsupportedError(
                    f"the {correlated.function} reads {outside[0]}, which only the rest of its rule binds, and that "
                    f"rule is recursive (through '{recursive[0]}'): bind {outside[0]} in the aggregate's own atoms",
                    correlated.place.line,
                    correlated.place.column,
                )


def nested(aggregates: tuple[BodyAggregate, ...]) -> Iterator[BodyAggregate]:
    """Body aggregates and those inside them."""
    for aggregate in aggregates:
        yield aggregate
        yield from nested(aggregate.aggregates)


def atoms_of(clause: Clause) -> Iterator[AtomSyntax]:
    """The atoms of a clause's body and of its body aggregates."""
    for literal in (*clause.body, *(item for aggregate in nested(clause.aggregates) for item in aggregate.body)):
        if isinstance(literal, AtomSyntax):
            yield literal


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


def relation_of(name: str, claimed: str, syntax: ProgramSyntax, declared: Mapping[str, Declaration]) -> Relation:
    """A derived relation, `claimed` its name in the IR: its columns (declared, else named after the first
    rule's head variables, else c0 ..) and its monotonic aggregate, which every rule of it must agree on."""
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
    grouped = len(clauses) == 1 and any(
        isinstance(term, HeadAggregate) and term.function in STRATIFIED for term in clauses[0].terms
    )  # one GROUP BY: distinct rows already
    label = name if claimed != name else ""
    return Relation(claimed, columns, distinct=not grouped, aggregate=aggregate, label=label)


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


@dataclass(frozen=True)
class Names:
    """What a clause's atoms may name (the derived relations, what `tables` finds) and the variables the
    translation makes."""

    relations: Mapping[str, Relation]  # by the program's names
    tables: Tables
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
    head = names.relations[clause.head.relation].name
    return computed_in_head(Rule(head, terms, (*atoms, *equalities, *compared, *(atom for _, atom in negated))))


def computed_in_head(rule: Rule) -> Rule:
    """`sp(Y, D) :- ..., D = D0 + W.` as `sp(Y, D0 + W) :- ....`: an assignment whose variable only the
    head reads is computed there, as a SQL query's select list computes it (and so plans alike)."""
    while True:
        for literal in rule.body:
            if not isinstance(literal, Assignment):
                continue
            others = [other for other in rule.body if other is not literal]
            if any(literal.variable in other.variables() for other in others):
                continue
            terms = tuple(substituted(term, literal.variable, literal.expression) for term in rule.terms)
            rule = Rule(rule.head, terms, tuple(others))
            break
        else:
            return rule


def substituted(expression: exp.Expr, variable: str, value: exp.Expr) -> exp.Expr:
    """`expression` with `value` where it reads `variable`."""

    def replaced(node: exp.Expr) -> exp.Expr:
        is_variable = isinstance(node, exp.Column) and not node.table and node.name == variable
        return value.copy() if is_variable else node

    return expression.transform(replaced)


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
        width, relation = len(names.relations[name].columns), names.relations[name].name
    else:
        table = names.tables(name)
        if table is None:
            raise error(f"unknown relation '{name}': no rule derives it and no table or .input holds it", literal.place)
        relation, width = table[0], len(table[1])
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
            expression = contribution(term)
        elif term.argument is None:
            expression = exp.Count(this=exp.Star())
        else:
            expression = STRATIFIED[term.function](this=term.argument)
        check_bound(expression, bound, term.place)
        return expression
    check_bound(term, bound, clause.head.place)
    return term


def contribution(term: HeadAggregate) -> exp.Expr:
    """What one derivation adds to a monotonic aggregate's group: its value (mmin, mmax, msum), 1 for a
    count (`mcount<X>` counts the distinct Xs: the contributors), C for a pair `(Z, C)`."""
    if term.function == "mcount" and term.contributor is None:
        return exp.Literal.number(1)
    assert term.argument is not None  # only mcount may be mcount<_>: the parser sees to it
    return term.argument


def check_bound(expression: exp.Expr, bound: set[str], place: Place) -> None:
    unbound = sorted(variables_of(expression) - bound)
    if unbound:
        raise error(f"unbound variable {unbound[0]} in the head: no atom of the rule binds it", place)
