"""The interactive shell, driven through a pseudo-terminal as a person would use it.

One shell runs for the module (starting Spark takes seconds); each test types into it and reads the
screen. Tests that need a shell of their own (exits, start-up failures) start one that never reaches
Spark, which is quick.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from reference import transitive_closure
from spark_processes import java_home_wrapper, java_started, spark_jvm_running
from terminal import Terminal

RECSQL = str(Path(sys.executable).parent / "recsql")
OPTIONS = ["--master", "local[2]", "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2"]
EDGES = [(1, 2), (2, 3), (3, 4), (4, 2), (5, 6)]
LONG_QUERY = "WITH RECURSIVE n(x) AS (SELECT 1 UNION SELECT x + 1 FROM n WHERE x < 100000000) SELECT count(*) FROM n;"


def shell_env(home: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(home),
        "RECSQL_WAREHOUSE": str(home / "warehouse"),
        "TERM": "xterm-256color",
        "PROMPT_TOOLKIT_NO_CPR": "1",
        **extra,
    }


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def shell(home):
    terminal = Terminal([RECSQL, *OPTIONS], shell_env(home))
    yield terminal
    terminal.close()


def run(shell: Terminal, text: str, shows: str, timeout: float = 120) -> str:
    """Clear the screen, type `text`, wait for `shows` and then for the next prompt; the screen."""
    shell.clear()
    shell.type(text)
    shell.wait_for(shows, timeout)
    shell.wait_for_prompt(timeout)
    return shell.text


def table_rows(screen: str) -> list[tuple[str, ...]]:
    """The rows of the last result table on the screen, as tuples of cell texts."""
    lines = screen.splitlines()
    rule = max(i for i, line in enumerate(lines) if line.strip().startswith("─"))
    rows = []
    for line in lines[rule + 1 :]:
        if re.match(r"^\d+ rows?\b", line):
            return rows
        rows.append(tuple(line.split()))
    raise AssertionError(f"no row count below the table:\n{screen}")


# ---------------------------------------------------------------- one session, as a new user goes


@pytest.mark.cluster
def test_a_local_query_is_answered_while_spark_starts(tmp_path):
    """The prompt comes at once and a query that runs in this process is answered while Spark's JVM is
    still starting (a Java that takes its time to start); a query that needs Spark says it waits for
    Spark, then answers."""
    java_home = java_home_wrapper(tmp_path / "java", delay=6)
    terminal = Terminal([RECSQL, *OPTIONS], shell_env(tmp_path, JAVA_HOME=str(java_home)))
    try:
        terminal.wait_for_prompt(timeout=30)
        terminal.type("SELECT 41 + 1 AS answer;\n")
        terminal.wait_for(r"answer\s*\n.*\n\s*42\s*\n1 row \(\d+\.\d\d s\)", timeout=30)
        assert java_started(java_home) and not spark_jvm_running(terminal.child.pid)
        terminal.clear()
        terminal.type("SET recsql.spark = always; SELECT 40 + 3 AS answer;\n")
        terminal.wait_for("Starting Spark")
        terminal.wait_for(r"answer\s*\n.*\n\s*43\s*\n1 row", timeout=180)
        assert spark_jvm_running(terminal.child.pid)
        terminal.type("\\q\n")
        assert terminal.exit_status() == 0
    finally:
        terminal.close()


def test_multi_line_recursive_query_and_its_result(shell):
    values = ", ".join(f"({a}, {b})" for a, b in EDGES)
    run(
        shell,
        f"CREATE TABLE edge (src INT, dst INT);\nINSERT INTO edge VALUES {values};\n",
        r"INSERT \(5 rows, \d+\.\d\d s\)",
    )
    screen = run(
        shell,
        "WITH RECURSIVE reach(src, dst) AS (\n"
        "  SELECT src, dst FROM edge\n"
        "  UNION\n"
        "  SELECT reach.src, edge.dst FROM reach JOIN edge ON reach.dst = edge.src)\n"
        "SELECT src, dst FROM reach ORDER BY src, dst;\n",
        r"\d+ rows",
    )
    lines = screen.splitlines()
    assert lines[0] == "recsql> WITH RECURSIVE reach(src, dst) AS ("
    assert [line[:8] for line in lines[1:5]] == ["   ...> "] * 4  # each new line continues the statement
    expected = sorted(transitive_closure(EDGES))
    assert table_rows(screen) == [(str(a), str(b)) for a, b in expected]
    assert re.search(rf"^{len(expected)} rows \(\d+\.\d\d s\)$", screen, re.MULTILINE)


def test_datalog_mode_builds_a_program_and_runs_it_at_output(shell):
    shell.clear()
    shell.type("\\datalog on\n")
    shell.prompt = "datalog>"
    try:
        shell.wait_for("datalog is on")
        shell.wait_for_prompt()
        shell.clear()
        shell.type("tc(X, Y) :- ed")
        shell.type("\t")
        shell.wait_for("tc\\(X, Y\\) :- edge")  # the catalog's tables complete
        shell.type("(X, Y).\n")
        shell.wait_for_prompt()
        shell.type("tc(X, Y) :- tc(X, Z),\n  edge(Z, Y).\n")  # a clause may span lines: it ends with its `.`
        shell.wait_for_prompt()
        shell.type("bad(X) :- edge(X Y).\n")
        shell.wait_for("syntax error at line 1, column 18")  # reported at once, and not kept
        shell.wait_for_prompt()
        screen = run(shell, ".output tc\n", r"\d+ rows")
        assert sorted(table_rows(screen)) == sorted((str(a), str(b)) for a, b in transitive_closure(EDGES))
        shell.clear()
        shell.type("EXPLAIN .output tc\n")
        shell.wait_for(r"\n:\s*$")  # the plan is taller than the screen: the pager shows its first screenful
        assert "== Rules as written ==\n tc(X, Y) :- edge(X, Y).\n tc(X, Y) :- tc(X, Z)," in shell.text
        shell.type("q")
        shell.wait_for_prompt()
    finally:
        shell.clear()
        shell.type("\\datalog off\n")
        shell.prompt = "recsql>"
        shell.wait_for("datalog is off")
        shell.wait_for_prompt()


def test_tab_completes_table_and_column_names(shell):
    shell.clear()
    shell.type("SELECT e.src FROM ed")
    shell.type("\t")
    shell.wait_for("SELECT e.src FROM edge")
    shell.type(" e WHERE e.d")
    shell.type("\t")
    shell.wait_for("FROM edge e WHERE e.dst")
    keyword, name = shell.colours("SELECT"), shell.colours("edge")  # highlighted as SQL
    assert len(keyword) == 1 and keyword != {"default"} and keyword != name
    shell.type(" = 2;\n")
    shell.wait_for(r"2 rows")
    shell.wait_for_prompt()
    assert sorted(table_rows(shell.text)) == [("1",), ("4",)]


def test_describe_lists_tables_and_the_columns_of_one(shell):
    run(
        shell,
        "CREATE VIEW hops AS WITH RECURSIVE h(node, min() AS n) AS (SELECT 1, 0) UNION "
        "(SELECT edge.dst, h.n + 1 FROM h, edge WHERE h.node = edge.src) SELECT * FROM h;\n",
        "CREATE VIEW",
    )
    tables = run(shell, "\\d\n", r"hops\s+view")
    assert re.search(r"edge\s+table\s+\[src, dst\]", tables)
    assert re.search(r"hops\s+view\s+\[node, n\]", tables)
    assert table_rows(run(shell, "\\d edge\n", r"2 rows")) == [("src", "int"), ("dst", "int")]
    assert table_rows(run(shell, "\\d hops\n", r"2 rows")) == [("node", "int"), ("n", "int")]


def test_tab_completes_meta_command_arguments(shell):
    shell.clear()
    shell.type("\\d ed\t")
    shell.wait_for(r"\\d edge")
    shell.type(" \x15\\timing of\t")  # Ctrl-U clears the line
    shell.wait_for(r"recsql> \\timing off")
    shell.type("\n")
    shell.wait_for("timing is off")
    shell.wait_for_prompt()
    run(shell, "\\timing on\n", "timing is on")


def test_load_a_csv_file_and_query_it(shell, tmp_path):
    path = tmp_path / "flights.csv"
    path.write_text("origin,destination,minutes\nAMS,LHR,75\nLHR,JFK,480\nJFK,SFO,390\n")
    screen = run(shell, f"\\load flights {path}\n", r"flights: 3 rows from")
    assert "(origin string, destination string, minutes int)" in " ".join(screen.split())
    screen = run(
        shell,
        "WITH RECURSIVE r(city, min() AS minutes) AS (SELECT 'AMS', 0) UNION "
        "(SELECT f.destination, r.minutes + f.minutes FROM r, flights f WHERE r.city = f.origin)\n"
        "SELECT * FROM r ORDER BY minutes;\n",
        r"4 rows",
    )
    assert table_rows(screen) == [("AMS", "0"), ("LHR", "75"), ("JFK", "555"), ("SFO", "945")]


def test_ctrl_c_cancels_a_running_query_and_the_session_goes_on(shell):
    run(shell, "\\set recsql.max_iterations 100000000\n", "SET")  # the counter runs for minutes
    shell.clear()
    shell.type(LONG_QUERY + "\n")
    progress = shell.wait_for(r"n · iteration (\d+) · \+1 new · ([\d,]+) rows · [\d.]+ s", timeout=60)
    assert int(progress.group(2).replace(",", "")) == int(progress.group(1)) + 1  # 1, 2, ..., i+1
    shell.child.sendintr()
    shell.wait_for(r"\ncancelled", timeout=30)
    shell.wait_for_prompt(timeout=30)
    assert "iteration" not in shell.text  # the progress line is gone
    shell.type("SELECT count(*) AS edges FROM edge;\n")
    shell.wait_for(r"edges\s*\n.*\n\s*5\s*\n1 row", timeout=15)  # answers within seconds


def test_ctrl_c_on_a_line_clears_it(shell):
    shell.clear()
    shell.type("SELECT something I do not want")
    shell.wait_for("do not want")
    shell.child.sendintr()
    shell.wait_for_prompt(timeout=10)
    shell.type("SELECT 'kept' AS word;\n")
    shell.wait_for(r"kept\s*\n1 row")


def test_an_error_points_at_its_place_and_the_session_goes_on(shell):
    screen = run(shell, "SELECT src\nFROM nowhere;\n", "Error")
    assert re.search(r"ProgrammingError: .*nowhere", screen)
    assert "Traceback" not in screen and "py4j" not in screen.lower()
    run(shell, "SELECT 1 AS still_here;\n", r"1 row")


def test_timing_format_and_explain_switches(shell):
    run(shell, "\\timing off\n", "timing is off")
    assert re.search(r"^1 row$", run(shell, "SELECT 7 AS seven;\n", r"1 row"), re.MULTILINE)
    run(shell, "\\timing on\n", "timing is on")
    run(shell, "\\format csv\n", "output format is csv")
    assert "seven\n7\nrecsql>" in run(shell, "SELECT 7 AS seven;\n", r"seven\n7")
    run(shell, "\\format table\n", "output format is table")
    screen = run(shell, "\\explain on\nSELECT src FROM edge WHERE dst = 4;\n", r"1 row")
    assert "== Evaluation ==" in screen and re.search(r"edge\(", screen)
    run(shell, "\\explain off\n", "explain is off")


def test_set_changes_a_setting(shell):
    run(shell, "\\set recsql.max_iterations 3\n", "SET")
    screen = run(shell, LONG_QUERY + "\n", "Error")
    assert "OperationalError" in screen and "3" in screen
    assert "recsql.max_iterations" in run(shell, "\\set\n", r"\d+ rows")
    run(shell, "\\set recsql.max_iterations 100000000\n", "SET")


def test_help_and_unknown_commands(shell):
    screen = run(shell, "\\help\n", r"\\q")
    for command in (
        "\\d [NAME]",
        "\\load NAME PATH",
        "\\i FILE",
        "\\explain [on|off]",
        "\\timing [on|off]",
        "\\set [KEY VALUE]",
        "\\format [table|csv|json]",
    ):
        assert command in screen
    assert "unknown command \\nope" in run(shell, "\\nope\n", "unknown command")


def test_include_runs_a_script(shell, tmp_path):
    script = tmp_path / "two.sql"
    script.write_text("SELECT 'first' AS step;\nSELECT 'second' AS step;\n")
    screen = run(shell, f"\\i {script}\n", r"second")
    assert screen.index("first") < screen.index("second")


def test_a_long_result_is_paged(shell):
    shell.clear()
    shell.type("SELECT id, id * id AS square FROM range(500) ORDER BY id;\n")
    shell.wait_for(r"\n:\s*$")  # less waits for a key below the first screenful
    assert "500 rows" not in shell.text
    shell.type("G")  # to the end
    shell.wait_for(r"499\s+249001\s*\n500 rows")
    shell.type("q")
    shell.wait_for_prompt()


def test_history_is_written(shell, home):
    history = (home / ".recsql_history").read_text()
    assert "+WITH RECURSIVE reach(src, dst) AS (\n+  SELECT src, dst FROM edge\n" in history
    assert "+\\d edge\n" in history


def test_backslash_q_quits(shell):
    shell.clear()
    shell.type("\\q\n")
    assert shell.exit_status() == 0


# ---------------------------------------------------------------- shells that never reach Spark


def test_ctrl_d_quits_even_while_spark_starts(tmp_path):
    terminal = Terminal([RECSQL, *OPTIONS], shell_env(tmp_path))
    try:
        terminal.wait_for_prompt(timeout=30)
        terminal.child.sendeof()
        assert terminal.exit_status() == 0
    finally:
        terminal.close()


def test_missing_java_is_said_plainly(tmp_path):
    """Without Java the shell says so, answers what runs in this process, and says it again for what
    needs Spark."""
    env = shell_env(tmp_path, PATH=str(Path(sys.executable).parent))  # no java on it
    env.pop("JAVA_HOME", None)
    terminal = Terminal([RECSQL, *OPTIONS], env)
    try:
        terminal.wait_for("cannot start Spark: Java not found", timeout=30)
        terminal.wait_for_prompt()
        terminal.type("SELECT 40 + 2 AS answer;\n")
        terminal.wait_for(r"(?s)answer.*42.*1 row")
        terminal.type("SET recsql.spark = always;\n")
        terminal.type("SELECT 1;\n")
        terminal.wait_for(r"(?s)SELECT 1;\n.*Java not found")
        terminal.type("\\q\n")
        assert terminal.exit_status() == 0
    finally:
        terminal.close()


def test_an_unreachable_master_is_said_plainly(tmp_path):
    terminal = Terminal([RECSQL, "--master", "spark://127.0.0.1:9"], shell_env(tmp_path))
    try:
        terminal.wait_for(r"cannot start Spark: the master spark://127\.0\.0\.1:9 cannot be reached", timeout=30)
        terminal.type("\\q\n")
        assert terminal.exit_status() == 0
    finally:
        terminal.close()


# ---------------------------------------------------------------- scripts: the same rendering, no progress


def test_script_progress_only_on_a_terminal(tmp_path):
    script = tmp_path / "count.sql"
    script.write_text(
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION SELECT x + 1 FROM n WHERE x < 30)\nSELECT count(*) AS n FROM n;\n"
    )
    done = subprocess.run(
        [RECSQL, "run", str(script), *OPTIONS], capture_output=True, text=True, timeout=300, env=shell_env(tmp_path)
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert re.search(r"^\s*30\s*$", done.stdout, re.MULTILINE) and "iteration" not in done.stdout


def test_script_on_a_terminal_shows_progress_and_stops_at_ctrl_c(tmp_path):
    script = tmp_path / "long.sql"
    script.write_text(
        f"SELECT 'before' AS step;\nSET recsql.max_iterations = 100000000;\n{LONG_QUERY}\nSELECT 'after' AS step;\n"
    )
    terminal = Terminal([RECSQL, "run", str(script), *OPTIONS], shell_env(tmp_path))
    try:
        terminal.wait_for(r"before(.|\n)*n · iteration \d+", timeout=120)
        terminal.child.sendintr()
        assert terminal.exit_status() == 130
        assert "cancelled" in terminal.text and "after" not in terminal.text and "iteration" not in terminal.text
    finally:
        terminal.close()


def test_piped_input_runs_as_a_script(tmp_path):
    done = subprocess.run(
        [RECSQL, *OPTIONS, "--format", "csv"],
        input="SELECT 1 AS a;\nSELECT 2 AS b;\n",
        capture_output=True,
        text=True,
        timeout=300,
        env=shell_env(tmp_path),
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "a\n1\nb\n2\n", "")
