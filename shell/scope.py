"""What the statement being typed names, for completion: its CTEs with their columns and the relations
it reads by alias, next to the tables and views the catalog holds.

The statement is read from its tokens (sqlglot's Spark tokenizer) rather than parsed, because while it is
being typed it rarely parses; names are picked out of the token stream by the words around them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot.tokens import Token, TokenType

from shell.statements import tokenize


@dataclass
class Schema:
    """The catalog as the shell last read it: tables and views (name → (kind, column names)) and the names
    of the settings."""

    relations: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    settings: tuple[str, ...] = ()


@dataclass
class Scope:
    """What the statement being typed names: its CTEs (with their columns) and its table aliases."""

    schema: Schema
    ctes: dict[str, tuple[str, ...]]
    aliases: dict[str, str]  # alias → table, view or CTE name

    @classmethod
    def of(cls, text: str, schema: Schema) -> Scope:
        tokens = tokenize(text)[0]  # an unclosed string or comment while typing: the tokens before it
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


def _is_name(token: Token) -> bool:
    return token.token_type in (TokenType.VAR, TokenType.IDENTIFIER) or (
        token.text.isidentifier() and token.token_type not in _CLAUSE_TOKENS
    )


_CLAUSE_TOKENS = {
    TokenType.WHERE,
    TokenType.ON,
    TokenType.JOIN,
    TokenType.GROUP_BY,
    TokenType.ORDER_BY,
    TokenType.LIMIT,
    TokenType.UNION,
    TokenType.SELECT,
    TokenType.FROM,
    TokenType.USING,
    TokenType.LEFT,
    TokenType.RIGHT,
    TokenType.INNER,
    TokenType.FULL,
    TokenType.CROSS,
    TokenType.HAVING,
    TokenType.EXCEPT,
    TokenType.INTERSECT,
    TokenType.WITH,
    TokenType.SEMI,
    TokenType.ANTI,
    TokenType.OUTER,
    TokenType.NATURAL,
    TokenType.ALIAS,
    TokenType.COMMA,
    TokenType.L_PAREN,
    TokenType.R_PAREN,
    TokenType.SEMICOLON,
    TokenType.WINDOW,
}


def _ctes(tokens: list[Token]) -> dict[str, tuple[str, ...]]:
    """`name(columns) AS (` or `name AS (` right after WITH, RECURSIVE or a comma."""
    ctes = {}
    for index, token in enumerate(tokens):
        if index == 0 or tokens[index - 1].text.upper() not in ("WITH", "RECURSIVE", ","):
            continue
        if not _is_name(token):
            continue
        columns, end = _column_list(tokens, index + 1)
        while (
            end < len(tokens)
            and tokens[end].token_type != TokenType.ALIAS
            and tokens[end].text.upper() in ("MAX", "RECURSION", "LEVEL")
        ) or (end < len(tokens) and tokens[end].token_type == TokenType.NUMBER):
            end += 1
        if (
            end + 1 < len(tokens)
            and tokens[end].token_type == TokenType.ALIAS
            and tokens[end + 1].token_type == TokenType.L_PAREN
        ):
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
            "LEFT",
            "RIGHT",
            "INNER",
            "FULL",
            "CROSS",
            "SEMI",
            "ANTI",
            "OUTER",
            "NATURAL",
        ):
            in_from = False
        if not in_from or not _is_name(token) or index == 0:
            continue
        if tokens[index - 1].token_type not in (TokenType.FROM, TokenType.JOIN, TokenType.COMMA):
            continue
        name = token.text.lower()
        aliases[name] = name
        following = tokens[index + 1 : index + 3]
        if following and following[0].token_type == TokenType.ALIAS and len(following) > 1:
            aliases[following[1].text.lower()] = name
        elif following and _is_name(following[0]):
            aliases[following[0].text.lower()] = name
    return aliases
