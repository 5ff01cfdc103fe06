"""recsql in a notebook executed by nbclient on a real ipykernel: JupySQL's %sql over the `recsql` SQLAlchemy
dialect, a cursor shown as an HTML table, the progress display of a recursion (closed when the statement
ends), and a kernel interrupt cancelling a statement's Spark jobs (the kernel's connection keeps working).
The kernel runs a Spark driver of its own."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from reference import transitive_closure

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parent.parent
EDGES = [(1, 2), (2, 3), (3, 4), (4, 5), (5, 1), (6, 7)]
CLOSURE = """WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM edges
UNION SELECT tc.src, e.dst FROM tc JOIN edges e ON tc.dst = e.src) SELECT src, dst FROM tc ORDER BY src, dst"""
# a fixpoint of many short Spark jobs: running when the interrupt comes
LONG = "WITH RECURSIVE n(i) AS (SELECT 0 UNION SELECT i + 1 FROM n WHERE i < 100000) SELECT count(*) FROM n"
INTERRUPT_AFTER = 6.0  # seconds into the long statement's cell


def notebook(warehouse: Path) -> nbformat.NotebookNode:
    values = ", ".join(f"({a}, {b})" for a, b in EDGES)
    url = f"recsql:///{warehouse}?recsql.spark_start=on_demand"
    cells = [
        f"""import sys, json
sys.path.insert(0, {str(ROOT)!r})
import recsql
conn = recsql.connect(master="local[2]", warehouse={str(warehouse)!r}, conf={{
    "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g"}})
cur = conn.cursor()
cur.execute("CREATE TABLE edges (src BIGINT, dst BIGINT)")
cur.execute("INSERT INTO edges VALUES {values}")""",
        f"%load_ext sql\n%config SqlMagic.displaylimit = None\n%sql {url}",
        f"%%sql\n{CLOSURE}",
        "cur.execute('SET recsql.strategy = distributed')\ncur.execute('''" + CLOSURE + "''')",
        "cur",
        "cur.execute('''" + LONG + "''')",
        """import time
time.sleep(2)
print(json.dumps(conn.spark_session.sparkContext.statusTracker().getActiveJobsIds()))
cur.execute('SELECT count(*) FROM edges')
print(json.dumps(cur.fetchall()))""",
    ]
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook after running it, the long statement's cell interrupted."""
    directory = tmp_path_factory.mktemp("notebook")
    book = notebook(directory / "warehouse")
    client = NotebookClient(
        book, timeout=300, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(directory)}}
    )
    long_cell = 5

    def interrupt_later(cell, cell_index, **_):
        if cell_index == long_cell:
            pid = client.km.provisioner.pid
            threading.Timer(INTERRUPT_AFTER, os.kill, (pid, signal.SIGINT)).start()

    client.on_cell_execute = interrupt_later
    client.execute()
    return book


def text_of(cell) -> str:
    parts = []
    for output in cell.outputs:
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type in ("display_data", "execute_result"):
            parts.append(output.data.get("text/html", "") + output.data.get("text/plain", ""))
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}")
    return "\n".join(parts)


def test_the_setup_runs_without_errors(executed):
    for cell in executed.cells[:2]:
        assert not [output for output in cell.outputs if output.output_type == "error"], text_of(cell)


def test_jupysql_answers_through_the_dialect(executed):
    shown = text_of(executed.cells[2])
    cells = re.findall(r"<td>(\d+)</td>\s*<td>(\d+)</td>", shown)
    assert {(int(a), int(b)) for a, b in cells} == transitive_closure(EDGES), shown


def test_a_recursion_shows_its_progress_until_it_ends(executed):
    displays = [output for output in executed.cells[3].outputs if output.output_type == "display_data"]
    assert len(displays) == 1, executed.cells[3].outputs
    text = displays[0].data["text/plain"]
    assert re.match(r"tc · iteration \d+ · \+0 new · 26 rows · [\d.]+ s · done", text), text
    assert "<progress" not in displays[0].data["text/html"]  # the bar closed with the statement


def test_a_cursor_shows_its_answer_as_a_table(executed):
    (result,) = [output for output in executed.cells[4].outputs if output.output_type == "execute_result"]
    shown = result.data["text/html"]
    assert "<th>src<br><small>bigint</small></th>" in shown and "26 rows" in shown
    cells = re.findall(r"<td>(\d+)</td><td>(\d+)</td>", shown)
    assert {(int(a), int(b)) for a, b in cells} == transitive_closure(EDGES)


def test_a_kernel_interrupt_cancels_the_statement(executed):
    errors = [output for output in executed.cells[5].outputs if output.output_type == "error"]
    assert [(error.ename, error.evalue) for error in errors] == [("QueryCancelled", "query cancelled")]
    active, counted = [json.loads(line) for line in text_of(executed.cells[6]).split()]
    assert active == []  # no job of the statement runs on
    assert counted == [[len(EDGES)]]
