"""How the tasks of a one-job fixpoint learn where the others listen, once per attempt of their stage,
and how the driver hears of their iterations as they run.

Where the executors reach this process (a classic session's driver, on any cluster manager; over Spark
Connect where a probe found it reachable: engine/spark/reachability.py), it listens (Coordinator) and
every task registers with it: once all tasks of an attempt have, each gets the addresses of all; the
first task then reports each iteration's new facts (all tasks' together), which become progress; when
the coordinator closes the connections (the statement is cancelled) every task stops at its next round.
This costs milliseconds. Where they do not, the tasks gather their addresses with the barrier's
allGather (Rendezvous.barrier), which waits in steps of a second, and the iterations are reported when
the job ends.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from recsql.engine.local.exchange import Address, SocketExchange
from recsql.engine.local.wire import Channel, Kind, document_payload, listener
from recsql.errors import OperationalError

ACCEPT_SECONDS = 0.5  # how often the coordinator's listener looks whether it is closed, where shutting it
# down does not wake the accept waiting on it (Linux wakes it at once: a job's end waits for nothing)

DRAIN_SECONDS = 1.0  # how long closing the coordinator waits for the reports of tasks that have ended
# what the coordinator does with a report: (attempt, new facts of the attempt's next iteration)
Reported = Callable[[int, int], None]


@dataclass(frozen=True)
class Rendezvous:
    """Where a task of the exchange registers: a coordinator's address and the exchange's token, or
    None for the barrier's allGather. Pickled to the Python workers."""

    token: str
    coordinator: Address | None

    @classmethod
    def barrier(cls) -> Rendezvous:
        return cls(secrets.token_hex(16), None)

    def join(self, exchange: SocketExchange, host: str) -> Registration:
        """Connect `exchange` (of a task on `host`) to the other tasks of its attempt of the stage."""
        if self.coordinator is None:
            from pyspark import BarrierTaskContext

            gathered = BarrierTaskContext.get().allGather(f"{host} {exchange.port}")
            exchange.connect([(text.split()[0], int(text.split()[1])) for text in gathered])
            return Registration(None, exchange)
        try:
            channel = Channel.to(self.coordinator, exchange.timeout)
            hello = {"token": self.token, "part": exchange.part, "host": host, "port": exchange.port}
            channel.send(Kind.HELLO, 0, document_payload(hello))
            addresses = channel.receive()
        except (OSError, EOFError) as error:
            raise OperationalError(f"a part of a distributed fixpoint could not reach the driver: {error}") from None
        if addresses.kind != Kind.ADDRESSES:
            raise OperationalError("a part of a distributed fixpoint was stopped before it began")
        exchange.connect([(host, port) for host, port in addresses.document()])
        registration = Registration(channel, exchange)
        threading.Thread(target=registration.watch, name="recsql-driver", daemon=True).start()
        return registration


@dataclass(frozen=True)
class Registration:
    """A task's link to the driver, if any."""

    channel: Channel | None
    exchange: SocketExchange

    def progress(self, new_facts: int) -> None:
        """The first task tells the driver of an iteration's new facts (all tasks')."""
        if self.channel is not None and self.exchange.part == 0:
            try:
                self.channel.send(Kind.PROGRESS, self.exchange.round, document_payload(new_facts))
            except OSError:
                self.exchange.interrupt()  # the driver is gone: so is the statement

    def watch(self) -> None:
        """Stop the task when the driver closes its connection (the statement is cancelled or done)."""
        assert self.channel is not None
        try:
            while self.channel.receive().kind != Kind.STOP:
                pass
        except (OSError, EOFError):
            pass
        self.exchange.interrupt()

    def close(self) -> None:
        if self.channel is not None:
            self.channel.close()


class Coordinator:
    """The driver's end (module docstring): listens for the `parts` tasks of each attempt, hands every
    progress report to `reported`; what that raises stops every task, as `close` does."""

    def __init__(self, parts: int, host: str, reported: Reported):
        self.parts = parts
        self.reported = reported
        self.listener = listener(parts)
        self.listener.settimeout(ACCEPT_SECONDS)
        self.rendezvous = Rendezvous(secrets.token_hex(16), (host, self.listener.getsockname()[1]))
        self.attempt = 0  # the attempt of the stage the tasks registering belong to
        self.tasks: dict[int, tuple[Channel, Address]] = {}  # by part, of that attempt
        self.channels: list[Channel] = []  # of every task that registered
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.failure: Exception | None = None
        self.serving: list[threading.Thread] = []  # a thread per task's connection
        self.thread = threading.Thread(target=self.accept, name="recsql-coordinator", daemon=True)
        self.thread.start()

    def accept(self) -> None:
        while not self.closed.is_set():
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            serving = threading.Thread(target=self.serve, args=(Channel(connection),), daemon=True)
            with self.lock:
                self.serving.append(serving)
            serving.start()

    def serve(self, channel: Channel) -> None:
        """A task's registration, then its progress reports until it closes the connection."""
        try:
            hello = channel.receive()
            task = hello.document() if hello.kind == Kind.HELLO else {}
            if task.get("token") != self.rendezvous.token:
                channel.close()
                return
            attempt = self.register(int(task["part"]), channel, (str(task["host"]), int(task["port"])))
            while True:
                frame = channel.receive()
                if frame.kind == Kind.PROGRESS and attempt == self.attempt:  # not a late one of a failed attempt
                    self.reported(attempt, int(frame.document()))
        except (OSError, EOFError):
            pass
        except Exception as error:  # what `reported` raised (the statement is cancelled): every task stops
            self.failure = error
            self.stop()

    def register(self, part: int, channel: Channel, address: Address) -> int:
        """Register a task of the current attempt, or of the next one where this part has registered
        already (Spark runs a failed barrier stage's tasks again, all of them); once all tasks of the
        attempt have, tell each where the others listen. The attempt's number."""
        with self.lock:
            if self.closed.is_set():
                channel.close()
                return -1
            if part in self.tasks:
                self.attempt += 1
                self.tasks = {}
            self.tasks[part] = (channel, address)
            self.channels.append(channel)
            if len(self.tasks) == self.parts:
                addresses = document_payload([self.tasks[p][1] for p in range(self.parts)])
                for registered, _ in self.tasks.values():
                    with contextlib.suppress(OSError):  # that task is gone: the others will find out
                        registered.send(Kind.ADDRESSES, 0, addresses)
            return self.attempt

    def stop(self) -> None:
        """Stop every task still running (they stop at their next round)."""
        with self.lock:
            self.closed.set()
            channels = list(self.channels)
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept waiting on it
        self.listener.close()
        for channel in channels:
            channel.close()

    def close(self) -> None:
        """Stop listening (and any task still running); raise what a report raised. The reports tasks sent
        before they ended are heard first: a task closes its connection when it ends, which ends the
        thread reading it (for at most DRAIN_SECONDS, a task of an attempt Spark gave up may linger)."""
        deadline = time.monotonic() + DRAIN_SECONDS
        with self.lock:
            serving = list(self.serving)
        for thread in serving:
            thread.join(max(deadline - time.monotonic(), 0.0))
        self.stop()
        self.thread.join()
        if self.failure is not None:
            raise self.failure
