"""The time a new user waits: whole commands, each in a fresh process from a fresh home directory and
warehouse, as the README gives them, beside the bare minimum of Spark and DuckDB in the same environment.

    python -m benchmarks.startup [--repeat 5]

Commands (their runs interleaved, medians of `--repeat`):
  recsql run        recsql run examples/reachability.sql (its answer checked)
  recsql -c         recsql -c "SELECT 1"
  bare Spark        python -c "SparkSession.builder.getOrCreate().sql('SELECT 1').collect()"
  DuckDB            python -c: the same reachability over the same CSV file (a depth bound in place of
                    min() in the recursion, which DuckDB lacks), start-up included
Each process's JVMs are counted too: a run that needs no Spark must start none. Prints each median and
recsql's as a share of bare Spark's (the README's first command against Spark's own start).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECSQL = str(Path(sys.executable).parent / "recsql")
EXAMPLE = ROOT / "examples" / "reachability.sql"
BARE_SPARK = "from pyspark.sql import SparkSession; SparkSession.builder.getOrCreate().sql('SELECT 1').collect()"
DUCKDB = f"""import duckdb
print(duckdb.sql('''WITH RECURSIVE reach(city, flights) AS (SELECT 'Amsterdam', 0 UNION
  SELECT f.dst, r.flights + 1 FROM reach r JOIN read_csv('{ROOT / "examples" / "data" / "flights.csv"}') f
  ON r.city = f.src WHERE r.flights < 20)
SELECT city, min(flights) AS flights FROM reach GROUP BY city ORDER BY flights, city''').fetchall())"""
COMMANDS = {
    "recsql run": [RECSQL, "run", str(EXAMPLE)],
    "recsql -c": [RECSQL, "-c", "SELECT 1"],
    "bare Spark": [sys.executable, "-c", BARE_SPARK],
    "DuckDB": [sys.executable, "-c", DUCKDB],
}
REACHABLE = 14  # cities of the example's answer


def run_once(command: list[str]) -> tuple[float, str, bool]:
    """Wall time, standard output, and whether a JVM was started (a Java wrapper records each start)."""
    with tempfile.TemporaryDirectory() as home:
        java_home = java_recorder(Path(home))
        environment = {
            **os.environ,
            "HOME": home,
            "RECSQL_WAREHOUSE": str(Path(home) / "warehouse"),
            "JAVA_HOME": str(java_home),
        }
        started = time.perf_counter()
        finished = subprocess.run(command, env=environment, capture_output=True, text=True, cwd=home)
        seconds = time.perf_counter() - started
        if finished.returncode != 0:
            raise RuntimeError(f"{command} failed: {finished.stderr[-2000:]}")
        return seconds, finished.stdout, (java_home / "started").exists()


def java_recorder(home: Path) -> Path:
    """A JAVA_HOME whose java notes that it ran, then runs the real one."""
    real = (
        Path(os.environ["JAVA_HOME"]) / "bin" / "java"
        if os.environ.get("JAVA_HOME")
        else Path(subprocess.run(["which", "java"], capture_output=True, text=True, check=True).stdout.strip())
    )
    script = home / "java" / "bin" / "java"
    script.parent.mkdir(parents=True)
    script.write_text(f'#!/bin/sh\ntouch "{home / "java" / "started"}"\nexec "{real}" "$@"\n')
    script.chmod(0o755)
    return home / "java"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.startup", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command; the median is reported")
    args = parser.parse_args(argv)
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    jvms: dict[str, set[bool]] = {name: set() for name in COMMANDS}
    for _ in range(args.repeat):
        for name, command in COMMANDS.items():
            seconds, output, jvm = run_once(command)
            if name == "recsql run":
                assert f"{REACHABLE} rows" in output, output
            times[name].append(seconds)
            jvms[name].add(jvm)
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, median in medians.items():
        started = "a JVM started" if True in jvms[name] else "no JVM"
        print(f"{name:12s} {median:7.3f} s  (runs: {', '.join(f'{t:.2f}' for t in times[name])}; {started})")
    print(f"recsql run / bare Spark: {medians['recsql run'] / medians['bare Spark']:.2f}")
    print(f"recsql run / DuckDB:     {medians['recsql run'] / medians['DuckDB']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
