"""recsql's own code shipped to Spark's executors, whose Python need not have recsql installed.

The decomposed strategy runs recsql's evaluator inside Spark's Python workers. On a cluster those run on
other hosts, with whatever Python the cluster gives them: recsql's packages (pure Python) are zipped once
per version of their files and added to the session (`addPyFile`; on Spark Connect, as a Python artifact
of the session), so that the workers import the driver's recsql; the workers' Python needs only
recsql's dependencies (pyspark, pyarrow, pandas, duckdb, sqlglot).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
import zipfile
from pathlib import Path

from pyspark.sql import SparkSession

from recsql.spark.session_kinds import is_connect, local_cores

PACKAGES = ("recsql", "translator")  # what the workers import: the engine and the IR it evaluates


def source_files() -> list[tuple[Path, str]]:
    """The Python files of the shipped packages, with their names inside the zip (found where Python imports
    each package from, wherever this module lies within them)."""
    files = []
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.origin is not None, package
        directory = Path(spec.origin).resolve().parent
        files += [(path, path.relative_to(directory.parent).as_posix()) for path in directory.rglob("*.py")]
    return sorted(files)


def code_archive() -> Path:
    """A zip of recsql's packages, made once per version of their files (its name is their digest)."""
    files = source_files()
    digest = hashlib.sha256()
    for path, name in files:
        digest.update(name.encode())
        digest.update(path.read_bytes())
    archive = Path(tempfile.gettempdir()) / f"recsql-code-{os.getuid()}" / f"recsql-{digest.hexdigest()[:16]}.zip"
    if not archive.exists():
        archive.parent.mkdir(parents=True, exist_ok=True)
        partial = archive.with_suffix(f".{os.getpid()}.part")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zipped:
            for path, name in files:
                zipped.write(path, name)
        partial.replace(archive)  # whole or absent, should several processes make it at once
    return archive


def ship_code(spark: SparkSession) -> None:
    """Add recsql's code to the session, for its Python workers to import (once per session: several
    connections may share one)."""
    archive = str(code_archive())
    owner = spark.session_id if is_connect(spark) else spark.sparkContext.applicationId
    if (owner, archive) in _shipped:
        return
    if is_connect(spark):
        spark.addArtifacts(archive, pyfile=True)
    else:
        spark.sparkContext.addPyFile(archive)
    _shipped.add((owner, archive))


_shipped: set[tuple[str, str]] = set()  # (Spark Connect session id or application id, archive) added


def runs_elsewhere(master: str) -> bool:
    """Whether a master's Python workers may run on other hosts, with another Python than this one."""
    return local_cores(master) is None
