"""The recsql SQL dialect: Spark SQL plus RaSQL's recursive-aggregate syntax.

Additions over sqlglot's Spark dialect:

* CTE column lists may declare a monotonic aggregate: `sp(node, min() AS dist)`.
* `MAX RECURSION LEVEL n` between a CTE's name (or column list) and AS.
* As in Spark's grammar, the AS before a CTE's parenthesized query may be left out: `t(n) (SELECT 1)`.
* RaSQL's parenthesization `name AS (base) UNION [ALL] (recursive)` besides `name AS (base UNION recursive)`.
* PostgreSQL's `SEARCH {DEPTH | BREADTH} FIRST BY ... SET ...` and `CYCLE ... SET ... USING ...` after a CTE,
  with lists of columns (translator/search_cycle.py gives their meaning).
* `EXPLAIN [ANALYZE] statement` parses into an `Explain` node instead of an opaque command.
* `SHOW TABLES [IN database]` parses into `exp.Show` instead of an opaque command.
* `SET key = a, b, c` gives the setting the list of names "a,b,c" (recsql.disable_passes).
* PostgreSQL's `CREATE [OR REPLACE] RECURSIVE VIEW v(columns) AS query` parses into the CREATE VIEW PostgreSQL
  defines it as (`_parse_recursive_view`).
* DuckDB's `USING KEY (columns)` after a recursive CTE's name (or column list): each iteration's rows replace
  those of their key (translator/queries.py gives its meaning).
* `DATALOG $$ program $$` wherever a query may stand (a statement, EXPLAIN, a view's query, a subquery in
  FROM): a Datalog program whose last `.output` is the answer (translator/datalog/embedded.py).

Its generator writes a RaSQL CTE back in this syntax, so that a statement holding one prints as text
(`statement.sql(dialect=RecSQL)`) that parses to the same statement.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

from sqlglot import TokenType, exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError
from sqlglot.generators.spark import SparkGenerator
from sqlglot.parsers.spark import SparkParser

from translator.errors import TranslationError
from translator.ir import Aggregate

HEADER_AGGREGATES = tuple(aggregate.value for aggregate in Aggregate)
# the tokens a parenthesized query may start with (a CTE's body, told apart from its column list)
QUERY_STARTS = {
    TokenType.SELECT,
    TokenType.WITH,
    TokenType.VALUES,
    TokenType.FROM,
    TokenType.L_PAREN,
}


class RecursiveCTE(exp.CTE):
    """A CTE with RaSQL header aggregates and/or a recursion limit.

    `aggregates` maps a column name to one of HEADER_AGGREGATES; `max_level` is an int literal.
    """

    arg_types = {
        **exp.CTE.arg_types,
        "aggregates": False,
        "max_level": False,
        "search": False,
        "cycle": False,
        "key": False,
    }


class Search(exp.Expression):
    """`SEARCH {DEPTH | BREADTH} FIRST BY columns SET sequence` after a recursive CTE (PostgreSQL's)."""

    arg_types = {"kind": True, "expressions": True, "this": True}


class Cycle(exp.Expression):
    """`CYCLE columns SET mark [TO value DEFAULT value] USING path` after a recursive CTE (PostgreSQL's)."""

    arg_types = {"expressions": True, "this": True, "to": False, "default": False, "path": True}


class CteValue(exp.Expression):
    """In a branch of a CTE with SEARCH or CYCLE, the value the branch gives the CTE's column `this` (a name of
    the clause `clause`): the branch's item at `position`, or, with no position yet (a CTE without a column
    list whose first branch has `*`), the item of that name of the branch's own, once its `*` are expanded."""

    arg_types = {"this": True, "clause": True, "position": False}


class OrderKey(exp.Expression):
    """An ORDER BY key `this` of a SELECT with `*`, as a hidden item: the item it names once `*` is expanded,
    or else itself (translator/order_limit.py)."""


class DatalogQuery(exp.Expression, exp.Query):
    """`DATALOG $$ program $$`: the program's text, a string literal."""

    arg_types = {"this": True}

    @property
    def source(self) -> str:
        return str(self.this.name)

    @property
    def named_selects(self) -> list[str]:
        return []


def datalog_query_sql(generator: SparkGenerator, query: DatalogQuery) -> str:
    tag = "$datalog$" if "$$" in query.source else "$$"
    return f"DATALOG {tag}{query.source}{tag}"


class Explain(exp.Expression):
    arg_types = {"this": True, "analyze": False}


class Vacuum(exp.Expression):
    """VACUUM table [RETAIN n HOURS]."""

    arg_types = {"this": True, "hours": False}


def recursive_cte_sql(generator: SparkGenerator, cte: RecursiveCTE) -> str:
    """`name(column, min() AS column) MAX RECURSION LEVEL n AS (query)`, as `RecSQL.Parser` reads it."""
    alias = cte.args["alias"]
    aggregates = cte.args.get("aggregates") or {}
    columns = [
        f"{aggregates[column.name]}() AS {generator.sql(column)}"
        if column.name in aggregates
        else generator.sql(column)
        for column in alias.columns
    ]
    head = generator.sql(alias, "this") + (f"({', '.join(columns)})" if columns else "")
    level = f" MAX RECURSION LEVEL {generator.sql(cte, 'max_level')}" if cte.args.get("max_level") else ""
    if cte.args.get("key"):
        level += f" USING KEY ({generator.expressions(cte, key='key', flat=True)})"
    clauses = "".join(f" {generator.sql(cte, clause)}" for clause in ("search", "cycle") if cte.args.get(clause))
    return f"{head}{level} AS {generator.wrap(cte)}{clauses}"


def cte_value_sql(generator: SparkGenerator, value: CteValue) -> str:
    return generator.sql(value, "this")


def order_key_sql(generator: SparkGenerator, key: OrderKey) -> str:
    return generator.sql(key, "this")


def search_sql(generator: SparkGenerator, search: Search) -> str:
    return (
        f"SEARCH {search.args['kind']} FIRST BY {generator.expressions(search, flat=True)} "
        f"SET {generator.sql(search, 'this')}"
    )


def cycle_sql(generator: SparkGenerator, cycle: Cycle) -> str:
    marks = (
        f" TO {generator.sql(cycle, 'to')} DEFAULT {generator.sql(cycle, 'default')}"
        if cycle.args.get("to") is not None
        else ""
    )
    return (
        f"CYCLE {generator.expressions(cycle, flat=True)} SET {generator.sql(cycle, 'this')}{marks} "
        f"USING {generator.sql(cycle, 'path')}"
    )


class RecSQL(Spark):
    class Generator(SparkGenerator):
        TRANSFORMS = {
            **SparkGenerator.TRANSFORMS,
            RecursiveCTE: recursive_cte_sql,
            Search: search_sql,
            Cycle: cycle_sql,
            CteValue: cte_value_sql,
            OrderKey: order_key_sql,
            DatalogQuery: datalog_query_sql,
        }

    class Tokenizer(Spark.Tokenizer):
        KEYWORDS = {**Spark.Tokenizer.KEYWORDS, "EXPLAIN": TokenType.VAR, "VACUUM": TokenType.VAR}
        HEREDOC_STRINGS = ["$"]  # $$ ... $$ (or $tag$ ... $tag$): a Datalog program's text
        HEREDOC_TAG_IS_IDENTIFIER = True

    class Parser(SparkParser):
        PLACEHOLDER_PARSERS = {
            **SparkParser.PLACEHOLDER_PARSERS,
            # remember where each `?` stands: parameters bind in text order, not tree order
            TokenType.PLACEHOLDER: lambda self: self._positioned_placeholder(),
        }

        def _warn_unsupported(self) -> None:
            """sqlglot logs (to stderr) a statement it parses as an opaque command: recsql refuses those by
            their keyword instead (statements/dispatch.py)."""

        def _positioned_placeholder(self) -> exp.Placeholder:
            placeholder = self.expression(exp.Placeholder())
            placeholder.meta.update(start=self._prev.start, line=self._prev.line, col=self._prev.col)
            return placeholder

        def _parse_statement(self) -> exp.Expr | None:
            datalog = self._parse_datalog_query()
            if datalog is not None:
                return datalog
            if self._curr and self._curr.text.upper() == "EXPLAIN":
                self._advance()
                analyze = self._match_text_seq("ANALYZE")
                explained = self._parse_datalog_query() or super()._parse_statement()
                return self.expression(Explain(this=explained, analyze=analyze))
            if self._curr and self._curr.text.upper() == "SHOW" and self._next:
                words = self._next.text.split()  # SHOW is a command keyword: the rest is one string token
                if [word.upper() for word in words[:1]] == ["TABLES"]:
                    if len(words) == 1:
                        self._advance(2)
                        return self.expression(exp.Show(this="TABLES"))
                    if len(words) == 3 and words[1].upper() in ("IN", "FROM"):
                        self._advance(2)
                        return self.expression(exp.Show(this="TABLES", db=exp.to_identifier(words[2])))
            if self._curr and self._curr.token_type == TokenType.CREATE:
                view = self._parse_recursive_view()
                if view is not None:
                    return view
            if self._curr and self._curr.text.upper() == "VACUUM":
                self._advance()
                table = self._parse_table_parts()
                hours = None
                if self._match_text_seq("RETAIN"):
                    hours = self._parse_number()
                    if not self._match_texts(("HOURS", "HOUR")):
                        self.raise_error("VACUUM ... RETAIN takes a number of HOURS")
                return self.expression(Vacuum(this=table, hours=hours))
            return super()._parse_statement()

        def _parse_select(
            self,
            nested: bool = False,
            table: bool = False,
            parse_subquery_alias: bool = True,
            parse_set_operation: bool = True,
            consume_pipe: bool = True,
        ) -> exp.Expr | None:
            return self._parse_datalog_query() or super()._parse_select(
                nested, table, parse_subquery_alias, parse_set_operation, consume_pipe
            )

        def _parse_datalog_query(self) -> DatalogQuery | None:
            if (
                self._curr
                and self._curr.text.upper() == "DATALOG"
                and self._next
                and self._next.token_type in (TokenType.HEREDOC_STRING, TokenType.STRING)
            ):
                self._advance(2)
                return self.expression(DatalogQuery(this=exp.Literal.string(self._prev.text)))
            return None

        def _parse_recursive_view(self) -> exp.Create | None:
            """PostgreSQL's `CREATE [OR REPLACE] RECURSIVE VIEW v(columns) AS query`, as PostgreSQL defines it:
            `CREATE VIEW v AS WITH RECURSIVE v(columns) AS (query) SELECT * FROM v`. None (nothing read) for
            any other CREATE."""
            start = self._index
            self._advance()
            replace = self._match_text_seq("OR", "REPLACE")
            if not self._match_text_seq("RECURSIVE", "VIEW"):
                self._retreat(start)
                return None
            view = self._parse_table_parts(schema=True)
            if not isinstance(view, exp.Table):
                self._fail("Expected the name of the RECURSIVE VIEW")
            if not self._match(TokenType.L_PAREN):
                self.raise_error("Expected a column list after the name of a RECURSIVE VIEW")
            columns = self._parse_csv(self._parse_id_var)
            self._match_r_paren()
            if not self._match(TokenType.ALIAS):
                self.raise_error("Expected AS after the column list of a RECURSIVE VIEW")
            cte = RecursiveCTE(
                this=self._parse_statement(), alias=exp.TableAlias(this=view.this.copy(), columns=columns)
            )
            query = exp.select("*").from_(exp.Table(this=view.this.copy()))
            query.set("with_", exp.With(expressions=[cte], recursive=True))
            return self.expression(exp.Create(this=view, kind="VIEW", expression=query, replace=replace))

        def _parse_set_item_assignment(self, kind: str | None = None) -> exp.Expr | None:
            item = super()._parse_set_item_assignment(kind)
            value = item.this.expression if item is not None and isinstance(item.this, exp.EQ) else None
            if not isinstance(value, exp.Var):
                return item
            names = [value.name]
            # more names, as long as the next comma does not start another assignment (SET a = 1, b = 2)
            while (
                self._curr
                and self._curr.token_type == TokenType.COMMA
                and self._next
                and self._next.token_type == TokenType.VAR
                and not (
                    self._index + 2 < len(self._tokens) and self._tokens[self._index + 2].token_type == TokenType.EQ
                )
            ):
                self._advance()
                names.append(self._parse_name("Expected a name after ','").name)
            value.set("this", ",".join(names))
            return item

        def _parse_cte(self) -> exp.CTE | None:
            name = self._parse_id_var(any_token=True)
            if not name:
                self.raise_error("Expected CTE to have a name")
            columns: list[exp.Identifier] = []
            aggregates: dict[str, str] = {}
            if self._curr and self._curr.token_type == TokenType.L_PAREN and not self._body_follows():
                self._advance()
                while True:
                    column, aggregate = self._parse_cte_column()
                    columns.append(column)
                    if aggregate:
                        aggregates[column.name] = aggregate
                    if not self._match(TokenType.COMMA):
                        break
                self._match_r_paren()
            max_level = None
            if self._match_text_seq("MAX", "RECURSION", "LEVEL"):
                max_level = self._parse_number()
                if not isinstance(max_level, exp.Literal):
                    self.raise_error("Expected a number after MAX RECURSION LEVEL")
            key = None
            if self._match_text_seq("USING", "KEY"):
                key = self._parse_wrapped_csv(self._parse_id_var)
            if not self._match(TokenType.ALIAS) and not self._body_follows():
                self.raise_error("Expected AS after the CTE name")
            body = self._parse_wrapped(self._parse_statement)
            while self._curr and self._curr.token_type == TokenType.UNION:
                # RaSQL: AS (base) UNION [ALL] (recursive)
                self._advance()
                distinct = not self._match(TokenType.ALL)
                self._match(TokenType.DISTINCT)
                branch = self._parse_wrapped(self._parse_statement)
                body = exp.Union(this=body, expression=branch, distinct=distinct)
            alias = exp.TableAlias(this=name, columns=columns or None)
            search = self._parse_search()
            return self.expression(
                RecursiveCTE(
                    this=body,
                    alias=alias,
                    aggregates=aggregates or None,
                    max_level=max_level,
                    search=search,
                    cycle=self._parse_cycle(),
                    key=key,
                )
            )

        def _parse_search(self) -> Search | None:
            if not self._match_text_seq("SEARCH"):
                return None
            if not self._match_texts(("DEPTH", "BREADTH")):
                self.raise_error("Expected DEPTH or BREADTH after SEARCH")
            kind = self._prev.text.upper()
            if not self._match_text_seq("FIRST", "BY"):
                self.raise_error(f"Expected FIRST BY after SEARCH {kind}")
            columns = self._parse_csv(self._parse_id_var)
            if not self._match_text_seq("SET"):
                self.raise_error("Expected SET after the columns of SEARCH")
            return self.expression(Search(kind=kind, expressions=columns, this=self._parse_id_var()))

        def _parse_cycle(self) -> Cycle | None:
            if not self._match_text_seq("CYCLE"):
                return None
            columns = self._parse_csv(self._parse_id_var)
            if not self._match_text_seq("SET"):
                self.raise_error("Expected SET after the columns of CYCLE")
            mark = self._parse_id_var()
            to = default = None
            if self._match_text_seq("TO"):
                to = self._parse_bitwise()
                if not self._match(TokenType.DEFAULT):
                    self.raise_error("Expected DEFAULT after CYCLE ... TO value")
                default = self._parse_bitwise()
            if not self._match_text_seq("USING"):
                self.raise_error("Expected USING path after CYCLE ... SET mark")
            return self.expression(
                Cycle(expressions=columns, this=mark, to=to, default=default, path=self._parse_id_var())
            )

        def _body_follows(self) -> bool:
            """Whether the CTE's parenthesized query starts here: Spark makes the AS before it optional, so
            `name (SELECT ...)` is a CTE without a column list."""
            ahead = [token.token_type for token in self._tokens[self._index : self._index + 2]]
            return len(ahead) == 2 and ahead[0] == TokenType.L_PAREN and ahead[1] in QUERY_STARTS

        def _parse_cte_column(self) -> tuple[exp.Identifier, str | None]:
            """`name` or RaSQL's `agg() AS name`."""
            if (
                self._curr
                and self._next
                and self._curr.text.lower() in HEADER_AGGREGATES
                and self._next.token_type == TokenType.L_PAREN
            ):
                aggregate = self._curr.text.lower()
                self._advance(2)
                self._match_r_paren()
                if not self._match(TokenType.ALIAS):
                    self.raise_error(f"Expected AS after {aggregate}() in the CTE column list")
                return self._parse_name(f"Expected a column name after {aggregate}() AS"), aggregate
            return self._parse_name("Expected a column name in the CTE column list"), None

        def _parse_name(self, message: str) -> exp.Identifier:
            """The identifier (any word) here; a syntax error saying `message` when there is none."""
            name = self._parse_id_var(any_token=True)
            if not isinstance(name, exp.Identifier):
                self._fail(message)
            return name

        def _fail(self, message: str) -> NoReturn:
            """`raise_error`, typed as the raise it is at the ErrorLevel.IMMEDIATE recsql parses at."""
            self.raise_error(message)
            raise ParseError(message)


def parse(sql: str) -> list[exp.Expr]:
    """Parse SQL text (one or more statements) in the recsql dialect; errors carry line and column."""
    try:
        return [stmt for stmt in RecSQL().parse(sql) if stmt is not None]
    except ParseError as error:
        detail = error.errors[0] if error.errors else {}
        message = _TOKEN_REPR.sub(r"'\1'", detail.get("description") or str(error).splitlines()[0])
        message = _MISSING_ARGUMENT.sub(_missing_argument, message)
        highlight = detail.get("highlight")
        if highlight and f"'{highlight}'" not in message:
            message = f"{message} near '{highlight}'"
        raise TranslationError(f"syntax error: {message}", detail.get("line"), _start_column(detail)) from None
    except TokenError as error:
        line, column = _line_column(sql, getattr(error, "start", None))
        raise TranslationError("syntax error: unterminated string, quoted name or comment", line, column) from None


def parse_one(sql: str) -> exp.Expr:
    statements = parse(sql)
    if len(statements) != 1:
        raise TranslationError(f"expected one SQL statement, found {len(statements)}")
    return statements[0]


_TOKEN_REPR = re.compile(r"<Token token_type: [^,]+, text: (.*?), line: .*?>")
_MISSING_ARGUMENT = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]+\.(\w+)'>")


def _missing_argument(match: re.Match[str]) -> str:
    """sqlglot's "Required keyword: 'expression' missing for <class '...EQ'>" in SQL terms."""
    node = getattr(exp, match.group(2), None)
    if isinstance(node, type) and issubclass(node, exp.Binary):
        return "an operator is missing an operand"
    return f"{match.group(2).upper()} is missing its {match.group(1)}"


def _line_column(sql: str, offset: int | None) -> tuple[int | None, int | None]:
    if offset is None:
        return None, None
    before = sql[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def _start_column(detail: dict[str, Any]) -> int | None:
    column: int | None = detail.get("col")
    highlight = detail.get("highlight") or ""
    if column is None:
        return None
    return max(column - len(highlight) + 1, 1)
