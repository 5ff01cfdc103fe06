"""Checks made before starting Spark, for the failures that otherwise come back late or as a JVM stack
trace: no Java on this machine (the Spark driver is a JVM), a standalone master that cannot be reached
(Spark retries for about a minute before giving up), and a Spark Connect server that cannot be reached
(the client retries for minutes)."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from recsql.errors import OperationalError

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession

MASTER_TIMEOUT = 5.0  # seconds to wait for a standalone master or a Connect server to accept a connection
CONNECT_PORT = 15002  # a Spark Connect server's port when its URL names none


def check(master: str | None) -> None:
    """Raise OperationalError saying what to fix if Spark cannot start with this master."""
    check_java()
    if master and master.startswith("spark://"):
        check_master(master)


def check_java() -> None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        if not (Path(java_home) / "bin" / "java").exists():
            raise OperationalError(
                f"cannot start Spark: Java not found: JAVA_HOME is {java_home}, which has no "
                "bin/java. Spark needs Java 17 or later: fix JAVA_HOME or unset it"
            )
    elif shutil.which("java") is None:
        raise OperationalError(
            "cannot start Spark: Java not found. Spark needs Java 17 or later: install it, "
            "then put java on the PATH or set JAVA_HOME"
        )


def check_master(master: str) -> None:
    """A standalone master URL (`spark://host:port[,host:port]`) is reachable if one of its hosts is."""
    reasons = []
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        try:
            if reachable(host, int(port), reasons):
                return
        except ValueError:
            raise OperationalError(f"bad Spark master URL {master}: expected spark://host:port") from None
    raise OperationalError(f"cannot start Spark: the master {master} cannot be reached ({'; '.join(reasons)})")


def check_connect_server(url: str) -> None:
    """A Spark Connect URL (`sc://host[:port][/;param=value...]`) names a server that accepts connections."""
    parts = urlsplit(url)
    try:
        host, port = parts.hostname, parts.port or CONNECT_PORT
    except ValueError:
        host = None
    if parts.scheme != "sc" or not host:
        raise OperationalError(f"bad Spark Connect URL {url}: expected sc://host:port")
    reasons: list[str] = []
    if not reachable(host, port, reasons):
        raise OperationalError(f"cannot reach Spark Connect at {url} ({reasons[0]})")


def check_server_of(spark: SparkSession) -> None:
    """The server of a Spark Connect session accepts connections (when its client says where it is)."""
    endpoint = getattr(getattr(spark.client, "_builder", None), "endpoint", None)
    if not isinstance(endpoint, str) or ":" not in endpoint:
        return
    host, _, port = endpoint.rpartition(":")
    reasons: list[str] = []
    if not reachable(host.strip("[]"), int(port), reasons):
        raise OperationalError(f"cannot reach the Spark Connect server of the session ({reasons[0]})")


def reachable(host: str, port: int, reasons: list[str]) -> bool:
    """Whether `host:port` accepts a connection; if not, why is added to `reasons`."""
    try:
        with socket.create_connection((host, port), timeout=MASTER_TIMEOUT):
            return True
    except OSError as error:
        reasons.append(f"{host}:{port}: {error.strerror or error}")
        return False
