"""Tab completion on its own, without a terminal: what it offers for SQL and for meta-commands, and that
every SQL word it offers is one recsql accepts.

The completer is driven with prompt_toolkit Documents. Keywords and join kinds are checked by translating
a small query with the translator and a stand-in catalog (no Spark); functions, which the translator hands
to Spark as they are, are also run for real, all of them in two queries.
"""

from __future__ import annotations

import io
import re

import pandas as pd
import pytest
from prompt_toolkit.document import Document
from strategies import set_strategy

from shell.commands import Argument, CommandTable, Kind, MetaCommand
from shell.completion import SqlCompleter
from shell.meta import COMMANDS, run_meta
from shell.runner import Runner
from shell.scope import Schema
from shell.startup import Startup
from shell.vocabulary import (
    AGGREGATE_FUNCTIONS,
    FUNCTIONS,
    JOINS,
    KEYWORDS,
    SCALAR_FUNCTIONS,
    STATEMENTS,
    WINDOW_FUNCTIONS,
)
from translator.dialect import parse_one
from translator.translate import translate

SCHEMA = Schema({"edge": ("table", ("src", "dst")), "employees": ("view", ("id", "boss"))}, ("recsql.strategy",))
TABLES = {"t": ("x", "s"), "u": ("x", "s")}  # the stand-in catalog of the translated queries


class Catalog:
    def table_columns(self, name: str) -> tuple[str, ...] | None:
        return TABLES.get(name)

    def view_query(self, name: str) -> None:
        return None


def translated(sql: str) -> None:
    """Translate `sql` (raises what the translator raises)."""
    translate(parse_one(sql), Catalog())


def completions(text: str, commands: CommandTable = COMMANDS) -> list[str]:
    """What Tab offers with the cursor at `|` (or at the end)."""
    cursor = text.index("|") if "|" in text else len(text)
    document = Document(text.replace("|", ""), cursor)
    return [completion.text for completion in SqlCompleter(SCHEMA, commands).get_completions(document, None)]


# ---------------------------------------------------------------- names in the statement and the catalog


@pytest.mark.parametrize(
    "text, expected",
    [
        ("SELECT * FROM e", ["edge", "employees"]),
        ("select * from edge join em", ["employees"]),
        ("SELECT x.b FROM employees x WHERE x.", ["id", "boss"]),
        ("SELECT * FROM edge AS g WHERE g.s", ["src"]),
        ("WITH RECURSIVE tc(a, min() AS dist) AS (SELECT 1, 2) SELECT * FROM t", ["tc"]),
        ("WITH RECURSIVE tc(a, min() AS dist) AS (SELECT 1, 2) SELECT tc.", ["a", "dist"]),
        (
            "WITH p AS (SELECT 1), q(z) MAX RECURSION LEVEL 3 AS (SELECT 2) SELECT * FROM ",
            ["p", "q", "edge", "employees"],
        ),
        ("\\lo", ["\\load"]),
        ("\\d e", ["edge", "employees"]),
        ("\\format c", ["csv"]),
        ("\\timing o", ["on", "off"]),
        ("\\set recsql.s", ["recsql.strategy"]),
    ],
)
def test_completion(text, expected):
    assert completions(text) == expected


def test_completion_offers_columns_in_scope_then_functions_and_keywords():
    offered = completions("SELECT s| FROM edge")
    assert offered[:3] == ["src", "sign", "size"]  # the column first
    assert offered.index("sum") < offered.index("select")
    assert "select" in completions("sel") and "SELECT" in completions("SEL")


# ---------------------------------------------------------------- meta-commands, from their table


def test_every_command_completes_by_its_names():
    offered = completions("\\")
    for command in COMMANDS:
        assert {command.name, *command.aliases} <= set(offered)


FILES = ("notes.sql", "edges.csv")
OFFERED = {Kind.TABLE: ["edge", "employees"], Kind.SETTING: ["recsql.strategy"], Kind.PATH: list(FILES), Kind.TEXT: []}
ARGUMENTS = [
    (command, position, argument)
    for command in COMMANDS
    for position, argument in enumerate(command.arguments, start=1)
]


@pytest.mark.parametrize(
    "command, position, argument",
    ARGUMENTS,
    ids=[f"{command.name} {argument.label}" for command, _, argument in ARGUMENTS],
)
def test_meta_arguments_complete_as_the_table_says(command, position, argument, tmp_path):
    """Each argument of each command offers what its kind names (a choice: its words), with the words
    before it typed; past the last argument nothing is offered."""
    for name in FILES:
        (tmp_path / name).touch()
    before = f"{command.name} {'x ' * (position - 1)}"
    expected = list(argument.choices) if argument.kind is Kind.CHOICE else OFFERED[argument.kind]
    offered = completions(f"{before}{tmp_path}/" if argument.kind is Kind.PATH else before)
    assert sorted(offered) == sorted(expected)
    assert completions(f"{command.name} {'x ' * len(command.arguments)}") == []


def test_one_new_entry_is_a_new_command_with_its_arguments():
    colour = MetaCommand(
        "\\colour",
        "colour the output",
        lambda runner, args: None,
        (Argument.choice("red", "blue"),),
        optional=True,
        aliases=("\\c",),
    )
    table = CommandTable([*COMMANDS, colour])
    assert completions("\\co", table) == ["\\colour"]
    assert completions("\\colour ", table) == ["red", "blue"] == completions("\\c ", table)
    assert colour.usage == "[red|blue]"


def shell_runner() -> tuple[Runner, io.StringIO, io.StringIO]:
    """A runner that never connects: meta-commands about the shell itself need no Spark."""
    out, err = io.StringIO(), io.StringIO()
    return Runner(Startup(lambda: None), out, err), out, err


@pytest.mark.parametrize("line", ["\\help", "\\?", "\\h"])
def test_help_lists_every_entry_of_the_table(line):
    runner, out, _ = shell_runner()
    run_meta(runner, line)
    for command in COMMANDS:
        row = rf"^{re.escape(f'{command.name} {command.usage}'.rstrip())}\s+{re.escape(command.summary)}\s*$"
        assert re.search(row, out.getvalue(), re.MULTILINE), out.getvalue()


def test_a_usage_error_quotes_the_usage_from_the_table():
    runner, _, err = shell_runner()
    run_meta(runner, "\\timing maybe")
    run_meta(runner, "\\nope")
    assert err.getvalue() == (
        "\\timing: takes on or off. Usage: \\timing [on|off]\nunknown command \\nope: \\help lists the commands\n"
    )


# ---------------------------------------------------------------- only what recsql accepts


@pytest.mark.parametrize("kind", JOINS)
def test_every_offered_join_kind_translates(kind):
    selected = "t.x" if kind.endswith(("SEMI JOIN", "ANTI JOIN")) else "t.x, u.s"  # their right side is not seen
    translated(f"SELECT {selected} FROM t {kind} u" + ("" if kind == "CROSS JOIN" else " ON t.x = u.x"))


# Between them, these queries use every keyword offered for queries (all but the statements' own).
QUERIES = [
    "WITH RECURSIVE r(x) MAX RECURSION LEVEL 5 AS (SELECT x FROM t UNION SELECT r.x + 1 FROM r WHERE r.x < 9) "
    "SELECT DISTINCT x AS y FROM r ORDER BY y DESC NULLS LAST LIMIT 3",
    "SELECT s, count(*) FROM t GROUP BY s HAVING count(*) > 1 ORDER BY s ASC NULLS FIRST",
    "SELECT x FROM t UNION ALL SELECT x FROM u INTERSECT SELECT x FROM t EXCEPT SELECT x FROM u",
    "SELECT ALL t.x FROM t JOIN u USING (x) INNER JOIN u AS v ON t.x = v.x LEFT JOIN u AS w ON t.x = w.x "
    "CROSS JOIN u AS z",
    "SELECT t.x FROM t LEFT SEMI JOIN u ON t.x = u.x LEFT ANTI JOIN u AS v ON t.s = v.s",
    "SELECT CASE WHEN x IS NULL THEN TRUE ELSE FALSE END FROM t WHERE (x BETWEEN 1 AND 3 OR s LIKE 'a%') "
    "AND NOT x IN (SELECT x FROM u) AND EXISTS (SELECT 1 FROM u WHERE u.x = t.x)",
    "SELECT DATE '2020-01-01' + INTERVAL 1 DAY, TIMESTAMP '2020-01-01 10:00:00' FROM t",
    "SELECT x FROM t INTERSECT ALL SELECT x FROM u EXCEPT ALL SELECT x FROM t",
    "SELECT t.x, sum(t.x) OVER (PARTITION BY t.s ORDER BY t.x ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) "
    "FROM t RIGHT JOIN u ON t.x = u.x FULL JOIN u AS v ON t.x = v.x FULL OUTER JOIN u AS w ON t.x = w.x "
    "NATURAL JOIN u AS z",
    "SELECT s, x, count(*) FROM t GROUP BY ROLLUP (s, x) UNION SELECT s, x, count(*) FROM t GROUP BY CUBE (s, x) "
    "UNION SELECT s, x, count(*) FROM t GROUP BY GROUPING SETS ((s), (x))",
]


@pytest.mark.parametrize("query", QUERIES)
def test_example_queries_translate(query):
    translated(query)


def test_the_examples_use_every_query_keyword():
    unused = [
        word
        for word in KEYWORDS
        if word not in STATEMENTS and not any(re.search(rf"\b{word}\b", query) for query in QUERIES)
    ]
    assert unused == []


CALLS = {  # an example call of each offered function, over t(x INT, s STRING)
    "abs": "abs(x)",
    "cume_dist": "cume_dist() OVER (ORDER BY x)",
    "dense_rank": "dense_rank() OVER (ORDER BY x)",
    "lag": "lag(x) OVER (ORDER BY x)",
    "lead": "lead(x, 1, 0) OVER (ORDER BY x)",
    "ntile": "ntile(2) OVER (ORDER BY x)",
    "percent_rank": "percent_rank() OVER (ORDER BY x)",
    "rank": "rank() OVER (PARTITION BY s ORDER BY x)",
    "row_number": "row_number() OVER (ORDER BY x)",
    "array": "array(x, 1)",
    "array_contains": "array_contains(array(x), 1)",
    "avg": "avg(x)",
    "cast": "cast(x AS string)",
    "ceil": "ceil(x / 2)",
    "coalesce": "coalesce(x, 0)",
    "collect_list": "collect_list(x)",
    "collect_set": "collect_set(x)",
    "concat": "concat(s, 'z')",
    "concat_ws": "concat_ws('-', s, s)",
    "count": "count(x)",
    "current_date": "current_date()",
    "current_timestamp": "current_timestamp()",
    "date_add": "date_add(DATE '2020-01-01', 1)",
    "date_format": "date_format(DATE '2020-01-01', 'yyyy')",
    "date_sub": "date_sub(DATE '2020-01-01', 1)",
    "datediff": "datediff(DATE '2020-01-05', DATE '2020-01-01')",
    "day": "day(DATE '2020-01-01')",
    "dayofweek": "dayofweek(DATE '2020-01-01')",
    "element_at": "element_at(array(x), 1)",
    "exp": "exp(x)",
    "explode": "explode(array(x, 1))",
    "extract": "extract(YEAR FROM DATE '2020-01-01')",
    "first": "first(x)",
    "floor": "floor(x / 2)",
    "greatest": "greatest(x, 2)",
    "hour": "hour(TIMESTAMP '2020-01-01 10:00:00')",
    "if": "if(x > 1, 'y', 'n')",
    "ifnull": "ifnull(x, 0)",
    "instr": "instr(s, 'a')",
    "isnotnull": "isnotnull(x)",
    "isnull": "isnull(x)",
    "last": "last(x)",
    "least": "least(x, 2)",
    "length": "length(s)",
    "ln": "ln(x)",
    "log": "log(10, x)",
    "lower": "lower(s)",
    "lpad": "lpad(s, 3, '0')",
    "ltrim": "ltrim(s)",
    "max": "max(x)",
    "md5": "md5(s)",
    "min": "min(x)",
    "minute": "minute(TIMESTAMP '2020-01-01 10:05:00')",
    "mod": "mod(x, 2)",
    "month": "month(DATE '2020-01-01')",
    "named_struct": "named_struct('a', x)",
    "nullif": "nullif(x, 1)",
    "nvl": "nvl(x, 0)",
    "pow": "pow(x, 2)",
    "regexp_extract": "regexp_extract(s, '(a)', 1)",
    "regexp_replace": "regexp_replace(s, 'a', 'b')",
    "replace": "replace(s, 'a', 'b')",
    "round": "round(x / 3, 2)",
    "rpad": "rpad(s, 3, '0')",
    "rtrim": "rtrim(s)",
    "sign": "sign(x)",
    "size": "size(array(x))",
    "split": "split(s, ',')",
    "sqrt": "sqrt(x)",
    "stddev": "stddev(x)",
    "struct": "struct(x, s)",
    "substr": "substr(s, 1, 1)",
    "substring": "substring(s, 1, 1)",
    "sum": "sum(x)",
    "to_date": "to_date('2020-01-01')",
    "to_timestamp": "to_timestamp('2020-01-01 10:00:00')",
    "trim": "trim(s)",
    "trunc": "trunc(DATE '2020-03-05', 'MM')",
    "upper": "upper(s)",
    "variance": "variance(x)",
    "year": "year(DATE '2020-01-01')",
}


def test_every_offered_function_has_an_example_call():
    assert sorted(CALLS) == sorted(FUNCTIONS)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_offered_function_translates(name):
    translated(f"SELECT {CALLS[name]} AS v FROM t")


@pytest.fixture(scope="module")
def completion_table(conn) -> str:
    conn.register("completion_t", pd.DataFrame({"x": [1, 2, 3], "s": ["a", "b", "c"]}))
    return "completion_t"


@pytest.mark.spark
@pytest.mark.parametrize("strategy", ["distributed", "local"])
def test_every_offered_function_runs(conn, cur, completion_table, strategy):
    set_strategy(conn, strategy)
    for functions in (SCALAR_FUNCTIONS, AGGREGATE_FUNCTIONS, WINDOW_FUNCTIONS):
        calls = ", ".join(f"{CALLS[name]} AS c_{name}" for name in functions)
        cur.execute(f"SELECT {calls} FROM {completion_table}")
        assert cur.fetchall(), functions
