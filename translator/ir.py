"""The Datalog intermediate representation.

A `Program` is a set of relations and the rules that derive them. A rule is `head(terms) :- body`, where
the body is a list of literals: atoms over variables (positive, negated, semi-joined or outer-joined),
conditions, and assignments.
Expressions (conditions, assignments, head terms) stay sqlglot trees in which a variable is a bare
`exp.Column` named after it, so every backend renders them in its own SQL dialect.

Two kinds of aggregation live in the IR:

* stratified aggregation (SQL's GROUP BY): aggregate calls (`exp.AggFunc`) among a rule's head terms,
  the other head terms being the group keys;
* monotonic aggregation (RaSQL's `min() AS d` in a CTE header): a property of the relation
  (`Relation.aggregate`), applied to all rules deriving it, allowed inside recursion.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum

from sqlglot import exp

WILDCARD = "_"
# Spark's function that fails the query with its message (DuckDB's `error`): the checks a query's rows
# must pass, such as a scalar subquery's single row (translator/scalar_rows.py)
RAISE_ERROR = "raise_error"


def var(name: str) -> exp.Column:
    """The expression that stands for the IR variable `name`."""
    return exp.column(name)


def variables_of(expression: exp.Expr) -> set[str]:
    """The IR variables an expression reads."""
    return {column.name for column in expression.find_all(exp.Column)}


def renamed(expression: exp.Expr, names: dict[str, str]) -> exp.Expr:
    """`expression` with the variables in `names` replaced by the variables they map to."""
    return expression.transform(
        lambda node: var(names[node.name]) if isinstance(node, exp.Column) and node.name in names else node
    )


@dataclass(frozen=True)
class Atom:
    """`relation(args)`; negated atoms are anti-joins, `semi` atoms semi-joins (EXISTS whose subquery
    meets the outer query through a condition other than equalities). `call_args` are the arguments of a
    table-valued function such as `range(10)`, whose output columns are `args`. Printed with a trailing ≡
    when it matches NULL with NULL."""

    relation: str
    args: tuple[str, ...]
    negated: bool = False
    call_args: tuple[exp.Expr, ...] = ()
    nulls_equal: bool = False  # match NULL with NULL, as SQL's set operations (EXCEPT, INTERSECT) do
    optional: bool = False  # LEFT OUTER JOIN: rows without a match keep NULLs for this atom's variables
    semi: bool = False  # a semi-join: keeps a row when some fact matches it (shared variables and `on`)
    # the join condition of an outer join, or the extra condition of a semi- or anti-join besides the
    # shared variables; a variable only this atom and its condition use is local to that join
    on: exp.Expr | None = None
    # DuckDB's `recurring.t` in a USING KEY recursion: every row known so far, not the last iteration's
    recurring: bool = False

    @property
    def filters(self) -> bool:
        """A semi- or anti-join: keeps or drops rows of the body and binds no variable."""
        return self.negated or self.semi

    def variables(self) -> set[str]:
        return {arg for arg in self.args if arg != WILDCARD}

    def condition_variables(self) -> set[str]:
        """Variables the outer join condition reads (bound before the join or by the atom itself)."""
        return variables_of(self.on) if self.on is not None else set()

    def __str__(self) -> str:
        call = f"[{', '.join(a.sql() for a in self.call_args)}]" if self.call_args else ""
        recurring = "recurring " if self.recurring else ""
        text = f"{recurring}{self.relation}{call}({', '.join(self.args)})" + ("≡" if self.nulls_equal else "")
        on = f" on {self.on.sql(dialect='spark')}" if self.on is not None else ""
        if self.optional:
            return f"left {text}{on}"
        if self.semi:
            return f"exists {text}{on}"
        return f"not {text}{on}" if self.negated else text


@dataclass(frozen=True)
class Condition:
    """A filter over bound variables."""

    expression: exp.Expr

    def variables(self) -> set[str]:
        return variables_of(self.expression)

    def __str__(self) -> str:
        return self.expression.sql(dialect="spark")


@dataclass(frozen=True)
class Assignment:
    """`variable = expression`: binds a new variable from bound ones."""

    variable: str
    expression: exp.Expr

    def variables(self) -> set[str]:
        return variables_of(self.expression)

    def __str__(self) -> str:
        return f"{self.variable} = {self.expression.sql(dialect='spark')}"


Literal = Atom | Condition | Assignment


def bound_by(literals: Iterable[Literal]) -> set[str]:
    """The variables the inner joins and assignments among `literals` bind (not outer-joined, semi- or
    anti-joined atoms)."""
    bound: set[str] = set()
    for literal in literals:
        if isinstance(literal, Atom) and not literal.filters and not literal.optional:
            bound |= literal.variables()
        elif isinstance(literal, Assignment):
            bound.add(literal.variable)
    return bound


class JoinMethod(Enum):
    """How the optimizer expects an atom of a rule's body to be joined (its value as EXPLAIN prints it)."""

    SCAN = "scan"  # the first atom: read, joined with nothing before it
    BROADCAST = "broadcast"  # the atom's side is sent to every task (it is small)
    BROADCAST_LEFT = "broadcast left"  # what is joined before the atom is sent to every task (it is small)
    SHUFFLE = "shuffle"  # both sides partitioned on the join keys
    CROSS = "cross"  # no shared variable: a cross product


@dataclass(frozen=True)
class Rule:
    head: str
    terms: tuple[exp.Expr, ...]
    body: tuple[Literal, ...]
    # how the optimizer expects each inner join to run, per positive non-outer atom in body order; empty: unknown
    joins: tuple[JoinMethod, ...] = field(default=(), compare=False)

    @property
    def atoms(self) -> list[Atom]:
        return [literal for literal in self.body if isinstance(literal, Atom)]

    @property
    def is_aggregate(self) -> bool:
        """True when the head holds aggregate calls (stratified aggregation, GROUP BY)."""
        return any(term.find(exp.AggFunc) for term in self.terms)

    def __str__(self) -> str:
        head = f"{self.head}({', '.join(_term_text(term) for term in self.terms)})"
        if not self.body:
            return f"{head}."
        return f"{head} :- {', '.join(str(literal) for literal in self.body)}."


def _term_text(term: exp.Expr) -> str:
    if isinstance(term, exp.AggFunc) and not isinstance(term, exp.Anonymous):
        argument = term.this
        distinct = ""
        if isinstance(argument, exp.Distinct):
            distinct, arguments = "distinct ", argument.expressions
        else:
            arguments = list(term.iter_expressions())
        inner = ", ".join(arg.sql(dialect="spark") for arg in arguments) or "*"
        return f"{term.key}<{distinct}{inner}>"
    return term.sql(dialect="spark")


class Iteration(Enum):
    """How a recursive relation iterates."""

    FIXPOINT = "fixpoint"  # UNION: least fixpoint, set semantics
    BAG = "bag"  # UNION ALL: the SQL standard's iteration over the previous round's rows
    # DuckDB's USING KEY: as BAG, each round's rows replacing the known row of their key (Relation.key)
    KEYED = "keyed"

    @property
    def by_rounds(self) -> bool:
        """Whether each round reads the previous round's rows (not a semi-naive fixpoint's new facts)."""
        return self is not Iteration.FIXPOINT


class Aggregate(Enum):
    """A RaSQL monotonic aggregate function (its SQL name as value)."""

    MIN = "min"
    MAX = "max"
    SUM = "sum"
    COUNT = "count"

    @property
    def is_sum(self) -> bool:
        """Whether a group's value adds up its contributions (a count is a sum of ones)."""
        return self in (Aggregate.SUM, Aggregate.COUNT)

    @property
    def is_extremum(self) -> bool:
        """Whether a group's value is the best of its candidates, as `better` compares them."""
        return self in (Aggregate.MIN, Aggregate.MAX)

    def better(self, or_equal: bool = False) -> type[exp.Binary]:
        """The comparison `a <op> b` saying that value a of an extremum is better than b (< for min(), > for
        max()), or as good (<=, >=) with `or_equal`."""
        if self is Aggregate.MIN:
            return exp.LTE if or_equal else exp.LT
        return exp.GTE if or_equal else exp.GT


@dataclass(frozen=True)
class HeaderAggregate:
    """A RaSQL monotonic aggregate: `function` of column `column` grouped by all other columns."""

    function: Aggregate
    column: int


@dataclass(frozen=True)
class SortKey:
    column: int
    descending: bool = False
    nulls_first: bool | None = None


@dataclass(frozen=True)
class Window:
    """The rows ORDER BY ... LIMIT / OFFSET keep: in the keys' order, `offset` skipped, then `limit` (all
    without one)."""

    order_by: tuple[SortKey, ...] = ()
    limit: int | None = None
    offset: int = 0

    def __str__(self) -> str:
        keys = ", ".join(f"#{key.column}" + (" desc" if key.descending else "") for key in self.order_by)
        return " ".join(
            part
            for part in (
                keys and f"order by {keys}",
                self.limit is not None and f"limit {self.limit}",
                self.offset and f"offset {self.offset}",
            )
            if part
        )


@dataclass(frozen=True)
class OpaqueInput:
    """A relation an opaque query reads, by the name of a placeholder table, with the columns it reads."""

    placeholder: str
    relation: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class Opaque:
    """SQL the IR does not model (a window function, ROLLUP, a FULL JOIN, ...), kept as a query over the
    program's relations: Spark SQL evaluates it, with Spark's meaning. Its table references named by the
    placeholders of `inputs` stand for relations of the program, whose rows it reads by the names of
    their columns."""

    query: exp.Expr
    inputs: tuple[OpaqueInput, ...]
    construct: str  # what the IR does not model in it, and where, for EXPLAIN and messages

    @property
    def relations(self) -> tuple[str, ...]:
        return tuple(read.relation for read in self.inputs)

    def rule_text(self, head: str) -> str:
        """As the listings of a program show it, deriving `head`."""
        return f"{head} :- spark sql[{self}].  % {self.construct}"

    def __str__(self) -> str:
        names = {read.placeholder: read.relation for read in self.inputs}

        def named(node: exp.Expr) -> exp.Expr:
            if isinstance(node, exp.Table) and node.name in names:
                return exp.Table(this=exp.to_identifier(names[node.name]), alias=node.args.get("alias"))
            return node

        return self.query.transform(named).sql(dialect="recsql")


@dataclass(frozen=True)
class Relation:
    name: str
    columns: tuple[str, ...]
    distinct: bool = False  # set semantics
    aggregate: HeaderAggregate | None = None
    iteration: Iteration = Iteration.FIXPOINT
    max_level: int | None = None
    label: str = ""  # the name the user wrote (a CTE's, a derived table's, a view's), for messages; "": recsql's
    window: Window | None = None  # a subquery's ORDER BY ... LIMIT / OFFSET: which of its rows it keeps
    # the values of outer columns that a subquery's WITH reads (translator/correlated_with.py): those columns as
    # written (`r.n`), for messages
    outer_columns: str = ""
    opaque: Opaque | None = None  # rows a query the IR does not model gives, not rules
    key: tuple[int, ...] | None = None  # USING KEY's columns (Iteration.KEYED): one row per key

    @property
    def display_name(self) -> str:
        return self.label or self.name

    @property
    def group_key(self) -> tuple[int, ...]:
        """Positions of the non-aggregated columns, or of USING KEY's."""
        if self.key is not None:
            return self.key
        skip = self.aggregate.column if self.aggregate else -1
        return tuple(i for i in range(len(self.columns)) if i != skip)

    def header(self) -> str:
        parts = []
        for i, column in enumerate(self.columns):
            if self.aggregate and i == self.aggregate.column:
                parts.append(f"{self.aggregate.function.value}<{column}>")
            else:
                parts.append(column)
        return f"{self.name}({', '.join(parts)})"


@dataclass
class Program:
    """Relations derived by rules, plus the answer: which relation, in which order, which rows of it."""

    relations: dict[str, Relation] = field(default_factory=dict)
    rules: list[Rule] = field(default_factory=list)
    output: str = ""
    order_by: tuple[SortKey, ...] = ()
    limit: int | None = None
    offset: int = 0  # answer rows skipped before the limit's
    hidden_columns: int = 0  # trailing output columns used only for ORDER BY

    @property
    def window(self) -> Window:
        """The answer's rows: which of the output relation's, in which order."""
        return Window(self.order_by, self.limit, self.offset)

    def rules_for(self, relation: str) -> list[Rule]:
        return [rule for rule in self.rules if rule.head == relation]

    def edges(self) -> Iterator[tuple[str, str]]:
        """(read relation, reading relation) for every derived relation read by a rule or an opaque query."""
        for rule in self.rules:
            for atom in rule.atoms:
                if atom.relation in self.relations:
                    yield atom.relation, rule.head
        for relation in self.relations.values():
            if relation.opaque is not None:
                for read in relation.opaque.relations:
                    if read in self.relations:
                        yield read, relation.name

    def reads(self, name: str) -> set[str]:
        """The relations and tables `name` reads: its rules' atoms', or its opaque query's inputs."""
        relation = self.relations.get(name)
        if relation is not None and relation.opaque is not None:
            return set(relation.opaque.relations)
        return {atom.relation for rule in self.rules_for(name) for atom in rule.atoms if not atom.call_args}

    def recursion_of(self, relation: str) -> set[str]:
        """The relations in a recursive cycle with `relation`: each reads it and is read by it, through rules."""
        reads: dict[str, set[str]] = {}
        read_by: dict[str, set[str]] = {}
        for body, head in self.edges():
            reads.setdefault(head, set()).add(body)
            read_by.setdefault(body, set()).add(head)
        return reachable(relation, reads) & reachable(relation, read_by)

    @property
    def output_columns(self) -> tuple[str, ...]:
        columns = self.relations[self.output].columns
        return columns[: len(columns) - self.hidden_columns] if self.hidden_columns else columns

    def to_datalog(self) -> str:
        lines = []
        for relation in self.relations.values():
            notes = []
            if relation.distinct and not relation.aggregate:
                notes.append("set")
            if relation.iteration is Iteration.BAG:
                notes.append("union all")
            if relation.key is not None:
                notes.append(f"using key ({', '.join(relation.columns[i] for i in relation.key)})")
            if relation.max_level is not None:
                notes.append(f"max level {relation.max_level}")
            if relation.window is not None:
                notes.append(str(relation.window))
            suffix = f"  % {', '.join(notes)}" if notes else ""
            lines.append(f"% {relation.header()}{suffix}")
            if relation.opaque is not None:
                lines.append(relation.opaque.rule_text(relation.header()))
            lines.extend(str(rule) for rule in self.rules_for(relation.name))
        answer = f"?- {self.output}"
        if self.order_by:
            columns = self.relations[self.output].columns
            keys = ", ".join(columns[key.column] + (" desc" if key.descending else "") for key in self.order_by)
            answer += f" order by {keys}"
        if self.limit is not None:
            answer += f" limit {self.limit}"
        if self.offset:
            answer += f" offset {self.offset}"
        lines.append(answer + ".")
        return "\n".join(lines)


def reachable(start: str, edges: dict[str, set[str]]) -> set[str]:
    """The nodes reached from `start` by one edge or more."""
    found: set[str] = set()
    pending = list(edges.get(start, ()))
    while pending:
        node = pending.pop()
        if node not in found:
            found.add(node)
            pending.extend(edges.get(node, ()))
    return found
