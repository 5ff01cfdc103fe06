"""The table storage, measured through recsql's public API only, so that one file runs unchanged against
each implementation of the storage (Parquet directories with JSON catalog files; Delta Lake tables with a
transaction log) and their times can be set side by side.

    python -m benchmarks.storage [--repeat 3] [--scan-rows 10000000] [--json FILE] [--warehouse-root DIR]
    python -m benchmarks.storage --compare OLD.json NEW.json

Workloads, each the median of `--repeat` runs, each run on a fresh table (dropped and created untimed) in
one fresh warehouse directory for the whole benchmark (made under `--warehouse-root`, removed at the end):

  executemany                   cursor.executemany of 100,000 (INT, STRING) rows into an empty table
  single inserts + count        1,000 separate INSERT statements of one row, then SELECT count(*); the
                                two parts are also reported on their own (each its own median)
  scan from Spark               Catalog.dataframe(name) of a --scan-rows table, sum and count on Spark
  scan from the local evaluator Catalog.arrow_table(name) of that table (the local size gate raised so
                                that it reads it), a sum with pyarrow.compute

The scans time the catalog call as well as the read: finding a table's files (a directory listing, a
transaction log) is part of what a storage costs a query. Every answer is checked. `--compare` prints a
markdown table of two `--json` outputs: workload, old and new medians, new/old.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import recsql
from benchmarks.timing import compare_medians, recsql_commit, report, save_medians

EXECUTEMANY_ROWS = 100_000
SINGLE_INSERTS = 1_000
MASTER = "local[2]"
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"}
INSERT = "INSERT INTO t VALUES (?, ?)"
LOCAL_GATE = 1 << 40  # bytes: above any table here, so that arrow_table() reads the scan table

EXECUTEMANY = "executemany"
SINGLE = "single inserts + count"
SINGLE_INSERTS_PART = "single inserts + count: inserts"
SINGLE_COUNT_PART = "single inserts + count: count"
SCAN_SPARK = "scan from Spark"
SCAN_LOCAL = "scan from the local evaluator"

T = TypeVar("T")
Run = Callable[[recsql.Connection], dict[str, float]]  # one run of a workload: seconds of each timed part


class BenchmarkError(Exception):
    """A workload that cannot run on this implementation, or gave a wrong answer."""


def timed(run: Callable[[], T]) -> tuple[float, T]:
    started = time.perf_counter()
    result = run()
    return time.perf_counter() - started, result


def settle(conn: recsql.Connection) -> None:
    """Collect the garbage of this process and of Spark's JVM, so that no run pays for an earlier one's."""
    gc.collect()
    conn.spark_session.sparkContext._jvm.System.gc()


def fresh_table(conn: recsql.Connection, name: str, definition: str) -> recsql.Cursor:
    """Table `name` made anew from `definition` (a column list or AS SELECT), untimed; a cursor for the run."""
    cursor = conn.cursor()
    cursor.execute(f"DROP TABLE IF EXISTS {name}")
    cursor.execute(f"CREATE TABLE {name} {definition}")
    settle(conn)
    return cursor


def check(what: str, got: Any, expected: Any) -> None:
    if got != expected:
        raise BenchmarkError(f"{what} gave {got!r}, expected {expected!r}")


def count_of(cursor: recsql.Cursor, table: str) -> int:
    cursor.execute(f"SELECT count(*) FROM {table}")
    return cursor.fetchall()[0][0]


def executemany(conn: recsql.Connection) -> dict[str, float]:
    cursor = fresh_table(conn, "t", "(a INT, b STRING)")
    rows = [(i, f"v{i}") for i in range(EXECUTEMANY_ROWS)]
    seconds, _ = timed(lambda: cursor.executemany(INSERT, rows))
    check("count(*) after executemany", count_of(cursor, "t"), EXECUTEMANY_ROWS)
    return {EXECUTEMANY: seconds}


def single_inserts_and_count(conn: recsql.Connection) -> dict[str, float]:
    cursor = fresh_table(conn, "t", "(a INT, b STRING)")

    def insert() -> None:
        for i in range(SINGLE_INSERTS):
            cursor.execute(INSERT, (i, f"v{i}"))

    inserting, _ = timed(insert)
    counting, count = timed(lambda: count_of(cursor, "t"))
    check("count(*) after the single inserts", count, SINGLE_INSERTS)
    return {SINGLE: inserting + counting, SINGLE_INSERTS_PART: inserting, SINGLE_COUNT_PART: counting}


def scan_table(conn: recsql.Connection, rows: int) -> Any:
    """A fresh table `s` of `rows` rows (a BIGINT, b BIGINT), and the catalog that reads it."""
    fresh_table(conn, "s", f"AS SELECT id AS a, id % 1000 AS b FROM range({rows})")
    try:
        return conn.session.catalog
    except AttributeError:
        raise BenchmarkError("this recsql has no Connection.session.catalog to read the table with") from None


def catalog_attribute(catalog: Any, name: str) -> Any:
    if not hasattr(catalog, name):
        kind = f"{type(catalog).__module__}.{type(catalog).__qualname__}"
        raise BenchmarkError(
            f"{kind} has no {name}: the scans need Catalog.dataframe(name), Catalog.arrow_table(name) "
            "and Catalog.ARROW_STATISTICS_BYTES"
        )
    return getattr(catalog, name)


def spark_sum(frame: DataFrame) -> tuple[int, int]:
    row = frame.agg(F.sum("a"), F.count("*")).collect()[0]
    return row[0], row[1]


def arrow_sum(table: pa.Table | str | None) -> tuple[int, int]:
    if not isinstance(table, pa.Table):  # older versions: None past their size gate, which is raised here
        raise BenchmarkError(f"Catalog.arrow_table('s') gave no rows ({table!r}) although its size gate was raised")
    return pc.sum(table.column(0)).as_py(), table.num_rows


def scan_from_spark(conn: recsql.Connection, rows: int) -> dict[str, float]:
    dataframe = catalog_attribute(scan_table(conn, rows), "dataframe")
    seconds, answer = timed(lambda: spark_sum(dataframe("s")))
    check("the Spark scan (sum, count)", answer, (rows * (rows - 1) // 2, rows))
    return {SCAN_SPARK: seconds}


def scan_from_local_evaluator(conn: recsql.Connection, rows: int) -> dict[str, float]:
    catalog = scan_table(conn, rows)
    arrow_table = catalog_attribute(catalog, "arrow_table")
    gate = catalog_attribute(catalog, "ARROW_STATISTICS_BYTES")
    catalog.ARROW_STATISTICS_BYTES = LOCAL_GATE
    try:
        seconds, answer = timed(lambda: arrow_sum(arrow_table("s")))
    finally:
        catalog.ARROW_STATISTICS_BYTES = gate
    check("the Arrow scan (sum, count)", answer, (rows * (rows - 1) // 2, rows))
    return {SCAN_LOCAL: seconds}


def workloads(scan_rows: int) -> list[tuple[str, Run]]:
    return [
        (EXECUTEMANY, executemany),
        (SINGLE, single_inserts_and_count),
        (SCAN_SPARK, lambda conn: scan_from_spark(conn, scan_rows)),
        (SCAN_LOCAL, lambda conn: scan_from_local_evaluator(conn, scan_rows)),
    ]


def samples(run: Run, conn: recsql.Connection, repeat: int) -> dict[str, list[float]]:
    """The seconds of each timed part of `repeat` runs."""
    times: dict[str, list[float]] = {}
    for _ in range(repeat):
        for part, seconds in run(conn).items():
            times.setdefault(part, []).append(seconds)
    return times


@contextlib.contextmanager
def jvm_stderr_silenced() -> Iterator[None]:
    """Spark's JVM inherits file descriptor 2 when it starts and prints its log set-up and warnings there:
    started inside this block, it keeps /dev/null for good (its errors still reach Python as exceptions),
    and this process's own stderr comes back after it."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def benchmark(args: argparse.Namespace) -> int:
    commit = recsql_commit()
    print(f"recsql from {recsql.__file__} (commit {commit or 'unknown'})", flush=True)
    medians: dict[str, float] = {}
    not_run: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="recsql-storage-", dir=args.warehouse_root) as warehouse:
        with jvm_stderr_silenced():
            conn = recsql.connect(warehouse=warehouse, master=MASTER, conf=SPARK_CONF)
        with conn:
            for name, run in workloads(args.scan_rows):
                try:
                    times = samples(run, conn, args.repeat)
                except (BenchmarkError, recsql.Error) as error:
                    not_run[name] = str(error)
                    print(f"{name}: not run: {error}", flush=True)
                    continue
                for part, seconds in times.items():
                    medians[part] = statistics.median(seconds)
                    runs = " ".join(f"{s:.3f}" for s in seconds)
                    print(f"{part}: {medians[part]:.3f} s (runs: {runs})", flush=True)
    rows = [(name, f"{seconds:.3f} s") for name, seconds in medians.items()]
    rows += [(name, "not run") for name in not_run]
    print()
    print(report(f"table storage: medians of {args.repeat} runs, {args.scan_rows:,} rows scanned", rows))
    if args.json:
        conditions = {
            "executemany rows": EXECUTEMANY_ROWS,
            "single inserts": SINGLE_INSERTS,
            "scan rows": args.scan_rows,
            "repeat": args.repeat,
            "master": MASTER,
            "not run": not_run,
        }
        save_medians(args.json, medians, conditions)
    return 1 if not_run else 0


COMPARED = ("executemany rows", "single inserts", "scan rows", "repeat", "master")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per workload (default 3); the median is kept")
    parser.add_argument("--scan-rows", type=int, default=10_000_000, help="rows of the scanned table")
    parser.add_argument("--json", help="write the medians (seconds) and the run conditions to this file")
    parser.add_argument("--warehouse-root", help="where the temporary warehouse is made (default: the system's)")
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("OLD.json", "NEW.json"),
        help="print a markdown table of two --json outputs instead of running",
    )
    args = parser.parse_args()
    if args.compare:
        print(compare_medians(*args.compare, COMPARED))
        return 0
    return benchmark(args)


if __name__ == "__main__":
    sys.exit(main())
