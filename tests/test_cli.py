"""The `recsql` command: statement splitting, output formats, the script runner and the console script.

Example scripts are checked against answers computed here in plain Python from the same CSV files.
"""

from __future__ import annotations

import csv
import heapq
import io
import json
import os
import re
import subprocess
import sys
from collections import defaultdict, deque
from pathlib import Path

import pytest

from recsql.errors import OperationalError, ProgrammingError
from shell.render import Fetched, render
from shell.runner import Options, Runner, format_error
from shell.startup import Startup
from shell.statements import Statement, command_tag, is_complete, script_position, split

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RECSQL = Path(sys.executable).parent / "recsql"


# ---------------------------------------------------------------- statement splitting


def texts(script: str) -> list[str]:
    return [statement.text for statement in split(script)]


@pytest.mark.parametrize(
    "script, expected",
    [
        ("SELECT 1; SELECT 2;", ["SELECT 1", "SELECT 2"]),
        ("SELECT 1; SELECT 2", ["SELECT 1", "SELECT 2"]),
        ("SELECT 'a;b'; SELECT 2", ["SELECT 'a;b'", "SELECT 2"]),
        ('SELECT "a;b"; SELECT 2', ['SELECT "a;b"', "SELECT 2"]),
        ("SELECT `odd;name` FROM t; SELECT 2", ["SELECT `odd;name` FROM t", "SELECT 2"]),
        ("SELECT 'it\\'s;' ; SELECT 2", ["SELECT 'it\\'s;'", "SELECT 2"]),
        ("SELECT 1 -- not; the end\n; SELECT 2", ["SELECT 1 -- not; the end", "SELECT 2"]),
        ("SELECT /* ; */ 1; SELECT 2", ["SELECT /* ; */ 1", "SELECT 2"]),
        ("SELECT /* a /* nested; */ still; */ 1; SELECT 2", ["SELECT /* a /* nested; */ still; */ 1", "SELECT 2"]),
        ("SELECT 'multi\nline;';\nSELECT 2", ["SELECT 'multi\nline;'", "SELECT 2"]),
        ("EXPLAIN SELECT ';' ; SELECT 2", ["EXPLAIN SELECT ';'", "SELECT 2"]),
        (";; SELECT 1;;\n;", ["SELECT 1"]),
        ("-- only a comment;\n/* and; another */\n", []),
        ("", []),
        ("-- heading\nSELECT 1; -- trailing; comment\n", ["SELECT 1"]),
        ("DATALOG $$ p(1). // a; b\n.output p $$; SELECT 2", ["DATALOG $$ p(1). // a; b\n.output p $$", "SELECT 2"]),
        (
            "SELECT * FROM (DATALOG $x$ q(';'). $x$) t; SELECT 2",
            ["SELECT * FROM (DATALOG $x$ q(';'). $x$) t", "SELECT 2"],
        ),
    ],
)
def test_split_texts(script, expected):
    assert texts(script) == expected


def test_split_positions_are_where_each_statement_starts():
    script = "-- header; comment\n  SELECT 1;  SELECT\n  2;\n\n/* x */ SELECT 'a\n;b'; SELECT 3"
    statements = split(script)
    assert [(s.line, s.column) for s in statements] == [(2, 3), (2, 14), (5, 9), (6, 6)]
    lines = script.splitlines()
    for statement in statements:
        assert lines[statement.line - 1][statement.column - 1 :].startswith(statement.text.splitlines()[0])


def test_split_keeps_an_unterminated_literal_as_the_last_statement():
    statements = split("SELECT 1;\n  -- note\n  SELECT 'oops; SELECT 2")
    assert [s.text for s in statements] == ["SELECT 1", "SELECT 'oops; SELECT 2"]
    assert (statements[1].line, statements[1].column) == (3, 3)


def test_split_keeps_an_unterminated_comment_as_the_last_statement():
    assert texts("SELECT 1; /* never closed; SELECT 2") == ["SELECT 1", "/* never closed; SELECT 2"]


def test_script_position_shifts_columns_only_on_the_statement_first_line():
    statement = Statement("SELECT x\nFROM t", line=4, column=10)
    assert script_position(statement, 1, 8) == (4, 17)
    assert script_position(statement, 2, 6) == (5, 6)


@pytest.mark.parametrize(
    "text, complete",
    [
        ("SELECT 1;", True),
        ("SELECT 1; -- done", True),
        ("SELECT 1", False),
        ("SELECT ';", False),
        ("SELECT 1 /* ; */", False),
        ("", False),
        ("SELECT 1;\nSELECT 2", False),
    ],
)
def test_is_complete(text, complete):
    assert is_complete(text) is complete


@pytest.mark.parametrize(
    "text, tag",
    [
        ("create table t (a int)", "CREATE TABLE"),
        ("CREATE OR REPLACE VIEW v AS SELECT 1", "CREATE VIEW"),
        ("DROP TABLE IF EXISTS t", "DROP TABLE"),
        ("INSERT INTO t VALUES (1)", "INSERT"),
        ("SET recsql.max_iterations = 5", "SET"),
    ],
)
def test_command_tag(text, tag):
    assert command_tag(text) == tag


# ---------------------------------------------------------------- output formats

RESULT = Fetched(
    ["city", "hops", "note"],
    ["string", "bigint", "string"],
    [("Paris", 1, None), ("Lyon, France", 12, 'say "hi"')],
    0.25,
)


def rendered(result: Fetched, fmt: str) -> str:
    out = io.StringIO()
    render(result, out, fmt)
    return out.getvalue()


def test_csv_output():
    assert rendered(RESULT, "csv") == 'city,hops,note\nParis,1,\n"Lyon, France",12,"say ""hi"""\n'


def test_json_output_is_one_object_per_line():
    assert rendered(RESULT, "json") == (
        '{"city": "Paris", "hops": 1, "note": null}\n{"city": "Lyon, France", "hops": 12, "note": "say \\"hi\\""}\n'
    )


def test_table_output_right_aligns_numbers_and_shows_null():
    text = rendered(RESULT, "table")
    paris = next(line for line in text.splitlines() if "Paris" in line)
    lyon = next(line for line in text.splitlines() if "Lyon" in line)
    assert paris.index("1 ") == lyon.index("12 ") + 1
    assert "NULL" in paris
    assert "2 rows (0.25 s)" in text


def test_table_output_of_no_rows():
    assert "0 rows" in rendered(Fetched(["a"], ["int"], [], 0.0), "table")


# ---------------------------------------------------------------- error messages


def test_error_without_position_points_at_the_statement():
    statement = Statement("SELECT * FROM nowhere", line=3, column=5)
    message = format_error(OperationalError("it broke"), statement, "x.sql", "")
    assert message == "x.sql:3:5: OperationalError: it broke"


def test_error_with_position_quotes_the_line_with_a_caret():
    source = "SELECT 1;\n\tSELECT 2 FROM nowhere;"
    statement = split(source)[1]
    error = ProgrammingError("no table nowhere", line=1, column=15)
    assert format_error(error, statement, "x.sql", source).splitlines() == [
        "x.sql:2:16: ProgrammingError: no table nowhere",
        "    \tSELECT 2 FROM nowhere;",
        "    \t              ^",
    ]


# ---------------------------------------------------------------- example scripts, against plain Python


def runner(conn, out: io.StringIO, err: io.StringIO, fmt: str = "table") -> Runner:
    return Runner(Startup.opened(conn), out, err, Options(format=fmt))


def read_csv(name: str) -> list[dict[str, str]]:
    with open(EXAMPLES / "data" / name, newline="") as file:
        return list(csv.DictReader(file))


def run_example(conn, name: str) -> dict[frozenset, list[dict]]:
    """Run an example script (JSON output); its answers grouped by column names."""
    out, err = io.StringIO(), io.StringIO()
    assert runner(conn, out, err, "json").run_script(str(EXAMPLES / name)) == 0, err.getvalue()
    assert err.getvalue() == ""
    answers = defaultdict(list)
    for line in out.getvalue().splitlines():
        row = json.loads(line)
        answers[frozenset(row)].append(row)
    return answers


def fewest_hops(edges: list[tuple[str, str]], start: str) -> dict[str, int]:
    hops, queue = {start: 0}, deque([start])
    while queue:
        node = queue.popleft()
        for src, dst in edges:
            if src == node and dst not in hops:
                hops[dst] = hops[node] + 1
                queue.append(dst)
    return hops


def shortest(edges: list[tuple[str, str, int]], start: str) -> dict[str, int]:
    dist, heap = {}, [(0, start)]
    while heap:
        km, node = heapq.heappop(heap)
        if node not in dist:
            dist[node] = km
            heap.extend((km + w, dst) for src, dst, w in edges if src == node)
    return dist


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """Scripts must find their data relative to themselves, not to the working directory."""
    monkeypatch.chdir(tmp_path)


def test_reachability_example(conn, elsewhere):
    hops = fewest_hops([(r["src"], r["dst"]) for r in read_csv("flights.csv")], "Amsterdam")
    expected = sorted(({"city": c, "flights": h} for c, h in hops.items()), key=lambda r: (r["flights"], r["city"]))
    assert run_example(conn, "reachability.sql") == {frozenset({"city", "flights"}): expected}


def test_shortest_paths_example(conn, elsewhere):
    dist = shortest([(r["src"], r["dst"], int(r["km"])) for r in read_csv("roads.csv")], "Amsterdam")
    expected = sorted(({"town": t, "km": km} for t, km in dist.items()), key=lambda r: (r["km"], r["town"]))
    assert run_example(conn, "shortest_paths.sql") == {frozenset({"town", "km"}): expected}


def test_bill_of_materials_example(conn, elsewhere):
    basic = {r["part"]: (int(r["days"]), float(r["cost"])) for r in read_csv("basic_parts.csv")}
    subs = defaultdict(list)
    for r in read_csv("components.csv"):
        subs[r["part"]].append((r["sub"], int(r["qty"])))

    def days(part):
        return basic[part][0] if part in basic else max(days(sub) for sub, _ in subs[part])

    def cost(part):
        return basic[part][1] if part in basic else sum(qty * cost(sub) for sub, qty in subs[part])

    answers = run_example(conn, "bill_of_materials.sql")
    assert answers[frozenset({"assembly", "days"})] == [{"assembly": a, "days": days(a)} for a in sorted(subs)]
    costs = answers[frozenset({"assembly", "cost"})]
    assert [r["assembly"] for r in costs] == sorted(subs)
    assert [r["cost"] for r in costs] == pytest.approx([cost(a) for a in sorted(subs)])
    assert len(answers) == 2


def test_org_chart_example(conn, elsewhere):
    employees = read_csv("employees.csv")
    manager = {r["name"]: r["manager"] or None for r in employees}
    title = {r["name"]: r["title"] for r in employees}

    def bosses(name):
        return [] if manager[name] is None else [manager[name], *bosses(manager[name])]

    under = defaultdict(int)
    for name in manager:
        for boss in bosses(name):
            under[boss] += 1
    head_counts = sorted(
        ({"manager": m, "head_count": n} for m, n in under.items()), key=lambda r: (-r["head_count"], r["manager"])
    )
    chain = [{"step": i, "boss": b, "title": title[b]} for i, b in enumerate(bosses("Mo"), start=1)]
    assert run_example(conn, "org_chart.sql") == {
        frozenset({"manager", "head_count"}): head_counts,
        frozenset({"step", "boss", "title"}): chain,
    }


# ---------------------------------------------------------------- errors in scripts


BROKEN = """-- a script with a mistake on line 5
SELECT 1 AS first;

SELECT 2 AS second FROM t WHERE
  a = = 2;
SELECT 3 AS third;
"""


def test_script_error_points_at_its_place_and_stops(conn, tmp_path):
    path = tmp_path / "broken.sql"
    path.write_text(BROKEN)
    out, err = io.StringIO(), io.StringIO()
    assert runner(conn, out, err, "json").run_script(str(path)) == 1
    assert re.match(rf"{re.escape(str(path))}:5:7: \w+Error: ", err.getvalue()), err.getvalue()
    assert "Traceback" not in err.getvalue()
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [{"first": 1}]


def test_continue_on_error_runs_the_rest(conn):
    source = "SELECT 1 AS first;\nSELECT * FROM no_such_table_anywhere;\nSELECT 3 AS third;"
    out, err = io.StringIO(), io.StringIO()
    assert runner(conn, out, err, "json").run_source(source, "<command>", continue_on_error=True) == 1
    assert err.getvalue().startswith("<command>:2:")
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [{"first": 1}, {"third": 3}]


# ---------------------------------------------------------------- the console script


def recsql_command(tmp_path, *args: str) -> subprocess.CompletedProcess:
    options = ["--master", "local[1]", "--warehouse", str(tmp_path), "--conf", "spark.ui.enabled=false"]
    return subprocess.run([str(RECSQL), *args, *options], capture_output=True, text=True, timeout=300, cwd=tmp_path)


def test_console_command_prints_the_answer(tmp_path):
    done = recsql_command(tmp_path, "-c", "SELECT 1 + 1")
    assert (done.returncode, done.stderr) == (0, "")
    assert re.search(r"^\s*2\s*$", done.stdout, re.MULTILINE), done.stdout
    assert "1 row (" in done.stdout


def test_console_command_syntax_error_exit_code(tmp_path):
    done = recsql_command(tmp_path, "-c", "SELECT (1 FROM")
    assert done.returncode == 1
    assert done.stderr.startswith("<command>:1:"), done.stderr
    assert "Traceback" not in done.stderr


NO_SPARK_SCRIPT = """CREATE TABLE flight USING csv OPTIONS (path 'flights.csv', header 'true');
CREATE TABLE price (src STRING, dst STRING, eur INT) USING json OPTIONS (path 'prices.json');
CREATE TABLE stop USING parquet OPTIONS (path 'stops.parquet');
CREATE TABLE trip (city STRING, hops INT);
INSERT INTO trip WITH RECURSIVE reach(city, min() AS hops) AS (SELECT 'A', 0)
  UNION (SELECT f.dst, r.hops + 1 FROM reach r, flight f WHERE r.city = f.src) SELECT * FROM reach;
SET spark.sql.shuffle.partitions = 3;
SELECT t.city, t.hops, s.name, sum(p.eur) AS eur FROM trip t JOIN stop s ON s.city = t.city
  LEFT JOIN price p ON p.dst = t.city GROUP BY t.city, t.hops, s.name ORDER BY t.city;
"""


@pytest.mark.slow
def test_a_script_that_needs_no_spark_never_starts_a_jvm(tmp_path):
    """A script over CSV, JSON and Parquet tables and a managed one, with a recursion, runs with no JVM
    at all (Java is wrapped to note any start), and answers right; one that needs Spark starts it."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from spark_processes import java_home_wrapper, java_started

    (tmp_path / "flights.csv").write_text("src,dst\nA,B\nB,C\nC,A\nC,D\n")
    (tmp_path / "prices.json").write_text('{"src": "A", "dst": "B", "eur": 10}\n{"src": "C", "dst": "D", "eur": 7}\n')
    pq.write_table(
        pa.table({"city": ["A", "B", "C", "D"], "name": ["Aa", "Bb", "Cc", "Dd"]}), tmp_path / "stops.parquet"
    )
    (tmp_path / "trip.sql").write_text(NO_SPARK_SCRIPT)
    java_home = java_home_wrapper(tmp_path / "java")
    environment = {**os.environ, "JAVA_HOME": str(java_home), "HOME": str(tmp_path)}
    done = subprocess.run(
        [str(RECSQL), "run", "trip.sql", "--format", "csv", "--warehouse", str(tmp_path / "wh")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=environment,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert list(csv.reader(io.StringIO(done.stdout.split("city,hops,name,eur\n")[1]))) == [
        ["A", "0", "Aa", ""],
        ["B", "1", "Bb", "10"],
        ["C", "2", "Cc", ""],
        ["D", "3", "Dd", "7"],
    ]
    assert not java_started(java_home)
    needs_spark = subprocess.run(
        [
            str(RECSQL),
            "-c",
            "SET recsql.spark = always; SELECT count(*) FROM stop",
            "--warehouse",
            str(tmp_path / "wh"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=environment,
    )
    assert (needs_spark.returncode, needs_spark.stderr) == (0, ""), needs_spark.stderr
    assert java_started(java_home)


# ---------------------------------------------------------------- Datalog example programs, against plain Python


def rows_of(answers: dict[frozenset, list[dict]], *columns: str) -> set[tuple]:
    return {tuple(row[column] for column in columns) for row in answers[frozenset(columns)]}


def read_facts(name: str) -> list[tuple[str, ...]]:
    return [tuple(line.split("\t")) for line in (EXAMPLES / "data" / "points_to" / name).read_text().splitlines()]


def andersen(new, assign, load, store) -> set[tuple[str, str]]:
    """Points-to sets by naive iteration to the fixpoint."""
    pts, heap = set(new), set()
    while True:
        more_pts = pts | {(v, o) for v, w in assign for x, o in pts if x == w}
        more_pts |= {(v, o) for v, b in load for x, p in pts if x == b for h, o in heap if h == p}
        more_heap = heap | {(p, o) for b, w in store for x, p in pts if x == b for y, o in pts if y == w}
        if (more_pts, more_heap) == (pts, heap):
            return pts
        pts, heap = more_pts, more_heap


def test_datalog_examples_match_python(conn, elsewhere):
    hops = fewest_hops([(r["src"], r["dst"]) for r in read_csv("flights.csv")], "Amsterdam")
    assert rows_of(run_example(conn, "reachability.dl"), "city", "flights") == set(hops.items())
    roads = [(r["src"], r["dst"], int(r["km"])) for r in read_csv("roads.csv")]
    assert rows_of(run_example(conn, "shortest_paths.dl"), "town", "km") == set(shortest(roads, "Amsterdam").items())
    labels: dict[str, str] = {town: town for src, dst, _ in roads for town in (src, dst)}
    changed = True
    while changed:
        changed = False
        for src, dst, _ in roads:
            low = min(labels[src], labels[dst])
            if labels[src] != low or labels[dst] != low:
                labels[src] = labels[dst] = low
                changed = True
    sizes: dict[str, int] = defaultdict(int)
    for label in labels.values():
        sizes[label] += 1
    assert rows_of(run_example(conn, "components.dl"), "label", "towns") == set(sizes.items())
    manages = {(r["manager"], r["name"]) for r in read_csv("employees.csv") if r["manager"]}
    generation = {(x, y) for m, x in manages for n, y in manages if m == n and x != y}
    while True:
        more = generation | {(x, y) for a, x in manages for p, q in generation if p == a for b, y in manages if b == q}
        if more == generation:
            break
        generation = more
    assert rows_of(run_example(conn, "same_generation.dl"), "a", "b") == generation
    facts = [read_facts(f"{name}.facts") for name in ("new", "assign", "load", "store")]
    assert rows_of(run_example(conn, "points_to.dl"), "v", "o") == andersen(*facts)


def test_recsql_runs_a_datalog_program_from_the_command_line(tmp_path):
    env = {**os.environ, "RECSQL_WAREHOUSE": str(tmp_path / "warehouse")}
    program = "n(1). n(Y) :- n(X), X < 5, Y = X + 1. total(sum<X>) :- n(X). .output total"
    finished = subprocess.run(
        [str(RECSQL), "--datalog", "-c", program, "--format", "csv"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (finished.returncode, finished.stdout.split(), finished.stderr) == (0, ["sum", "15"], "")
    wrong = subprocess.run(
        [str(RECSQL), "--datalog", "-c", "p(X) :- q(X). .output p"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert wrong.returncode == 1 and "<command>:1:9: ProgrammingError: unknown relation 'q'" in wrong.stderr
