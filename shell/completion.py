"""Tab completion for the shell: SQL keywords, functions, tables, views, their columns, the CTEs of the
statement being typed with their columns, and the meta-commands with their arguments.

The known tables come from a `Schema` the shell refreshes after each statement (SHOW TABLES through the
connection); what the statement itself defines (CTE names, aliases) is read from its tokens, with
sqlglot's tokenizer, on every key press.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document
from sqlglot.dialects.spark import Spark
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

KEYWORDS = (
    "SELECT", "FROM", "WHERE", "GROUP BY", "HAVING", "ORDER BY", "LIMIT", "WITH", "RECURSIVE", "UNION",
    "UNION ALL", "INTERSECT", "EXCEPT", "DISTINCT", "ALL", "AS", "JOIN", "INNER JOIN", "LEFT JOIN",
    "RIGHT JOIN", "FULL OUTER JOIN", "CROSS JOIN", "LEFT SEMI JOIN", "LEFT ANTI JOIN", "ON", "USING", "AND",
    "OR", "NOT", "IN", "EXISTS", "BETWEEN", "LIKE", "IS", "NULL", "TRUE", "FALSE", "CASE", "WHEN", "THEN",
    "ELSE", "END", "ASC", "DESC", "NULLS FIRST", "NULLS LAST", "CREATE", "TABLE", "VIEW", "OR REPLACE",
    "IF NOT EXISTS", "IF EXISTS", "DROP", "INSERT INTO", "VALUES", "OPTIONS", "EXPLAIN", "ANALYZE",
    "COMPUTE STATISTICS", "SET", "SHOW TABLES", "DESCRIBE", "MAX RECURSION LEVEL", "OVER", "PARTITION BY",
    "INTERVAL", "DATE", "TIMESTAMP",
)
FUNCTIONS = (
    "abs", "array", "array_contains", "avg", "cast", "ceil", "coalesce", "collect_list", "collect_set",
    "concat", "concat_ws", "count", "current_date", "current_timestamp", "date_add", "date_format",
    "date_sub", "datediff", "day", "dayofweek", "dense_rank", "element_at", "exp", "explode", "extract",
    "first", "floor", "greatest", "hour", "if", "ifnull", "instr", "isnotnull", "isnull", "lag", "last",
    "lead", "least", "length", "ln", "log", "lower", "lpad", "ltrim", "max", "md5", "min", "minute",
    "mod", "month", "named_struct", "nullif", "nvl", "pow", "rank", "regexp_extract", "regexp_replace",
    "replace", "round", "row_number", "rpad", "rtrim", "sign", "size", "split", "sqrt", "stddev",
    "struct", "substr", "substring", "sum", "to_date", "to_timestamp", "trim", "trunc", "upper",
    "variance", "year",
)
# After these words comes the name of a table or view.
RELATION_CONTEXT = {"FROM", "JOIN", "INTO", "TABLE", "VIEW", "DESCRIBE", "DESC", "ANALYZE", "EXISTS"}
_WORD = re.compile(r"[\w.`]+$")
_META_ARGUMENTS = {"\\format": ("table", "csv", "json"), "\\explain": ("on", "off"), "\\timing": ("on", "off")}
_PATH_ARGUMENT = {"\\i": 1, "\\load": 2}  # which argument is a file path


@dataclass
class Schema:
    """The tables and views the shell knows of: name → (kind, column names)."""

    relations: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    settings: tuple[str, ...] = ()


class SqlCompleter(Completer):
    def __init__(self, schema: Schema, meta_commands: Iterable[str]):
        self.schema = schema
        self.meta_commands = tuple(meta_commands)
        self.paths = PathCompleter(expanduser=True)

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        if document.text.lstrip().startswith("\\"):
            yield from self.meta(document, complete_event)
            return
        word = _word_before(document.text_before_cursor)
        scope = Scope.of(document.text, self.schema)
        qualifier, _, prefix = word.rpartition(".")
        if qualifier:
            yield from _matches(prefix, scope.columns_of(qualifier), "column")
            return
        previous = _previous_keyword(document.text_before_cursor[: len(document.text_before_cursor) - len(word)])
        if previous in RELATION_CONTEXT:
            yield from _matches(prefix, scope.ctes, "CTE")
            yield from self.relations(prefix)
            return
        yield from _matches(prefix, scope.visible_columns(), "column")
        yield from _matches(prefix, scope.ctes, "CTE")
        yield from self.relations(prefix)
        yield from _matches(prefix, FUNCTIONS, "function")
        keywords = KEYWORDS if not prefix or not prefix.islower() else [k.lower() for k in KEYWORDS]
        yield from _matches(prefix, keywords, "keyword")

    def relations(self, prefix: str) -> Iterator[Completion]:
        for name, (kind, _) in self.schema.relations.items():
            yield from _matches(prefix, [name], kind)

    def meta(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        """A meta-command's name, then its arguments: a table name, a path, on/off, a format, a setting."""
        text = document.text_before_cursor.lstrip()
        words = text.split()
        if len(words) <= 1 and not text.endswith(" "):
            yield from _matches(text, self.meta_commands, "command")
            return
        command, position = words[0], len(words) - (0 if text.endswith(" ") else 1)
        current = "" if text.endswith(" ") else words[-1]
        if _PATH_ARGUMENT.get(command) == position:
            yield from self.paths.get_completions(Document(current, len(current)), complete_event)
        elif command in ("\\d", "\\load") and position == 1:
            yield from self.relations(current)
        elif command == "\\set" and position == 1:
            yield from _matches(current, self.schema.settings, "setting")
        elif command in _META_ARGUMENTS and position == 1:
            yield from _matches(current, _META_ARGUMENTS[command], "")


@dataclass
class Scope:
    """What the statement being typed names: its CTEs (with their columns) and its table aliases."""

    schema: Schema
    ctes: dict[str, tuple[str, ...]]
    aliases: dict[str, str]  # alias → table, view or CTE name

    @classmethod
    def of(cls, text: str, schema: Schema) -> Scope:
        tokens = _tokens(text)
        return cls(schema, _ctes(tokens), _aliases(tokens))

    def columns_of(self, name: str) -> tuple[str, ...]:
        name = self.aliases.get(name.lower(), name.lower())
        if name in self.ctes:
            return self.ctes[name]
        return self.schema.relations.get(name, ("", ()))[1]

    def visible_columns(self) -> list[str]:
        """Columns of every relation the statement reads, each once."""
        named = set(self.aliases.values())
        return list(dict.fromkeys(column for name in named for column in self.columns_of(name)))


def _word_before(text: str) -> str:
    match = _WORD.search(text)
    return match.group(0).replace("`", "") if match else ""


def _matches(prefix: str, candidates: Iterable[str], meta: str) -> Iterator[Completion]:
    lowered = prefix.lower()
    for candidate in candidates:
        if candidate.lower().startswith(lowered) and candidate != prefix:
            yield Completion(candidate, start_position=-len(prefix), display_meta=meta)


def _tokens(text: str) -> list[Token]:
    tokenizer = Spark.tokenizer_class()
    try:
        return tokenizer.tokenize(text)
    except TokenError:  # an unclosed string or comment while typing: the tokens before it
        return tokenizer.tokens


def _previous_keyword(text: str) -> str:
    """The last word before the cursor's word, upper-cased ('' at the start)."""
    tokens = _tokens(text)
    return tokens[-1].text.upper() if tokens else ""


def _is_name(token: Token) -> bool:
    return token.token_type in (TokenType.VAR, TokenType.IDENTIFIER) or (
        token.text.isidentifier() and token.token_type not in _CLAUSE_TOKENS)


_CLAUSE_TOKENS = {TokenType.WHERE, TokenType.ON, TokenType.JOIN, TokenType.GROUP_BY, TokenType.ORDER_BY,
                  TokenType.LIMIT, TokenType.UNION, TokenType.SELECT, TokenType.FROM, TokenType.USING,
                  TokenType.LEFT, TokenType.RIGHT, TokenType.INNER, TokenType.FULL, TokenType.CROSS,
                  TokenType.HAVING, TokenType.EXCEPT, TokenType.INTERSECT, TokenType.WITH, TokenType.SEMI,
                  TokenType.ANTI, TokenType.OUTER, TokenType.NATURAL, TokenType.ALIAS, TokenType.COMMA,
                  TokenType.L_PAREN, TokenType.R_PAREN, TokenType.SEMICOLON, TokenType.WINDOW}


def _ctes(tokens: list[Token]) -> dict[str, tuple[str, ...]]:
    """`name(columns) AS (` or `name AS (` right after WITH, RECURSIVE or a comma."""
    ctes = {}
    for index, token in enumerate(tokens):
        if index == 0 or tokens[index - 1].text.upper() not in ("WITH", "RECURSIVE", ","):
            continue
        if not _is_name(token):
            continue
        columns, end = _column_list(tokens, index + 1)
        while end < len(tokens) and tokens[end].token_type != TokenType.ALIAS and tokens[end].text.upper() in (
                "MAX", "RECURSION", "LEVEL") or (end < len(tokens) and tokens[end].token_type == TokenType.NUMBER):
            end += 1
        if end + 1 < len(tokens) and tokens[end].token_type == TokenType.ALIAS and \
                tokens[end + 1].token_type == TokenType.L_PAREN:
            ctes[token.text.lower()] = columns
    return ctes


def _column_list(tokens: list[Token], start: int) -> tuple[tuple[str, ...], int]:
    """The names in a parenthesised column list at `start` (for `min() AS dist`, `dist`) and the index
    after it; no list: () and `start`."""
    if start >= len(tokens) or tokens[start].token_type != TokenType.L_PAREN:
        return (), start
    names, last, depth = [], None, 0
    for index in range(start, len(tokens)):
        kind = tokens[index].token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return tuple(names + ([last] if last else [])), index + 1
        elif kind == TokenType.COMMA and depth == 1:
            names.append(last) if last else None
            last = None
        elif depth == 1 and _is_name(tokens[index]):
            last = tokens[index].text.lower()
    return tuple(names + ([last] if last else [])), len(tokens)


def _aliases(tokens: list[Token]) -> dict[str, str]:
    """Relations read after FROM, JOIN or a comma in a FROM list, by alias and by name: `edge e`,
    `edge AS e`, `edge`."""
    aliases = {}
    in_from = False
    for index, token in enumerate(tokens):
        word = token.text.upper()
        if token.token_type in (TokenType.FROM, TokenType.JOIN):
            in_from = True
        elif token.token_type in _CLAUSE_TOKENS - {TokenType.COMMA, TokenType.ALIAS} and word not in (
                "LEFT", "RIGHT", "INNER", "FULL", "CROSS", "SEMI", "ANTI", "OUTER", "NATURAL"):
            in_from = False
        if not in_from or not _is_name(token) or index == 0:
            continue
        if tokens[index - 1].token_type not in (TokenType.FROM, TokenType.JOIN, TokenType.COMMA):
            continue
        name = token.text.lower()
        aliases[name] = name
        following = tokens[index + 1: index + 3]
        if following and following[0].token_type == TokenType.ALIAS and len(following) > 1:
            aliases[following[1].text.lower()] = name
        elif following and _is_name(following[0]):
            aliases[following[0].text.lower()] = name
    return aliases
