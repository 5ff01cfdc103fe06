"""The text of a Datalog program, parsed: BigDatalog / DeALS rules and Soufflé's declarations.

    .decl edge(src: number, dst: number)
    .input edge                                  // a table; or (IO=file, filename="edge.csv", ...)
    tc(X, Y) :- edge(X, Y).                      // `<-` as DeALS writes it
    tc(X, Y) :- tc(X, Z), edge(Z, Y).
    sp(Y, mmin<D>) <- sp(X, D1), wedge(X, Y, W), D = D1 + W.
    out(X, N) :- node(X), N = count : { edge(X, _) }.   // Soufflé's aggregate in a body
    .output tc

`EXPLAIN` or `EXPLAIN ANALYZE` before the first clause asks for the program's plans instead.

An identifier in a rule is a variable unless an opening parenthesis follows it (an atom, or a function
in an expression); constants are numbers and quoted strings; `_` is a variable of its own at each use.
Expressions are sqlglot trees (a variable is an `exp.Column`), so the rules become the IR as they are;
Soufflé's functors (`cat`, `to_string`, `substr`, binary `min`/`max`, ...) become their SQL functions.
An aggregate in a body (`min E : { ... }`, `count : atom(...)`) stands in its expression as a variable of
its own, the `BodyAggregate` its clause lists (translator/datalog/aggregates.py makes it rules).
Every node keeps the line and column it starts at, for errors.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from sqlglot import exp

from translator.datalog.functors import functor
from translator.errors import TranslationError

AGGREGATES = ("mmin", "mmax", "mcount", "msum", "min", "max", "count", "countd", "sum")
BODY_AGGREGATES = ("min", "max", "count", "sum", "mean")
COMPARISONS = {"=": exp.EQ, "!=": exp.NEQ, "<>": exp.NEQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE}
ARITHMETIC = {"+": exp.Add, "-": exp.Sub, "*": exp.Mul, "/": exp.Div, "%": exp.Mod}
TOKEN = re.compile(
    r"""(?P<space>\s+|//[^\n]*|\#[^\n]*|/\*.*?\*/)
      | (?P<directive>\.[a-z]+)
      | (?P<number>\d+\.\d+|\d+)
      | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<symbol>:-|<-|<=|>=|!=|<>|[(),.:<>=!~+\-*/%{}])""",
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class Token:
    kind: str  # directive, number, string, name, symbol, end
    text: str
    line: int
    column: int


@dataclass(frozen=True)
class Place:
    line: int
    column: int


@dataclass(frozen=True)
class HeadAggregate:
    """`mmin<D>` (monotonic, allowed in recursion) or `min<D>` (stratified; `countd<X>` counts distinct
    values) in a rule's head. DeAL's pair `mcount<(Z, C)>` / `msum<(Z, C)>`: contributor Z adds C."""

    function: str  # one of AGGREGATES
    argument: exp.Expr | None  # None: count<_>
    place: Place
    contributor: exp.Expr | None = None  # Z of a pair (Z, C)


HeadTerm = exp.Expr | HeadAggregate


@dataclass(frozen=True)
class AtomSyntax:
    relation: str
    arguments: tuple[exp.Expr, ...]
    negated: bool
    place: Place


@dataclass(frozen=True)
class ComparisonSyntax:
    expression: exp.Expr  # an exp.EQ, exp.LT, ... over two expressions
    place: Place


BodyLiteral = AtomSyntax | ComparisonSyntax


@dataclass(frozen=True)
class BodyAggregate:
    """`min E : { body }` (or `count : atom(...)`) inside a rule's body: its value is `variable`, a name
    the parser made, which the rule's comparisons use where the aggregate was written."""

    variable: str
    function: str  # one of BODY_AGGREGATES
    argument: exp.Expr | None  # None: count
    body: tuple[BodyLiteral, ...]
    aggregates: tuple[BodyAggregate, ...]  # those inside `body`
    place: Place


@dataclass(frozen=True)
class Clause:
    """A rule, or a fact (no body)."""

    head: AtomSyntax
    terms: tuple[HeadTerm, ...]
    body: tuple[BodyLiteral, ...]
    place: Place
    aggregates: tuple[BodyAggregate, ...] = ()


@dataclass(frozen=True)
class Declaration:
    relation: str
    columns: tuple[tuple[str, str], ...]  # (name, Soufflé type)
    place: Place


@dataclass(frozen=True)
class InputOutput:
    """`.input rel(...)` or `.output rel(...)` with its options (IO=file, filename=..., ...)."""

    kind: str  # "input" or "output"
    relation: str
    options: dict[str, str]
    place: Place


@dataclass
class ProgramSyntax:
    declarations: list[Declaration] = field(default_factory=list)
    inputs: list[InputOutput] = field(default_factory=list)
    outputs: list[InputOutput] = field(default_factory=list)
    clauses: list[Clause] = field(default_factory=list)
    explain: str | None = None  # "EXPLAIN" or "EXPLAIN ANALYZE" before the program: its plans, not its answers


def tokens(text: str) -> list[Token]:
    found, position, line, line_start = [], 0, 1, 0
    while position < len(text):
        match = TOKEN.match(text, position)
        if match is None:
            raise TranslationError(f"unexpected character {text[position]!r}", line, position - line_start + 1)
        kind = match.lastgroup or ""
        if kind != "space":
            found.append(Token(kind, match.group(), line, position - line_start + 1))
        newlines = match.group().count("\n")
        if newlines:
            line += newlines
            line_start = position + match.group().rindex("\n") + 1
        position = match.end()
    found.append(Token("end", "", line, position - line_start + 1))
    return found


def parse(text: str) -> ProgramSyntax:
    """The program's declarations, inputs, outputs and clauses; a TranslationError at the first token
    that does not fit."""
    return Parser(tokens(text)).program()


class Parser:
    def __init__(self, found: list[Token]):
        self.tokens = found
        self.at = 0
        self.aggregates: list[BodyAggregate] = []  # the body aggregates of the body being read
        self.made = itertools.count()

    # ------------------------------------------------------------------ tokens

    @property
    def next(self) -> Token:
        return self.tokens[self.at]

    def peek(self, ahead: int = 1) -> Token:
        return self.tokens[min(self.at + ahead, len(self.tokens) - 1)]

    def take(self) -> Token:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def accept(self, text: str) -> bool:
        if self.next.kind in ("symbol", "directive") and self.next.text == text:
            self.at += 1
            return True
        return False

    def expect(self, text: str, what: str) -> Token:
        if self.next.kind in ("symbol", "directive") and self.next.text == text:
            return self.take()
        raise self.error(f"expected {what}")

    def name(self, what: str) -> Token:
        if self.next.kind != "name":
            raise self.error(f"expected {what}")
        return self.take()

    def error(self, message: str, token: Token | None = None) -> TranslationError:
        token = token or self.next
        shown = "the end of the program" if token.kind == "end" else repr(token.text)
        return TranslationError(f"{message}, found {shown}", token.line, token.column)

    @staticmethod
    def place(token: Token) -> Place:
        return Place(token.line, token.column)

    # ------------------------------------------------------------------ statements

    def program(self) -> ProgramSyntax:
        syntax = ProgramSyntax()
        if self.keyword("EXPLAIN"):
            syntax.explain = "EXPLAIN ANALYZE" if self.keyword("ANALYZE") else "EXPLAIN"
        while self.next.kind != "end":
            if self.next.kind == "directive":
                self.directive(syntax)
            else:
                syntax.clauses.append(self.clause())
        return syntax

    def keyword(self, word: str) -> bool:
        """Take `word` here, a name not starting an atom."""
        if self.next.kind == "name" and self.next.text.upper() == word and self.peek().text != "(":
            self.at += 1
            return True
        return False

    def directive(self, syntax: ProgramSyntax) -> None:
        token = self.take()
        if token.text == ".decl":
            syntax.declarations.append(self.declaration(token))
        elif token.text in (".input", ".output"):
            relation = self.name("a relation name").text
            options = self.options() if self.accept("(") else {}
            target = syntax.inputs if token.text == ".input" else syntax.outputs
            target.append(InputOutput(token.text[1:], relation, options, self.place(token)))
        else:
            raise TranslationError(
                f"unknown directive {token.text} (recsql takes .decl, .input and .output)", token.line, token.column
            )

    def declaration(self, token: Token) -> Declaration:
        relation = self.name("a relation name after .decl").text
        self.expect("(", "'(' after the relation name")
        columns: list[tuple[str, str]] = []
        while not self.accept(")"):
            if columns:
                self.expect(",", "',' or ')'")
            column = self.name("a column name").text
            self.expect(":", "':' and a type after the column name")
            columns.append((column, self.name("a type (number, unsigned, float, symbol)").text))
        return Declaration(relation, tuple(columns), self.place(token))

    def options(self) -> dict[str, str]:
        options: dict[str, str] = {}
        while not self.accept(")"):
            if options:
                self.expect(",", "',' or ')'")
            key = self.name("an option name").text
            self.expect("=", "'=' after the option name")
            value = self.take()
            if value.kind not in ("name", "string", "number"):
                raise self.error("expected an option value", value)
            options[key.lower()] = unquoted(value.text) if value.kind == "string" else value.text
        return options

    def clause(self) -> Clause:
        start = self.next
        relation = self.name("a rule or a fact (relation(...) ...) or a directive")
        self.expect("(", "'(' after the relation name")
        terms: list[HeadTerm] = []
        while not self.accept(")"):
            if terms:
                self.expect(",", "',' or ')'")
            terms.append(self.head_term())
        self.aggregates = []
        body: list[BodyLiteral] = []
        if self.accept(":-") or self.accept("<-"):
            body = self.conjunction()
        self.expect(".", "'.' at the end of the rule")
        plain = tuple(term for term in terms if isinstance(term, exp.Expr))
        head = AtomSyntax(relation.text, plain, False, self.place(relation))
        return Clause(head, tuple(terms), tuple(body), self.place(start), tuple(self.aggregates))

    def conjunction(self) -> list[BodyLiteral]:
        body = [self.literal()]
        while self.accept(","):
            body.append(self.literal())
        return body

    def head_term(self) -> HeadTerm:
        token = self.next
        if token.kind == "name" and token.text.lower() in AGGREGATES and self.peek().text == "<":
            self.at += 2
            argument: exp.Expr | None
            contributor = None
            if self.next.kind == "name" and self.next.text == "_" and self.peek().text == ">":
                if not token.text.lower().startswith(("count", "mcount")):
                    raise self.error(f"expected the expression {token.text} aggregates")
                self.at += 1
                argument = None
            elif self.accept("("):
                argument = self.expression()
                if self.accept(","):
                    contributor, argument = argument, self.expression()
                self.expect(")", "')'")
            else:
                argument = self.expression()
            self.expect(">", f"'>' closing {token.text}<...>")
            return HeadAggregate(token.text.lower(), argument, self.place(token), contributor)
        return self.expression()

    def literal(self) -> BodyLiteral:
        token = self.next
        if (
            self.accept("!")
            or self.accept("~")
            or (token.kind == "name" and token.text == "not" and self.peek().kind == "name")
        ):
            if token.text == "not":
                self.at += 1
            return self.atom(negated=True)
        if (
            token.kind == "name"
            and self.peek().text == "("
            and not self.compared_after_call()
            and not self.body_aggregate_here()
        ):
            return self.atom(negated=False)
        left = self.expression()
        operator = self.next
        if operator.kind != "symbol" or operator.text not in COMPARISONS:
            raise self.error("expected an atom or a comparison (=, !=, <, <=, >, >=)", operator)
        self.at += 1
        right = self.expression()
        return ComparisonSyntax(COMPARISONS[operator.text](this=left, expression=right), self.place(token))

    def compared_after_call(self) -> bool:
        """Whether the `name(...)` starting here is a function call compared with something (`f(X) < 3`),
        not an atom."""
        depth, ahead = 0, 1
        while True:
            token = self.peek(ahead)
            if token.kind == "end":
                return False
            if token.text == "(":
                depth += 1
            elif token.text == ")":
                depth -= 1
                if depth == 0:
                    following = self.peek(ahead + 1)
                    return following.kind == "symbol" and (
                        following.text in COMPARISONS or following.text in ARITHMETIC or following.text == ":"
                    )
            ahead += 1

    def atom(self, negated: bool) -> AtomSyntax:
        relation = self.name("a relation name")
        self.expect("(", "'(' after the relation name")
        arguments: list[exp.Expr] = []
        while not self.accept(")"):
            if arguments:
                self.expect(",", "',' or ')'")
            arguments.append(self.expression())
        return AtomSyntax(relation.text, tuple(arguments), negated, self.place(relation))

    # ------------------------------------------------------------------ expressions

    def expression(self) -> exp.Expr:
        left = self.product()
        while self.next.kind == "symbol" and self.next.text in ("+", "-"):
            operator = self.take().text
            left = ARITHMETIC[operator](this=left, expression=self.product())
        return left

    def product(self) -> exp.Expr:
        left = self.unary()
        while self.next.kind == "symbol" and self.next.text in ("*", "/", "%"):
            operator = self.take().text
            left = ARITHMETIC[operator](this=left, expression=self.unary())
        return left

    def unary(self) -> exp.Expr:
        if self.accept("-"):
            return exp.Neg(this=self.unary())
        return self.primary()

    def body_aggregate_here(self) -> bool:
        """Whether the name here starts a body aggregate: `count :`, `min X :`, `sum (X + Y) :`."""
        token = self.next
        if token.kind != "name" or token.text.lower() not in BODY_AGGREGATES:
            return False
        following = self.peek()
        if following.text == ":":
            return True
        if following.text == "(":
            return self.compared_after_call() and self.call_end_is_colon()
        return following.kind in ("name", "number") or following.text == "-"

    def call_end_is_colon(self) -> bool:
        depth, ahead = 0, 1
        while self.peek(ahead).kind != "end":
            depth += {"(": 1, ")": -1}.get(self.peek(ahead).text, 0)
            if depth == 0:
                return self.peek(ahead + 1).text == ":"
            ahead += 1
        return False

    def body_aggregate(self) -> exp.Expr:
        """A body aggregate, recorded in `aggregates`; in the expression, the variable holding its value."""
        token = self.take()
        function = token.text.lower()
        argument = None if self.next.text == ":" else self.expression()
        if function != "count" and argument is None:
            raise self.error(f"expected the expression {function} aggregates")
        self.expect(":", f"':' after {function}'s expression")
        outer, self.aggregates = self.aggregates, []
        if self.accept("{"):
            body = self.conjunction()
            self.expect("}", "'}' closing the aggregate's body")
        else:
            body = [self.atom(negated=False)]
        inner, self.aggregates = self.aggregates, outer
        variable = f"_agg{next(self.made)}"
        self.aggregates.append(
            BodyAggregate(variable, function, argument, tuple(body), tuple(inner), self.place(token))
        )
        return positioned(exp.column(variable), token)

    def primary(self) -> exp.Expr:
        if self.body_aggregate_here():
            return self.body_aggregate()
        token = self.take()
        if token.kind == "number":
            return positioned(exp.Literal.number(token.text), token)
        if token.kind == "string":
            return positioned(exp.Literal.string(unquoted(token.text)), token)
        if token.kind == "name":
            if self.accept("("):
                arguments: list[exp.Expr] = []
                while not self.accept(")"):
                    if arguments:
                        self.expect(",", "',' or ')'")
                    arguments.append(self.expression())
                try:
                    return positioned(functor(token.text, arguments), token)
                except ValueError as problem:
                    raise TranslationError(str(problem), token.line, token.column) from None
            return positioned(exp.column(token.text), token)
        if token.text == "(":
            inner = self.expression()
            self.expect(")", "')'")
            return exp.Paren(this=inner)
        raise self.error("expected a variable, a constant or an expression", token)


def positioned(node: exp.Expr, token: Token) -> exp.Expr:
    """`node` with the token's place recorded as sqlglot records it (errors.position_of reads it)."""
    node.meta.update(line=token.line, col=token.column + len(token.text) - 1, start=0, end=len(token.text) - 1)
    return node


ESCAPES = {"n": "\n", "t": "\t"}


def unquoted(text: str) -> str:
    """A quoted string's value (backslash escapes: \\n, \\t, the quote itself)."""
    return re.sub(r"\\(.)", lambda match: ESCAPES.get(match.group(1), match.group(1)), text[1:-1])
