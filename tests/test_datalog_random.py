"""Random Datalog programs through recsql's Datalog front end, under each strategy, against a plain-Python evaluator
written here (it imports nothing of recsql or translator): every relation a program derives holds, in recsql's
answer, exactly the rows the evaluator derives, each once.

A program (hypothesis) reads 1-4 random tables `dr_t0`.. (arity 1-2, values 0..6, perhaps empty, perhaps with a row
twice: a table is read as a set) and derives 2-6 relations, stratum by stratum, each stratum one of:

- plain rules, no recursion;
- recursion under set semantics: linear or non-linear, of one relation or two mutually recursive ones;
- a stratified head aggregate (`min<X>`, `max<X>`, `sum<X>`, `count<_>`, `count<X>`, `countd<X>`) over lower strata;
- monotonic counts and sums outside recursion (`mcount<_>`, `mcount<X>`, `msum<X>`; several rules add up);
- `mmin<D>` / `mmax<D>` in recursion (linear, non-linear, or two relations mutually), facts among its rules.

Rules join 1-3 atoms with constants, `_` and repeated variables, and add comparisons, arithmetic assignments, negated
atoms of lower strata and Soufflé's body aggregates (count, sum, min, max; correlated with the rule or not, compared
directly or bound to a variable) over lower strata, their literals in any order. Every program is range-restricted
and stratified by construction. A monotonic aggregate sees only monotone arithmetic (non-negative additions; mmin
derives under bounds `D < b` only, mmax along increasing keys `X < Y`), where the best value over all derivations is
the aggregated least fixpoint and the order of evaluation cannot change it.

The tables are registered on the suite's connection (each example's replace the last's). In process every derived
relation is an output and compared; on Spark, where each output costs jobs of its own, programs derive at most 4
relations and the outputs are those no other stratum reads (which between them read every derived relation).

In the suite the examples are derandomized (tests/test_differential.py's conventions): the same programs run each
time, most of them in process (`local`), fewer on Spark, about 75 s in all, and a failing one is reported as found,
not shrunk. A long run explores: RECSQL_DATALOG_EXAMPLES=N runs N new examples under each strategy (pick one with
-k), shrinks what fails and keeps it in hypothesis's example database. A recsql.NotSupportedError is a deliberate
refusal and discards the example (`assume`); any other error fails, and so does a wrong answer.
"""

from __future__ import annotations

import itertools
import operator
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, assume, given, note, settings
from hypothesis import strategies as st
from strategies import Runs, module_under

import recsql

pytestmark = module_under("local", "decomposed", "distributed")

LONG_RUN = int(os.environ.get("RECSQL_DATALOG_EXAMPLES", "0"))
# examples per strategy in the suite, and the most relations a program derives: in process a program costs 0.1-1 s,
# on Spark 1-15 s (a Spark job per stratum and output; one per iteration of a non-linear or mutual recursion)
EXAMPLES = {"local": 100, "decomposed": 8, "distributed": 8}
RELATIONS = {"local": 6, "decomposed": 4, "distributed": 4}


def examples(runs: Runs) -> settings:
    """The suite's fixed examples under the strategy `runs` are for, reported as found; or a long run's, shrunk."""
    return settings(
        max_examples=LONG_RUN or EXAMPLES[runs.strategy],
        derandomize=not LONG_RUN,
        database=settings.default.database if LONG_RUN else None,
        phases=list(Phase) if LONG_RUN else [Phase.explicit, Phase.generate],
        deadline=None,
        print_blob=True,
        suppress_health_check=list(HealthCheck),
    )


# ---------------------------------------------------------------------------------------------------------------
# Programs: terms, literals, rules
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Var:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Const:
    value: int

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Arith:
    op: str  # + or *, over a variable and a variable or constant
    left: Expr
    right: Expr

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


Expr = Var | Const | Arith
WILDCARD = Var("_")


@dataclass(frozen=True)
class Atom:
    relation: str
    args: tuple[Expr, ...]
    negated: bool = False

    def __str__(self) -> str:
        return f"{'!' if self.negated else ''}{self.relation}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Comparison:
    op: str  # = (an assignment where one side is a variable nothing else binds), !=, <, <=, >, >=
    left: Expr
    right: Expr

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


@dataclass(frozen=True)
class BodyAggregate:
    """`N = sum A : { body }` (`result` N), or `count : { body } < X` (`test`: the comparison and its right side)."""

    function: str  # count, sum, min, max
    argument: Expr | None  # None: count
    body: tuple[Atom | Comparison, ...]
    result: str | None
    test: tuple[str, Expr] | None = None

    def __str__(self) -> str:
        inner = str(self.body[0]) if len(self.body) == 1 else "{ " + ", ".join(map(str, self.body)) + " }"
        aggregate = f"{self.function}{'' if self.argument is None else f' {self.argument}'} : {inner}"
        if self.result is not None:
            return f"{self.result} = {aggregate}"
        assert self.test is not None
        return f"{aggregate} {self.test[0]} {self.test[1]}"


Literal = Atom | Comparison | BodyAggregate


@dataclass(frozen=True)
class HeadAggregate:
    function: str  # min, max, sum, count, countd; mmin, mmax, mcount, msum
    argument: Expr | None  # None: count<_>, mcount<_>

    def __str__(self) -> str:
        return f"{self.function}<{'_' if self.argument is None else self.argument}>"


@dataclass(frozen=True)
class Rule:
    relation: str
    head: tuple[Expr | HeadAggregate, ...]
    body: tuple[Literal, ...]

    def __str__(self) -> str:
        head = f"{self.relation}({', '.join(map(str, self.head))})"
        return f"{head} :- {', '.join(map(str, self.body))}." if self.body else f"{head}."


@dataclass(frozen=True)
class Table:
    name: str
    arity: int
    rows: tuple[tuple[int, ...], ...]

    def arrow(self) -> pa.Table:
        return pa.table({f"c{i}": pa.array([row[i] for row in self.rows], pa.int64()) for i in range(self.arity)})


@dataclass(frozen=True)
class Program:
    tables: tuple[Table, ...]
    rules: tuple[Rule, ...]

    @property
    def derived(self) -> list[str]:
        return list(dict.fromkeys(rule.relation for rule in self.rules))

    @property
    def sinks(self) -> list[str]:
        """The derived relations no relation of another stratum reads: between them, they read every one."""
        component = {name: stratum for stratum in strata(self.rules) for name in stratum}
        read = {name for rule in self.rules for name, _ in reads(rule) if rule.relation not in component.get(name, ())}
        return [name for name in self.derived if name not in read]

    def text(self, outputs: list[str]) -> str:
        return "\n".join([*map(str, self.rules), *(f".output {name}" for name in outputs)])


# ---------------------------------------------------------------------------------------------------------------
# The evaluator: stratified, naive fixpoint per stratum over Python sets
# ---------------------------------------------------------------------------------------------------------------

Binding = dict[str, int]
COMPARE: dict[str, Callable[[int, int], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
ARITH = {"+": operator.add, "*": operator.mul}
WILDCARDS = itertools.count()


def value(expr: Expr, binding: Binding) -> int:
    if isinstance(expr, Const):
        return expr.value
    if isinstance(expr, Var):
        return binding[expr.name]
    return ARITH[expr.op](value(expr.left, binding), value(expr.right, binding))


def variables(expr: Expr | None) -> set[str]:
    if isinstance(expr, Var):
        return {expr.name}
    if isinstance(expr, Arith):
        return variables(expr.left) | variables(expr.right)
    return set()


def matched(atom: Atom, row: tuple[int, ...], binding: Binding) -> Binding | None:
    """`binding` extended so that `atom` reads `row`, or None where it cannot."""
    found = dict(binding)
    for arg, column in zip(atom.args, row):
        if arg == WILDCARD:
            continue
        if isinstance(arg, Var) and arg.name not in found:
            found[arg.name] = column
        elif value(arg, found) != column:
            return None
    return found


def named_wildcards(atom: Atom) -> Atom:
    """A positive atom with each `_` a variable of its own: bindings differing there are distinct bindings."""
    args = tuple(Var(f"_w{next(WILDCARDS)}") if arg == WILDCARD else arg for arg in atom.args)
    return Atom(atom.relation, args)


def solutions(body: tuple[Literal, ...], db: dict[str, set], start: Binding) -> list[Binding]:
    """The distinct bindings extending `start` that make `body` true: its positive atoms joined, then its body
    aggregates, comparisons (assignments where they bind) and negated atoms."""
    found = [start]
    for atom in (named_wildcards(lit) for lit in body if isinstance(lit, Atom) and not lit.negated):
        found = [
            extended for b in found for row in db[atom.relation] if (extended := matched(atom, row, b)) is not None
        ]
    for aggregate in (lit for lit in body if isinstance(lit, BodyAggregate)):
        found = [extended for b in found if (extended := aggregated(aggregate, db, b)) is not None]
    comparisons = [lit for lit in body if isinstance(lit, Comparison)]
    found = [b for b in found if compared(comparisons, b)]
    for atom in (lit for lit in body if isinstance(lit, Atom) and lit.negated):
        found = [b for b in found if not any(matched(atom, row, b) is not None for row in db[atom.relation])]
    return list({tuple(sorted(b.items())): b for b in found}.values())


def aggregated(aggregate: BodyAggregate, db: dict[str, set], binding: Binding) -> Binding | None:
    """`binding` with the body aggregate's value (its body's variables that the binding holds are correlated, the
    others its own); None where a min / max of nothing, or the aggregate's test, leaves the rule nothing."""
    inner = solutions(aggregate.body, db, binding)
    values = [value(aggregate.argument, b) for b in inner] if aggregate.argument is not None else []
    if aggregate.function == "count":
        result = len(inner)
    elif aggregate.function == "sum":
        result = sum(values)
    elif values:
        result = min(values) if aggregate.function == "min" else max(values)
    else:
        return None
    if aggregate.test is not None:
        op, right = aggregate.test
        return binding if COMPARE[op](result, value(right, binding)) else None
    assert aggregate.result is not None
    return {**binding, aggregate.result: result}


def compared(comparisons: list[Comparison], binding: Binding) -> bool:
    """Whether the comparisons hold, taken in an order where each reads bound variables; `X = e` with X unbound binds
    X (in `binding`)."""
    pending = list(comparisons)
    while pending:
        comparison = next(c for c in pending if assignment(c, binding) or variables_of(c) <= binding.keys())
        pending.remove(comparison)
        assigned = assignment(comparison, binding)
        if assigned is not None:
            binding[assigned[0]] = value(assigned[1], binding)
        elif not COMPARE[comparison.op](value(comparison.left, binding), value(comparison.right, binding)):
            return False
    return True


def variables_of(comparison: Comparison) -> set[str]:
    return variables(comparison.left) | variables(comparison.right)


def assignment(comparison: Comparison, binding: Binding) -> tuple[str, Expr] | None:
    """`X = e` (or `e = X`) with X unbound and e's variables bound: X and e."""
    for target, source in ((comparison.left, comparison.right), (comparison.right, comparison.left)):
        free = comparison.op == "=" and isinstance(target, Var) and target.name not in binding
        if free and variables(source) <= binding.keys():
            return target.name, source  # type: ignore[union-attr]
    return None


def head_aggregate(rules: list[Rule]) -> tuple[int, HeadAggregate] | None:
    for rule in rules:
        for position, term in enumerate(rule.head):
            if isinstance(term, HeadAggregate):
                return position, term
    return None


def term_value(term: Expr | HeadAggregate, binding: Binding) -> int:
    return value(term.argument if isinstance(term, HeadAggregate) else term, binding)  # type: ignore[arg-type]


def grouped(rule: Rule, position: int, db: dict[str, set]) -> dict[tuple, int]:
    """A head aggregate over the distinct bindings of the rule's body, by the values of the other head terms."""
    groups: dict[tuple, list[Binding]] = {}
    for b in solutions(rule.body, db, {}):
        key = tuple(value(t, b) for i, t in enumerate(rule.head) if i != position)  # type: ignore[arg-type]
        groups.setdefault(key, []).append(b)
    aggregate = rule.head[position]
    assert isinstance(aggregate, HeadAggregate)
    return {key: AGGREGATE[aggregate.function](aggregate.argument, bindings) for key, bindings in groups.items()}


def distinct_values(argument: Expr | None, bindings: list[Binding]) -> int:
    """countd<X>, mcount<X>: the distinct values of X; mcount<_>: the bindings."""
    return len(bindings) if argument is None else len({value(argument, b) for b in bindings})


AGGREGATE: dict[str, Callable[[Expr | None, list[Binding]], int]] = {  # a head aggregate over a group's bindings
    "count": lambda argument, bindings: len(bindings),  # count<_>, count<X>: X is never NULL
    "countd": distinct_values,
    "mcount": distinct_values,
    "sum": lambda argument, bindings: sum(value(argument, b) for b in bindings),  # type: ignore[arg-type]
    "msum": lambda argument, bindings: sum(value(argument, b) for b in bindings),  # type: ignore[arg-type]
    "min": lambda argument, bindings: min(value(argument, b) for b in bindings),  # type: ignore[arg-type]
    "max": lambda argument, bindings: max(value(argument, b) for b in bindings),  # type: ignore[arg-type]
}


def derive(rules: list[Rule], db: dict[str, set], old: set[tuple]) -> set[tuple]:
    """One round of a relation's rules over `db`, where the relation holds `old`."""
    found = head_aggregate(rules)
    if found is None:
        return old | {
            tuple(term_value(t, b) for t in rule.head) for rule in rules for b in solutions(rule.body, db, {})
        }
    position, aggregate = found
    best: Counter[tuple] = Counter()  # adds up the rules' sums (update); mmin / mmax set each group's value
    if aggregate.function in ("mmin", "mmax"):  # each group's best value over every derivation
        better = min if aggregate.function == "mmin" else max
        rows = [tuple(term_value(t, b) for t in rule.head) for rule in rules for b in solutions(rule.body, db, {})]
        for row in [*old, *rows]:
            key = row[:position] + row[position + 1 :]
            best[key] = better(best.get(key, row[position]), row[position])
    else:  # a stratified aggregate's one rule, or the sum of the rules' monotonic counts and sums
        for rule in rules:
            best.update(grouped(rule, position, db))
    return {key[:position] + (total,) + key[position:] for key, total in best.items()}


def reads(rule: Rule) -> Iterator[tuple[str, bool]]:
    """The relations a rule reads, each with whether it reads it positively (not negated, not in a body aggregate)."""
    for literal in rule.body:
        if isinstance(literal, Atom):
            yield literal.relation, not literal.negated
        elif isinstance(literal, BodyAggregate):
            yield from ((atom.relation, False) for atom in literal.body if isinstance(atom, Atom))


def strata(rules: tuple[Rule, ...]) -> list[set[str]]:
    """The derived relations by strongly connected components of the dependency graph, each after those it reads."""
    derived = list(dict.fromkeys(rule.relation for rule in rules))
    edges: dict[str, set[str]] = {name: set() for name in derived}
    for rule in rules:
        edges[rule.relation] |= {name for name, _ in reads(rule) if name in edges}
    reach = {name: set(edges[name]) for name in derived}
    for middle, start in itertools.product(derived, derived):  # Warshall: middle is the outer loop
        if middle in reach[start]:
            reach[start] |= reach[middle]
    order: list[set[str]] = []
    while len(done := set().union(*order)) < len(derived):
        for name in (n for n in derived if n not in done):
            component = {name} | {other for other in reach[name] if name in reach[other]}
            if all(edges[member] <= done | component for member in component):
                order.append(component)
                break
    for rule in rules:  # negation and aggregates only over lower strata, but mmin / mmax
        component = next(c for c in order if rule.relation in c)
        found = head_aggregate([rule])
        monotonic = found is None or found[1].function in ("mmin", "mmax")
        assert all(positive and monotonic for name, positive in reads(rule) if name in component), str(rule)
    return order


def evaluate(program: Program) -> dict[str, set[tuple]]:
    """Each derived relation's rows: stratum by stratum, rounds of every rule over the last round's relations until
    none changes."""
    db: dict[str, set] = {table.name: set(table.rows) for table in program.tables}
    for stratum in strata(program.rules):
        rules = {name: [rule for rule in program.rules if rule.relation == name] for name in stratum}
        db.update({name: set() for name in stratum})
        for _ in range(1000):
            found = {name: derive(rules[name], db, db[name]) for name in stratum}
            if all(found[name] == db[name] for name in stratum):
                break
            db.update(found)
        else:
            raise AssertionError("the generator made a program whose fixpoint is not reached in 1000 rounds")
    return {name: db[name] for name in program.derived}


# ---------------------------------------------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------------------------------------------

VALUES = st.integers(0, 6)
ATOM_VARIABLES = ("X", "Y", "Z", "U", "V", "W")
LOCAL_VARIABLES = ("A", "B", "C")  # a body aggregate's own
OPERATORS = tuple(COMPARE)


@st.composite
def tables(draw: st.DrawFn) -> tuple[Table, ...]:
    """1-4 tables of arity 1-2 over 0..6, each perhaps empty, perhaps holding a row twice (mostly a few rows)."""
    made = []
    for number in range(draw(st.integers(1, 4))):
        arity = draw(st.sampled_from((1, 2, 2)))
        size = draw(st.sampled_from((0, 3, 6, 6, 9)))
        rows = draw(st.lists(st.tuples(*[VALUES] * arity), min_size=size, max_size=size + 6))
        made.append(Table(f"dr_t{number}", arity, tuple(rows)))
    return tuple(made)


class Body:
    """A rule's body as it is drawn: its literals and what they bind. Atoms read `scope` (tables and lower strata:
    name → arity) and name `pool`'s variables; a body aggregate's body may name `outer` too, the variables the
    atoms of its rule bind (it correlates with the rule there)."""

    def __init__(self, draw: st.DrawFn, scope: dict[str, int], pool=ATOM_VARIABLES, outer: tuple[str, ...] = ()):
        self.draw, self.scope, self.pool, self.outer = draw, scope, pool, outer
        self.literals: list[Literal] = []
        self.atom_bound: list[str] = []  # by positive atoms: what negated atoms and body aggregates may name
        self.bound: list[str] = []  # and by assignments and body aggregates: what comparisons and the head may name

    def pick(self, options):
        return self.draw(st.sampled_from(list(options)))

    def chance(self, percent: int) -> bool:
        return self.draw(st.integers(1, 100)) <= percent

    def constant(self) -> Const:
        return Const(self.draw(VALUES))

    def bind(self, name: str) -> None:
        for names in (self.atom_bound, self.bound):
            if name not in names:
                names.append(name)

    def argument(self) -> Expr:
        """A positive atom's argument: a variable (one bound already, a new one, the enclosing rule's), a constant
        or `_`."""
        kinds = ["new"] * 3 + ["constant", "wildcard"]
        kinds += ["bound"] * 4 if self.atom_bound else []
        kinds += ["outer"] * 3 if self.outer else []
        kind = self.pick(kinds)
        if kind == "constant":
            return self.constant()
        if kind == "wildcard":
            return WILDCARD
        name = self.pick({"new": self.pool, "bound": self.atom_bound, "outer": self.outer}[kind])
        self.bind(name)
        return Var(name)

    def atom(self, relation: str, arity: int) -> None:
        self.literals.append(Atom(relation, tuple(self.argument() for _ in range(arity))))

    def atoms(self, count: int) -> None:
        for _ in range(count):
            self.atom(*self.pick(sorted(self.scope.items())))

    def operand(self, names: list[str]) -> Expr:
        return Var(self.pick(names)) if names and self.chance(60) else self.constant()

    def comparison(self) -> None:
        name = self.pick(self.bound)
        left: Expr = Var(name) if self.chance(80) else Arith("+", Var(name), Const(self.draw(st.integers(1, 2))))
        right = self.operand([other for other in self.bound if other != name])
        self.literals.append(Comparison(self.pick(OPERATORS), left, right))

    def assignment(self, bounded: bool) -> None:
        """`S = X + Y` (or `X * 2`, either side of the `=`); and `S < b` where the rule recurses (values stay few)."""
        name = next(n for n in ("S", "T") if n not in self.bound)
        op = self.pick("+*")
        right = self.operand(self.bound) if op == "+" else Const(self.draw(st.integers(0, 3)))
        expression = Arith(op, Var(self.pick(self.bound)), right)
        sides = (Var(name), expression) if self.chance(70) else (expression, Var(name))
        self.literals.append(Comparison("=", *sides))
        if bounded:
            self.literals.append(Comparison("<", Var(name), Const(self.draw(st.integers(3, 12)))))
        self.bound.append(name)

    def negation(self) -> None:
        """A negated atom naming a variable of the rule's atoms, and `_` or constants perhaps."""
        relation, arity = self.pick(sorted(self.scope.items()))
        args = [self.operand(self.atom_bound) if self.chance(70) else WILDCARD for _ in range(arity)]
        if not any(isinstance(arg, Var) and arg != WILDCARD for arg in args):
            args[self.draw(st.integers(0, arity - 1))] = Var(self.pick(self.atom_bound))
        self.literals.append(Atom(relation, tuple(args), negated=True))

    def body_aggregate(self, recursive: bool) -> None:
        """`N = count : { ... }`, `M = min A : ...`, or `sum A : { ... } > X`, over tables and lower strata, its
        body perhaps negating an atom, perhaps comparing its own variable with a constant or the rule's: in a recursive
        rule, only with one its own atoms name (else its values would depend on the recursion: recsql refuses it,
        NotSupportedError)."""
        inner = Body(self.draw, self.scope, LOCAL_VARIABLES, tuple(self.atom_bound))
        inner.atoms(self.draw(st.integers(1, 2)))
        own = [name for name in inner.bound if name in LOCAL_VARIABLES]
        if own and self.chance(30):
            outer = [name for name in self.atom_bound if name in inner.atom_bound or not recursive]
            inner.literals.append(Comparison(self.pick(OPERATORS[1:]), Var(self.pick(own)), self.operand(outer)))
        if inner.atom_bound and self.chance(15):
            inner.negation()
        function = self.pick(("count", "sum", "min", "max")) if own else "count"
        argument = Var(self.pick(own)) if function != "count" else None
        body = tuple(self.draw(st.permutations(inner.literals)))
        if self.chance(30):
            test = (self.pick(OPERATORS[1:]), self.operand(self.atom_bound))
            self.literals.append(BodyAggregate(function, argument, body, None, test))
            return
        result = next(n for n in ("N", "M") if n not in self.bound)
        self.literals.append(BodyAggregate(function, argument, body, result))
        self.bound.append(result)

    def extras(self, recursive: bool) -> None:
        """Some of: body aggregates, an assignment, comparisons, a negated atom."""
        for percent in (20, 10):
            if self.chance(percent):
                self.body_aggregate(recursive)
        if self.bound and self.chance(20):
            self.assignment(bounded=recursive)
        for _ in range(self.draw(st.integers(0, 2)) if self.bound else 0):
            self.comparison()
        if self.atom_bound and self.chance(25):
            self.negation()

    def head(self, arity: int) -> list[Expr]:
        return [Var(self.pick(self.bound)) if self.bound and self.chance(90) else self.constant() for _ in range(arity)]

    def literals_in_any_order(self) -> tuple[Literal, ...]:
        return tuple(self.draw(st.permutations(self.literals)))


@dataclass
class Stratum:
    rules: list[Rule]
    arities: dict[str, int]  # the relations it derives


Names = Iterator[str]


def set_rules(draw: st.DrawFn, scope: dict[str, int], names: Names, room: int) -> Stratum:
    """One relation of plain rules; or (recursion) one or two relations, each with 1-2 rules over lower strata and
    1-2 rules reading the stratum's own relations, in one atom (linear) or two (non-linear), the other relation
    first where there are two (mutual recursion)."""
    recursive = draw(st.integers(1, 100)) <= 65
    count = draw(st.integers(1, min(2, room))) if recursive else 1
    own = {next(names): draw(st.integers(1, 2)) for _ in range(count)}
    relations = list(own)
    rules = []
    for index, (relation, arity) in enumerate(own.items()):
        for _ in range(draw(st.integers(1, 2))):
            body = Body(draw, scope)
            body.atoms(draw(st.integers(1, 3)))
            body.extras(recursive=False)
            rules.append(Rule(relation, tuple(body.head(arity)), body.literals_in_any_order()))
        for number in range(draw(st.integers(1, 2)) if recursive else 0):
            body = Body(draw, scope)
            reading = draw(st.lists(st.sampled_from(relations), min_size=1, max_size=2))
            if number == 0 and len(relations) == 2:
                reading[0] = relations[1 - index]
            for name in reading:
                body.atom(name, own[name])
            body.atoms(draw(st.integers(0, 3 - len(reading))))
            body.extras(recursive=True)
            rules.append(Rule(relation, tuple(body.head(arity)), body.literals_in_any_order()))
    return Stratum(rules, own)


def stratified_aggregate(draw: st.DrawFn, scope: dict[str, int], names: Names, room: int) -> Stratum:
    """`h(X, min<Y>) :- body.` (max, sum, count<_>, count<Y>, countd<Y>): one rule over lower strata, 1-2 groups,
    the aggregate among them anywhere."""
    body = Body(draw, scope)
    body.atoms(draw(st.integers(1, 3)))
    body.extras(recursive=False)
    function = body.pick(("min", "max", "sum", "count", "count", "countd")) if body.bound else "count"
    argument = None if function == "count" and (not body.bound or body.chance(50)) else Var(body.pick(body.bound))
    head: list[Expr | HeadAggregate] = list(body.head(draw(st.integers(1, 2))))
    head.insert(draw(st.integers(0, len(head))), HeadAggregate(function, argument))
    relation = next(names)
    return Stratum([Rule(relation, tuple(head), body.literals_in_any_order())], {relation: len(head)})


def monotonic_sums(draw: st.DrawFn, scope: dict[str, int], names: Names, room: int) -> Stratum:
    """`h(X, mcount<_>) :- body.`, `mcount<Y>`, `msum<Y>`: 1-2 rules outside recursion, adding up."""
    relation, groups = next(names), draw(st.integers(1, 2))
    position = draw(st.integers(0, groups))
    rules = []
    for _ in range(draw(st.integers(1, 2))):
        body = Body(draw, scope)
        body.atoms(draw(st.integers(1, 3)))
        body.extras(recursive=False)
        function = body.pick(("mcount", "msum")) if body.bound else "mcount"
        argument = None if function == "mcount" and (not body.bound or body.chance(50)) else Var(body.pick(body.bound))
        head: list[Expr | HeadAggregate] = list(body.head(groups))
        head.insert(position, HeadAggregate(function, argument))
        rules.append(Rule(relation, tuple(head), body.literals_in_any_order()))
    return Stratum(rules, {relation: groups + 1})


def monotonic_extremes(draw: st.DrawFn, scope: dict[str, int], names: Names, room: int) -> Stratum | None:
    """`mmin<D>` / `mmax<D>` in recursion over an edge relation of lower strata (None without one): a path's best
    value by node, `p(Y, mmin<D>) :- p(X, D0), e(X, Y), D = D0 + w.` (one relation or two mutually), or by pair of
    nodes, linear or non-linear (`p(X, Y, mmin<D1 + D2>) :- p(X, Z, D1), p(Z, Y, D2).`). The values only grow along
    a path: mmin derives under a bound `D < b` or none; mmax along increasing nodes (`X < Y`), or adds nothing."""
    edges = sorted(name for name, arity in scope.items() if arity == 2)
    if not edges:
        return None
    function = draw(st.sampled_from(("mmin", "mmax")))
    if draw(st.booleans()):
        relations = [next(names) for _ in range(draw(st.integers(1, min(2, room))))]
        adds = function == "mmin" or draw(st.booleans())
        return best_by_node(draw, scope, edges, function, relations, adds)
    return best_by_pair(draw, edges, function, next(names))


def increment(draw: st.DrawFn, edge: tuple[str, str], adds: bool) -> Expr:
    """What an edge adds to a path's value: a constant 0..3 or one of the edge's nodes (never negative); 0 where the
    path must not add."""
    if not adds:
        return Const(0)
    return draw(st.one_of(st.builds(Const, st.integers(0, 3)), st.sampled_from(edge).map(Var)))


def extended(
    draw: st.DrawFn, function: str, keys: list[Expr], reads: list[Literal], total: Arith, guard: Comparison | None
):
    """The head and body of a rule extending paths: `reads`, the best value `total`, in the head or assigned to D;
    mmin perhaps bounded (`total < b`), mmax along increasing nodes where `guard` is given."""
    body = list(reads)
    if function == "mmax" and guard is not None:
        body.append(guard)
    aggregated: Expr = total
    if draw(st.booleans()):
        body.append(Comparison("=", Var("D"), total))
        aggregated = Var("D")
    if function == "mmin" and draw(st.booleans()):
        body.append(Comparison("<", aggregated, Const(draw(st.integers(4, 20)))))
    return (*keys, HeadAggregate(function, aggregated)), tuple(draw(st.permutations(body)))


def best_by_node(draw: st.DrawFn, scope: dict[str, int], edges: list[str], function: str, relations, adds: bool):
    """A base rule per relation (a fact, an edge's node and weight, or a constant for each node of a relation), then
    1-2 rules extending paths by an edge (reading the other relation first, where there are two)."""
    rules = []
    for index, relation in enumerate(relations):
        base = draw(st.sampled_from(("fact", "edge", "constant")))
        if base == "fact":
            rules.append(Rule(relation, (Const(draw(VALUES)), Const(draw(VALUES))), ()))
        elif base == "edge":
            edge = Atom(draw(st.sampled_from(edges)), (Var("X"), Var("Y")))
            rules.append(Rule(relation, (Var("X"), Var("Y")), (edge,)))
        else:
            read, arity = draw(st.sampled_from(sorted(scope.items())))
            atom = Atom(read, (Var("X"),) + (WILDCARD,) * (arity - 1))
            rules.append(Rule(relation, (Var("X"), HeadAggregate(function, Const(draw(VALUES)))), (atom,)))
        for number in range(draw(st.integers(1, 2))):
            source = relations[1 - index] if number == 0 and len(relations) == 2 else draw(st.sampled_from(relations))
            reads: list[Literal] = [
                Atom(source, (Var("X"), Var("D0"))),
                Atom(draw(st.sampled_from(edges)), (Var("X"), Var("Y"))),
            ]
            if draw(st.integers(1, 100)) <= 25:
                reads.append(Comparison("!=", Var("Y"), Const(draw(VALUES))))
            total = Arith("+", Var("D0"), increment(draw, ("X", "Y"), adds))
            guard = Comparison("<", Var("X"), Var("Y")) if adds else None
            head, body = extended(draw, function, [Var("Y")], reads, total, guard)
            rules.append(Rule(relation, head, body))
    return Stratum(rules, dict.fromkeys(relations, 2))


def best_by_pair(draw: st.DrawFn, edges: list[str], function: str, relation: str) -> Stratum:
    """`p(X, Y, mmin<D>)`: a rule over an edge, then a linear rule, a non-linear one or both (mmax: each pair
    X < Y)."""
    guarded = function == "mmax"
    edge = Atom(draw(st.sampled_from(edges)), (Var("X"), Var("Y")))
    base = (edge, Comparison("<", Var("X"), Var("Y"))) if guarded else (edge,)
    rules = [Rule(relation, (Var("X"), Var("Y"), HeadAggregate(function, increment(draw, ("X", "Y"), True))), base)]
    for kind in draw(st.lists(st.sampled_from(("linear", "non-linear")), min_size=1, max_size=2, unique=True)):
        if kind == "linear":
            reads: list[Literal] = [
                Atom(relation, (Var("X"), Var("Z"), Var("D0"))),
                Atom(draw(st.sampled_from(edges)), (Var("Z"), Var("Y"))),
            ]
            total = Arith("+", Var("D0"), increment(draw, ("Z", "Y"), True))
        else:
            reads = [Atom(relation, (Var("X"), Var("Z"), Var("D1"))), Atom(relation, (Var("Z"), Var("Y"), Var("D2")))]
            total = Arith("+", Var("D1"), Var("D2"))
        guard = Comparison("<", Var("Z"), Var("Y")) if guarded else None
        head, body = extended(draw, function, [Var("X"), Var("Y")], reads, total, guard)
        rules.append(Rule(relation, head, body))
    return Stratum(rules, {relation: 3})


KINDS: dict[str, Callable[..., Stratum | None]] = {
    "set": set_rules,
    "aggregate": stratified_aggregate,
    "sums": monotonic_sums,
    "extremes": monotonic_extremes,
}


@st.composite
def programs(draw: st.DrawFn, most: int = 6) -> Program:
    """Tables, then 2 to `most` derived relations, stratum by stratum, each stratum reading the tables and those
    before."""
    made = draw(tables())
    scope = {table.name: table.arity for table in made}
    names = (f"r{number}" for number in itertools.count())
    target = draw(st.integers(2, most))
    rules: list[Rule] = []
    derived = 0
    while derived < target:
        kind = draw(st.sampled_from(("set", "set", "set", "aggregate", "sums", "extremes")))
        stratum = KINDS[kind](draw, scope, names, target - derived) or set_rules(draw, scope, names, target - derived)
        rules += stratum.rules
        scope.update(stratum.arities)
        derived += len(stratum.arities)
    return Program(made, tuple(rules))


# ---------------------------------------------------------------------------------------------------------------
# The test
# ---------------------------------------------------------------------------------------------------------------


def recsql_answers(conn, program: Program, outputs: list[str]) -> dict[str, list[tuple]]:
    """recsql's rows of each of `outputs` (as many times as given: a relation is a set, a row twice is wrong); a
    deliberate refusal (NotSupportedError) discards the example."""
    cursor = conn.cursor()
    try:
        cursor.execute_datalog(program.text(outputs))
        return {name: list(map(tuple, cursor.use_output(name).fetchall())) for name in outputs}
    except recsql.NotSupportedError:
        assume(False)
        raise
    finally:
        cursor.close()


@pytest.mark.spark  # under `local` too: a plain relation whose types only Spark derives runs there
def test_random_programs_match_python(conn, strategy):
    """The relations of a random stratified program: recsql's rows are the evaluator's, each once. In process every
    relation is an output; on Spark, where each costs a run of its own, those no other relation reads."""

    @examples(strategy)
    @given(program=programs(RELATIONS[strategy.strategy]))
    def run(program: Program) -> None:
        for table in program.tables:
            conn.register(table.name, table.arrow())
            note(f"{table.name}: {sorted(set(table.rows))}")
        outputs = program.derived if strategy.strategy == "local" else program.sinks
        note(program.text(outputs))
        expected = evaluate(program)
        got = recsql_answers(conn, program, outputs)
        wrong = [name for name in outputs if Counter(got[name]) != Counter(expected[name])]
        assert not wrong, "\n".join(
            f"{name}: recsql {sorted(got[name], key=repr)}\n{name}: expected {sorted(expected[name])}" for name in wrong
        )

    run()
