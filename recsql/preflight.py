"""Checks made before starting Spark, for the two failures that otherwise come back late or as a JVM
stack trace: no Java on this machine (the Spark driver is a JVM), and a standalone master that cannot be
reached (Spark retries for about a minute before giving up)."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

from recsql.errors import OperationalError

MASTER_TIMEOUT = 5.0  # seconds to wait for a standalone master to accept a connection


def check(master: str | None) -> None:
    """Raise OperationalError saying what to fix if Spark cannot start with this master."""
    check_java()
    if master and master.startswith("spark://"):
        check_master(master)


def check_java() -> None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        if not (Path(java_home) / "bin" / "java").exists():
            raise OperationalError(f"cannot start Spark: Java not found: JAVA_HOME is {java_home}, which has no "
                                   "bin/java. Spark needs Java 17 or later: fix JAVA_HOME or unset it")
    elif shutil.which("java") is None:
        raise OperationalError("cannot start Spark: Java not found. Spark needs Java 17 or later: install it, "
                               "then put java on the PATH or set JAVA_HOME")


def check_master(master: str) -> None:
    """A standalone master URL (`spark://host:port[,host:port]`) is reachable if one of its hosts is."""
    reasons = []
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=MASTER_TIMEOUT):
                return
        except ValueError:
            raise OperationalError(f"bad Spark master URL {master}: expected spark://host:port") from None
        except OSError as error:
            reasons.append(f"{address}: {error.strerror or error}")
    raise OperationalError(f"cannot start Spark: the master {master} cannot be reached ({'; '.join(reasons)})")
