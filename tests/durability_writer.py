"""A writer process for tests/test_durability.py.

    python tests/durability_writer.py MODE WAREHOUSE MASTER

The process connects to recsql on WAREHOUSE, prints `@@ ready` and reads one command (a JSON line) from
standard input; every line it prints for the test starts with `@@` (Spark may print lines of its own).

* `insert-select`: command {"table": NAME}. Creates table NAME (a BIGINT, b STRING) with OLD_ROWS rows
  and prints `@@ prepared`; then runs `INSERT INTO NAME SELECT ... FROM range(ROWS)` in a loop, printing
  `@@ start N` before and `@@ done N` after each statement, until it is killed.
* `executemany`: command {"prepare": bool, "first": B}. With prepare, creates `m (a BIGINT, b STRING)`;
  then inserts batch B, B + 1, ... in a loop (BATCH rows each, one executemany each; a row of batch b has
  a = b * 1,000,000 + i), printing `@@ start B` and `@@ done B` around each, until it is killed.
* `script`: each command is {"at": UNIX_TIME, "statements": [[SQL, ROWS_OR_NULL], ...]} (or {"quit": true}):
  waits until the given time (two processes given the same time race), runs the statements in order
  (executemany when ROWS is a list), and prints `@@ result JSON`, one outcome per statement:
  {"ok": true, "rows": fetched rows or null} or {"ok": false, "error": class name, "message": text, "recsql":
  bool}, with "began" (seconds after the given time) and "took" (seconds).
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's recsql, wherever run from

import recsql

CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}
OLD_ROWS = 1_000  # a table's rows before the INSERT ... SELECT loop: a = 10,000,000 + i
ROWS = 3_000_000  # rows of one INSERT ... SELECT: a = id for id in range(ROWS)
BATCH = 50_000  # rows of one executemany


def say(*words: object) -> None:
    print("@@", *words, flush=True)


def command() -> dict:
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)  # the test went away
    return json.loads(line)


def wait_until(moment: float) -> None:
    """Sleep until `moment`, the last few milliseconds spinning: two processes leave within a millisecond."""
    while (left := moment - time.time()) > 0.005:
        time.sleep(left - 0.004)
    while time.time() < moment:
        pass


def old_rows() -> list[tuple[int, str]]:
    return [(10_000_000 + i, f"old {i}") for i in range(OLD_ROWS)]


def batch_rows(batch: int) -> list[tuple[int, str]]:
    return [(batch * 1_000_000 + i, f"{batch}:{i}") for i in range(BATCH)]


def insert_select(cursor) -> None:
    table = command()["table"]
    cursor.execute(f"CREATE TABLE {table} (a BIGINT, b STRING)")
    cursor.executemany(f"INSERT INTO {table} VALUES (?, ?)", old_rows())
    say("prepared")
    statement = f"INSERT INTO {table} SELECT id, cast(id AS STRING) FROM range({ROWS})"
    for number in itertools.count():
        say("start", number)
        cursor.execute(statement)
        say("done", number, cursor.rowcount)


def executemany(cursor) -> None:
    order = command()
    if order.get("prepare"):
        cursor.execute("CREATE TABLE m (a BIGINT, b STRING)")
        say("prepared")
    for batch in itertools.count(order.get("first", 0)):
        rows = batch_rows(batch)
        say("start", batch)
        cursor.executemany("INSERT INTO m VALUES (?, ?)", rows)
        say("done", batch, cursor.rowcount)


def script(cursor) -> None:
    while not (order := command()).get("quit"):
        wait_until(order["at"])
        outcomes = []
        for sql, rows in order["statements"]:
            began = time.time()
            try:
                if rows is None:
                    cursor.execute(sql)
                else:
                    cursor.executemany(sql, rows)
                fetched = [list(row) for row in cursor.fetchall()] if cursor.description else None
                outcome = {"ok": True, "rows": fetched}
            except Exception as error:
                outcome = {
                    "ok": False,
                    "error": type(error).__name__,
                    "message": str(error),
                    "recsql": isinstance(error, recsql.Error),
                }
            outcomes.append({**outcome, "began": round(began - order["at"], 4), "took": round(time.time() - began, 4)})
        say("result", json.dumps(outcomes))


def main() -> None:
    mode, warehouse, master = sys.argv[1:4]
    connection = recsql.connect(warehouse=warehouse, master=master, conf=CONF)
    cursor = connection.cursor()
    cursor.execute("SELECT 1").fetchall()  # the session is up: what follows runs at once
    say("ready")
    {"insert-select": insert_select, "executemany": executemany, "script": script}[mode](cursor)


if __name__ == "__main__":
    main()
