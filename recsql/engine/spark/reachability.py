"""Where the executors reach this process, so that the tasks of a one-job fixpoint register with a
coordinator here (milliseconds, local/rendezvous.py) rather than gather their addresses through Spark's
barrier (about a second a call).

A classic session's driver is this process: the executors reach it at spark.driver.host. Over Spark
Connect the driver is the server's, but this process may still be reachable, as a notebook or a job
inside the cluster's network is: at its address on the route to the server, when the task of a probe
job, run once per session, connects to it there.
"""

from __future__ import annotations

import socket
import weakref
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import SparkSession

from recsql.engine.local.rendezvous import Coordinator, Rendezvous
from recsql.engine.local.wire import Channel, Kind, document_payload
from recsql.spark.session_kinds import driver_host, is_connect

PROBE_SECONDS = 3.0  # how long the probe's task tries to connect to this process
CONNECT_HOSTS: weakref.WeakKeyDictionary[SparkSession, str | None] = weakref.WeakKeyDictionary()


def coordinator_host(spark: SparkSession) -> str | None:
    """The address the executors reach this process at, or None where they do not (module docstring)."""
    if not is_connect(spark):
        return driver_host(spark)
    if spark not in CONNECT_HOSTS:
        CONNECT_HOSTS[spark] = probed_host(spark)
    return CONNECT_HOSTS[spark]


def probed_host(spark: SparkSession) -> str | None:
    """This process's address on its route to the Spark Connect server, where a task reaches it."""
    host = route_address(spark.client.host)
    if host is None:
        return None
    coordinator = Coordinator(1, host, lambda attempt, facts: None)
    try:
        probe = spark.range(0, 1, 1, 1).mapInArrow(Probe(coordinator.rendezvous), "reached boolean")
        reached = bool(probe.collect()[0][0])
    except Exception:
        reached = False
    finally:
        coordinator.close()
    return host if reached else None


def route_address(server: str) -> str | None:
    """The address of this machine's interface on the route to `server` (no packet is sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((server.strip("[]"), 9))
            return str(probe.getsockname()[0])
    except OSError:
        return None


@dataclass(frozen=True)
class Probe:
    """The probe job's task: does it reach the coordinator? Pickled to the Python workers."""

    rendezvous: Rendezvous

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _ in batches:
            pass
        assert self.rendezvous.coordinator is not None
        hello = {"token": self.rendezvous.token, "part": 0, "host": "", "port": 0}
        try:
            channel = Channel.to(self.rendezvous.coordinator, PROBE_SECONDS)
            try:
                channel.send(Kind.HELLO, 0, document_payload(hello))
                reached = channel.receive().kind == Kind.ADDRESSES
            finally:
                channel.close()
        except (OSError, EOFError):
            reached = False
        yield pa.RecordBatch.from_pydict({"reached": [reached]})
