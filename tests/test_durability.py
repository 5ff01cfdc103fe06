"""Durability of the stored tables: a statement completes or changes nothing, and a crash loses nothing.

* A process killed with SIGKILL (its Python and its Spark JVM at once, a real crash) at a random moment of
  an INSERT ... SELECT or an executemany loses no committed statement, keeps no part of the statement it
  was killed in, and leaves every table readable and writable by the next process.
* Two processes inserting into one table at the same time lose nothing; two processes creating or dropping
  one name at the same time: one succeeds, the other gets a ProgrammingError, never a half-made table.
* A statement that fails at run time (`assert_true`) leaves its table as it was, with a clean error.

The writer processes run tests/durability_writer.py. Each starts a Spark JVM of its own (several seconds),
so the kill tests start the next writers while the current one runs: they are up when their turn comes.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Self

import durability_writer as writer
import pyarrow as pa
import pytest
from conftest import TEST_CONF

import recsql

ROOT = Path(__file__).resolve().parent.parent
WRITER = Path(__file__).resolve().parent / "durability_writer.py"
KILL_TRIALS = 10
TIMEOUT = 240  # seconds for a writer to start or to run a statement: generous, a busy machine is slow
PAST = 1.25  # kills fall uniformly in [0, PAST x the measured duration of a statement] after its start
AHEAD = 2  # writers started ahead of their turn: a writer takes longer to start than a trial to run
# The writers' JVMs compile less and collect garbage on one thread: they start with about half the CPU
# time (this file starts two dozen of them), and a cold statement costs less too.
WRITER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


# ------------------------------------------------------------------ writer processes


class Writer:
    """A tests/durability_writer.py process in a process group of its own: its Python and its JVM die
    together. Its `@@` lines are collected, with the moment each arrived, by a thread."""

    def __init__(self, mode: str, warehouse: Path, log: Path, master: str):
        self.log_path = log
        self.log = open(log, "w")  # noqa: SIM115 - open while the writer runs; close() closes it
        java_options = f"{os.environ.get('JAVA_TOOL_OPTIONS', '')} {WRITER_JAVA_OPTIONS}".strip()
        self.process = subprocess.Popen(
            [sys.executable, str(WRITER), mode, str(warehouse), master],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            cwd=ROOT,
            start_new_session=True,
            env={**os.environ, "JAVA_TOOL_OPTIONS": java_options},
        )
        self.lines: queue.Queue[tuple[float, list[str] | None]] = queue.Queue()
        self.seen: list[list[str]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            if line.startswith("@@ "):
                text = line[3:].rstrip("\n")
                words = text.split(" ", 1) if text.startswith("result ") else text.split()
                self.seen.append(words)
                self.lines.put((time.monotonic(), words))
        self.lines.put((time.monotonic(), None))

    def expect(self, word: str, timeout: float = TIMEOUT) -> tuple[float, list[str]]:
        """The next `@@ word ...` line: when it arrived and its other words."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                moment, words = self.lines.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                raise AssertionError(f"no '{word}' from the writer in {timeout} s{self.tail()}") from None
            if words is None:
                self.lines.put((moment, None))
                raise AssertionError(f"the writer ended (exit {self.process.wait()}) before '{word}'{self.tail()}")
            if words[0] == word:
                return moment, words[1:]

    def send(self, order: dict) -> None:
        self.process.stdin.write(json.dumps(order) + "\n")
        self.process.stdin.flush()

    def result(self) -> list[dict]:
        return json.loads(self.expect("result")[1][0])

    def kill(self) -> None:
        """SIGKILL to the whole group (Python, the JVM, anything they started); the lines the writer
        printed before it died are all read afterwards."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)
        self.reader.join(timeout=60)

    def count(self, word: str) -> int:
        return sum(1 for words in self.seen if words[0] == word)

    def tail(self) -> str:
        self.log.flush()
        lines = self.log_path.read_text(errors="replace").splitlines()
        return "\nwriter's stderr, last lines:\n" + "\n".join(lines[-25:])

    def close(self) -> None:
        try:
            self.kill()
        finally:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
            self.log.close()


class Writers:
    """Starts writer processes; leaving the block kills every one still running."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.started: list[Writer] = []

    def start(self, mode: str, warehouse: Path, master: str = "local[2]") -> Writer:
        log = self.directory / f"writer-{len(self.started)}.log"
        self.started.append(Writer(mode, warehouse, log, master))
        return self.started[-1]

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        for started in self.started:
            with contextlib.suppress(Exception):
                started.close()


@contextlib.contextmanager
def reader(warehouse: Path):
    """A cursor of this process on `warehouse` (the session's Spark; a new catalog, nothing cached)."""
    connection = recsql.connect(warehouse=str(warehouse), master="local[2]", conf=TEST_CONF)
    try:
        yield connection.cursor()
    finally:
        connection.close()


def rows_of(cursor, sql: str) -> list[tuple]:
    cursor.execute(sql)
    return cursor.fetchall()


def digits(n: int) -> int:
    """sum(len(str(i)) for i in range(n)), without the loop."""
    total, width, low = 0, 1, 0
    while low < n:
        high = min(n, 10**width)
        total += (high - low) * width
        low, width = high, width + 1
    return total


def kill_trials(writers: Writers, mode: str, warehouse: Path, rng: random.Random, order, check, shared: bool):
    """KILL_TRIALS writers in turn, each killed at a random moment of a statement. `order(trial, held)` is
    the command a writer gets; `check(trial)` gives how many statements its table holds (and asserts each is
    whole); with `shared`, the writers write one table in turn, otherwise each its own (made by the writer).
    The first writer's first statement runs to its end: its duration (a cold JVM: a writer's slowest
    statement) sets the range of the kill moments. The table must hold at least the statements whose end a
    writer announced and at most those it started. Gives (delay, statements kept) for each trial."""
    held = 0  # statements the table holds
    bound = None
    outcomes = []
    upcoming = collections.deque([writers.start(mode, warehouse)])
    for trial in range(KILL_TRIALS):
        current = upcoming.popleft()
        current.expect("ready")
        # the next writers start now: the statement measured in trial 0 runs beside starting JVMs, as the
        # statements killed later do (a bound measured on an idle machine would fall short of them)
        while len(upcoming) < AHEAD and trial + 1 + len(upcoming) < KILL_TRIALS:
            upcoming.append(writers.start(mode, warehouse))
        current.send(order(trial, held))
        if bound is None:
            began, _ = current.expect("start")
            ended, _ = current.expect("done")
            bound = PAST * (ended - began)
        began, _ = current.expect("start")
        delay = rng.uniform(0, bound)
        time.sleep(max(began + delay - time.monotonic(), 0))
        current.kill()
        assert current.process.returncode == -signal.SIGKILL, (
            f"trial {trial}: the writer ended by itself (exit {current.process.returncode}){current.tail()}"
        )
        started, done = current.count("start"), current.count("done")
        where = f"trial {trial}, killed {delay:.3f} s into a statement (of about {bound / PAST:.3f} s)"
        try:
            now = check(trial)
        except AssertionError as error:
            raise AssertionError(f"{where}: {error}") from None
        except Exception as error:  # an unreadable table is the failure to report
            raise AssertionError(f"{where}: the table cannot be read: {type(error).__name__}: {error}") from error
        before = held if shared else 0
        assert before + done <= now <= before + started, (
            f"{where}: the table held {before} statements, the writer started {started} and announced the end "
            f"of {done}, and now the table holds {now}"
        )
        outcomes.append((round(delay, 3), now - before))
        held = now
    print(f"{mode}: a statement takes about {bound / PAST:.3f} s; kills (delay, statements kept): {outcomes}")
    return outcomes


# ------------------------------------------------------------------ kills


OLD_COUNT = writer.OLD_ROWS
OLD_SUM = sum(a for a, _ in writer.old_rows())
OLD_LENGTHS = sum(len(b) for _, b in writer.old_rows())
NEW_SUM = writer.ROWS * (writer.ROWS - 1) // 2
NEW_LENGTHS = digits(writer.ROWS)


def insert_selects_held(warehouse: Path, table: str) -> int:
    """How many INSERT ... SELECT statements `table` holds, each whole, beside its old rows."""
    with reader(warehouse) as cursor:
        [found] = rows_of(cursor, f"SELECT count(*), sum(a), sum(length(b)) FROM {table}")
        statements, rest = divmod(found[0] - OLD_COUNT, writer.ROWS)
        expected = (
            OLD_COUNT + statements * writer.ROWS,
            OLD_SUM + statements * NEW_SUM,
            OLD_LENGTHS + statements * NEW_LENGTHS,
        )
        assert rest == 0 and statements >= 0 and found == expected, (
            f"{table} holds (count, sum(a), sum(length(b))) = {found}: not its {OLD_COUNT} old rows plus whole "
            f"statements of {writer.ROWS} rows"
        )
        old = rows_of(cursor, f"SELECT count(*) FROM {table} WHERE a >= 10000000 AND b LIKE 'old %'")
        assert old == [(OLD_COUNT,)], f"{table}'s old rows: {old}"
    return statements


@pytest.mark.cluster
def test_kill_during_insert_select_loses_nothing(tmp_path):
    """Ten writers, one after the other on one warehouse, each make a table k<trial> with 1,000 rows and
    loop `INSERT INTO k<trial> SELECT ... FROM range(3,000,000)`; each is killed at a random moment of a
    statement. Then the table holds its old rows plus whole statements only, every statement whose end
    was announced, and every column reads back; at the end, each table takes an INSERT."""
    rng = random.Random(20_240_611)
    warehouse = tmp_path / "warehouse"
    with Writers(tmp_path) as writers:
        outcomes = kill_trials(
            writers,
            "insert-select",
            warehouse,
            rng,
            lambda trial, held: {"table": f"k{trial}"},
            lambda trial: insert_selects_held(warehouse, f"k{trial}"),
            shared=False,
        )
    assert len(outcomes) == KILL_TRIALS
    with reader(warehouse) as cursor:
        for trial, (_, statements) in enumerate(outcomes):
            cursor.execute(f"INSERT INTO k{trial} VALUES (-1, 'after')")
            assert rows_of(cursor, f"SELECT count(*), min(a) FROM k{trial}") == [
                (OLD_COUNT + statements * writer.ROWS + 1, -1)
            ]


def batches_held(warehouse: Path) -> int:
    """How many executemany batches table m holds: they must be batches 0 .. n - 1, each whole."""
    per_batch = writer.BATCH
    with reader(warehouse) as cursor:
        found = rows_of(
            cursor,
            "SELECT cast(floor(a / 1000000) AS BIGINT) AS batch, count(*), sum(a), min(a), "
            "max(a), sum(length(b)) FROM m GROUP BY cast(floor(a / 1000000) AS BIGINT) "
            "ORDER BY batch",
        )
    expected = [
        (
            batch,
            per_batch,
            batch * 1_000_000 * per_batch + per_batch * (per_batch - 1) // 2,
            batch * 1_000_000,
            batch * 1_000_000 + per_batch - 1,
            per_batch * (len(str(batch)) + 1) + digits(per_batch),
        )
        for batch in range(len(found))
    ]
    assert found == expected, (
        "m must hold whole batches 0 .. n - 1 and nothing else: (batch, rows, sum, min, "
        f"max, lengths) are\n{found}\nnot\n{expected}"
    )
    return len(found)


@pytest.mark.cluster
def test_kill_during_executemany_keeps_whole_batches(tmp_path):
    """A writer loops `executemany("INSERT INTO m VALUES (?, ?)", batch)` over batches of 50,000 rows; it is
    killed at a random moment of a batch, ten times. m holds exactly batches 0 .. j - 1 for some j; at the
    end it takes one more batch."""
    rng = random.Random(20_240_612)
    warehouse = tmp_path / "warehouse"
    with Writers(tmp_path) as writers:
        outcomes = kill_trials(
            writers,
            "executemany",
            warehouse,
            rng,
            lambda trial, held: {"prepare": trial == 0, "first": held},
            lambda trial: batches_held(warehouse),
            shared=True,
        )
    batches = batches_held(warehouse)
    assert batches == sum(added for _, added in outcomes)
    with reader(warehouse) as cursor:
        cursor.executemany("INSERT INTO m VALUES (?, ?)", writer.batch_rows(batches))
    assert batches_held(warehouse) == batches + 1


# ------------------------------------------------------------------ concurrent writers


def race(pair: list[Writer], statements: list[list[list]]) -> list[list[dict]]:
    """Each writer starts its list of statements ([SQL, rows or None]) at the same moment as the others;
    their outcomes, writer by writer."""
    moment = time.time() + 0.5
    for each, its in zip(pair, statements, strict=True):
        each.send({"at": moment, "statements": its})
    return [each.result() for each in pair]


@pytest.mark.cluster
def test_concurrent_inserts_lose_nothing(tmp_path):
    """Two processes, each 20 executemany statements of 1,000 rows into one table, at the same time."""
    warehouse = tmp_path / "warehouse"
    with reader(warehouse) as cursor:
        cursor.execute("CREATE TABLE c (a BIGINT, w INT)")
    with Writers(tmp_path) as writers:
        pair = [writers.start("script", warehouse) for _ in range(2)]
        for each in pair:
            each.expect("ready")
        results = race(
            pair,
            [
                [
                    [
                        "INSERT INTO c VALUES (?, ?)",
                        [[number * 1_000_000 + statement * 1_000 + i, number] for i in range(1_000)],
                    ]
                    for statement in range(20)
                ]
                for number in range(2)
            ],
        )
    failed = [outcome for result in results for outcome in result if not outcome["ok"]]
    assert not failed, f"inserts failed: {failed[:3]}"
    expected_sum = sum(number * 1_000_000 + i for number in range(2) for i in range(20_000))
    with reader(warehouse) as cursor:
        assert rows_of(cursor, "SELECT count(*), count(DISTINCT a), sum(a) FROM c") == [(40_000, 40_000, expected_sum)]
        assert rows_of(cursor, "SELECT w, count(*), min(a), max(a) FROM c GROUP BY w ORDER BY w") == [
            (0, 20_000, 0, 19_999),
            (1, 20_000, 1_000_000, 1_019_999),
        ]


def only_one_succeeds(outcomes: list[dict], words: str, where: str) -> None:
    """One outcome is a success, the other a recsql.ProgrammingError whose message holds `words`."""
    assert sorted(outcome["ok"] for outcome in outcomes) == [False, True], f"{where}: not one success: {outcomes}"
    [failure] = [outcome for outcome in outcomes if not outcome["ok"]]
    assert failure["recsql"] and failure["error"] == "ProgrammingError" and words in failure["message"], (
        f"{where}: {failure}"
    )


@pytest.mark.cluster
def test_concurrent_create_and_drop_of_one_name(tmp_path):
    """Two processes run `CREATE TABLE same (a INT)` then `INSERT INTO same VALUES (1)` at the same moment,
    then `DROP TABLE same` at the same moment, five times. One CREATE succeeds and the other says the
    table already exists (its INSERT then goes into the winner's table); one DROP succeeds and the other
    says the table is not found. In between, `same` is a whole table, and afterwards it is gone."""
    warehouse = tmp_path / "warehouse"
    with Writers(tmp_path) as writers:
        pair = [writers.start("script", warehouse, "local[1]") for _ in range(2)]
        for each in pair:
            each.expect("ready")
        for round_ in range(5):
            created = race(
                pair,
                2
                * [
                    [
                        ["CREATE TABLE same (a INT)", None],
                        ["INSERT INTO same VALUES (1)", None],
                        ["SELECT count(*) FROM same", None],
                    ]
                ],
            )
            only_one_succeeds([result[0] for result in created], "already exists", f"round {round_}, CREATE TABLE")
            assert all(result[1]["ok"] and result[2]["ok"] for result in created), f"round {round_}: {created}"
            with reader(warehouse) as cursor:
                assert rows_of(cursor, "SELECT a FROM same") == [(1,), (1,)], f"round {round_}"
                assert [row[0] for row in rows_of(cursor, "SHOW TABLES")] == ["same"]
            dropped = race(pair, 2 * [[["DROP TABLE same", None]]])
            only_one_succeeds([result[0] for result in dropped], "not found", f"round {round_}, DROP TABLE")
            with reader(warehouse) as cursor:
                with pytest.raises(recsql.ProgrammingError):
                    cursor.execute("SELECT a FROM same")
                assert rows_of(cursor, "SHOW TABLES") == [], f"round {round_}"
        for each in pair:
            each.send({"quit": True})


# ------------------------------------------------------------------ failing statements (this process)


JVM_WORDS = re.compile(
    r"\b(java|javax|scala|org\.apache|py4j)\.|py4j|\w+Exception\b|An error occurred while calling", re.IGNORECASE
)


def assert_clean_error(error: recsql.Error, warehouse: Path) -> None:
    """The message of a failed statement: no JVM class names, no Py4J, no path into the warehouse."""
    message = str(error)
    assert not JVM_WORDS.search(message), message
    for path in {str(warehouse), str(Path(warehouse).resolve())}:
        assert path not in message, message


def filled(cur, name: str) -> list[tuple]:
    cur.execute(f"DROP TABLE IF EXISTS {name}")
    cur.execute(f"CREATE TABLE {name} (a BIGINT, b STRING)")
    rows = [(i, f"row {i}") for i in range(1_000)]
    cur.executemany(f"INSERT INTO {name} VALUES (?, ?)", rows)
    return rows


def table_rows(cur, name: str) -> list[tuple]:
    cur.execute(f"SELECT * FROM {name} ORDER BY a, b")
    return cur.fetchall()


@pytest.mark.spark
def test_failing_insert_select_changes_nothing(cur, warehouse):
    """An INSERT ... SELECT that fails in one of its Spark tasks (the other writes its rows) adds nothing;
    the table then takes an INSERT and a CREATE OR REPLACE."""
    rows = filled(cur, "dur_insert")
    with pytest.raises(recsql.Error) as failure:
        cur.execute(
            "INSERT INTO dur_insert SELECT id, coalesce(cast(assert_true(id < 5) AS STRING), "
            "cast(id AS STRING)) FROM range(10)"
        )
    assert_clean_error(failure.value, warehouse)
    assert table_rows(cur, "dur_insert") == rows
    cur.execute("INSERT INTO dur_insert SELECT id + 1000, cast(id AS STRING) FROM range(10)")
    assert cur.rowcount == 10
    assert table_rows(cur, "dur_insert") == rows + [(1000 + i, str(i)) for i in range(10)]
    cur.execute("CREATE OR REPLACE TABLE dur_insert AS SELECT id AS a, cast(id AS STRING) AS b FROM range(3)")
    assert table_rows(cur, "dur_insert") == [(0, "0"), (1, "1"), (2, "2")]


@pytest.mark.spark
def test_failing_create_or_replace_changes_nothing(cur, warehouse):
    """A CREATE OR REPLACE ... AS SELECT from the table itself that fails at run time leaves the table, its
    rows and its columns as they were."""
    rows = filled(cur, "dur_replace")
    with pytest.raises(recsql.Error) as failure:
        cur.execute("CREATE OR REPLACE TABLE dur_replace AS SELECT a, assert_true(a < 10) AS c FROM dur_replace")
    assert_clean_error(failure.value, warehouse)
    assert table_rows(cur, "dur_replace") == rows
    assert rows_of(cur, "DESCRIBE dur_replace") == [("a", "bigint"), ("b", "string")]
    cur.execute("INSERT INTO dur_replace VALUES (1000, 'row 1000')")
    assert table_rows(cur, "dur_replace") == rows + [(1000, "row 1000")]
    cur.execute("CREATE OR REPLACE TABLE dur_replace AS SELECT id AS x FROM range(4)")
    assert rows_of(cur, "SELECT x FROM dur_replace ORDER BY x") == [(0,), (1,), (2,), (3,)]


def test_self_referencing_create_or_replace(cur):
    """CREATE OR REPLACE TABLE t AS SELECT ... FROM t reads the old table and writes the new one."""
    rows = filled(cur, "dur_self")
    cur.execute("CREATE OR REPLACE TABLE dur_self AS SELECT a, b FROM dur_self WHERE a < 500")
    assert table_rows(cur, "dur_self") == rows[:500]
    cur.execute("CREATE OR REPLACE TABLE dur_self AS SELECT a * 2 AS a, b FROM dur_self WHERE a < 10")
    assert table_rows(cur, "dur_self") == [(2 * a, b) for a, b in rows[:10]]


@pytest.mark.spark
def test_a_change_computed_from_an_outdated_version_is_refused(conn, warehouse):
    """Two statements that rewrite the same file: the one whose snapshot is older fails and changes
    nothing; an insert made meanwhile does not conflict with a rewrite (its rows are kept)."""
    other = recsql.connect(master="local[2]", conf=TEST_CONF, warehouse=str(warehouse)).cursor()
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS dur_conflict")
    cur.execute("CREATE TABLE dur_conflict (x INT)")
    cur.execute("INSERT INTO dur_conflict VALUES (1), (2), (3)")
    catalog = conn.session.catalog
    kept = pa.table({"x": pa.array([2, 3], pa.int32())})
    with catalog.statement():
        snapshot = catalog.snapshot("dur_conflict")
        other.execute("DELETE FROM dur_conflict WHERE x = 3")  # rewrites the file the snapshot holds
        with pytest.raises(recsql.OperationalError, match="'dur_conflict' was changed by another statement"):
            catalog.rewrite("dur_conflict", snapshot, snapshot.files, [kept], "DELETE", "DELETE ... x = 1")
    cur.execute("SELECT x FROM dur_conflict ORDER BY x")
    assert cur.fetchall() == [(1,), (2,)]
    with catalog.statement():
        snapshot = catalog.snapshot("dur_conflict")
        other.execute("INSERT INTO dur_conflict VALUES (9)")
        catalog.rewrite("dur_conflict", snapshot, snapshot.files, [kept.slice(0, 1)], "DELETE", "DELETE ... x = 1")
    cur.execute("SELECT x FROM dur_conflict ORDER BY x")
    assert cur.fetchall() == [(2,), (9,)]
