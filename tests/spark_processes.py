"""Spark processes that tests start beside the suite's own session: a standalone cluster's daemons, a
Spark Connect server; and the Python their workers run, which lacks recsql."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from benchmarks.cluster import free_port, spark_home, wait_for_port  # noqa: F401 - for the tests that start Spark


def worker_python(directory: Path) -> str:
    """A Python whose packages are this environment's (pyspark, pyarrow, duckdb, sqlglot, ...) but not
    recsql: a virtual environment whose site-packages lists this one's as a plain path, so that the
    editable install's import hooks (.pth files there) are not run."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True)
    python = directory / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(purelib, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    probe = subprocess.run(
        [
            str(python),
            "-c",
            "import pyspark, pyarrow, duckdb, sqlglot, pandas\n"
            "try:\n import recsql\nexcept ImportError:\n print('without recsql')",
        ],
        capture_output=True,
        text=True,
        cwd=directory,
    )  # not beside a checkout of recsql
    assert probe.stdout.strip() == "without recsql", f"the workers' Python is not as meant: {probe}"
    return str(python)


def java_home_wrapper(directory: Path, delay: float = 0) -> Path:
    """A JAVA_HOME whose `java` notes each start in `directory / "started"`, waits `delay` seconds, then
    runs the real Java: tests see whether (and when) a process started Spark's JVM."""
    real = Path(os.environ["JAVA_HOME"]) / "bin" / "java" if os.environ.get("JAVA_HOME") else shutil.which("java")
    assert real is not None, "no java to wrap"
    script = directory / "bin" / "java"
    script.parent.mkdir(parents=True)
    script.write_text(f'#!/bin/sh\necho "$$" >> "{directory / "started"}"\nsleep {delay}\nexec "{real}" "$@"\n')
    script.chmod(0o755)
    return directory


def java_started(java_home: Path) -> bool:
    """Whether a process ran the wrapped `java` (java_home_wrapper)."""
    return (java_home / "started").exists()


def spark_jvm_running(pid: int) -> bool:
    """Whether one of the descendants of process `pid` is a JVM running Spark (a sleeping wrapper is not)."""
    children = {}
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
            command = (status.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append((int(status.parent.name), command))
    pending = [pid]
    while pending:
        for child, command in children.get(pending.pop(), []):
            if Path(command[0].decode()).name == "java" and any(b"org.apache.spark" in part for part in command):
                return True
            pending.append(child)
    return False
