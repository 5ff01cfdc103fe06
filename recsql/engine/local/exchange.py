"""All-to-all exchange among the tasks of one Spark barrier stage, over TCP connections between them
(wire.py), wherever they run: the executors of a cluster share no files.

Every task listens on a port of its own; once each knows where the others listen (rendezvous.py), each
pair of tasks opens one connection, made by the lower-numbered task, read by a thread at each end that
queues the frames per sender. The tasks run in lockstep: each call is one round, and every task makes
the same calls in the same order. A task that fails tells the others (a STOP frame); one that is gone
(its executor lost, its job cancelled) closes its connections with its process: either way every task
stops at its next round, and Spark's retry of the barrier stage starts them all again.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from recsql.engine.local.wire import GONE, Channel, Frame, Kind, document_payload, listener, rows_payload
from recsql.errors import OperationalError

Address = tuple[str, int]


class Stopped(OperationalError):
    """Another task failed or the statement was cancelled: this task stopped (who stopped it says why)."""

    def __init__(self) -> None:
        super().__init__("a part of the fixpoint stopped: another part failed or the statement was cancelled")


class SocketExchange:
    """Rounds of exchange among `parts` tasks, this one being `part`; a task that has not answered within
    `timeout` seconds fails the round. `token`: the secret every task of the exchange knows."""

    def __init__(self, part: int, parts: int, token: str, timeout: float):
        self.part = part
        self.parts = parts
        self.token = token
        self.timeout = timeout
        self.listener = listener(parts)
        self.port: int = self.listener.getsockname()[1]
        self.peers: dict[int, Channel] = {}
        self.inboxes: dict[int, queue.SimpleQueue[Frame]] = {
            peer: queue.SimpleQueue() for peer in range(parts) if peer != part
        }
        self.round = 0

    def connect(self, addresses: Sequence[Address]) -> None:
        """Join the other tasks, listening at `addresses` (by part): connect to those after this one (their
        listeners queue the connection), then take the connections of those before it."""
        try:
            for peer in range(self.part + 1, self.parts):
                channel = Channel.to(addresses[peer], self.timeout)
                channel.send(Kind.HELLO, 0, document_payload({"token": self.token, "part": self.part}))
                self.listen_to(peer, channel)
            self.listener.settimeout(self.timeout)
            while len(self.peers) < self.parts - 1:
                connection, _ = self.listener.accept()
                channel = Channel(connection)
                hello = channel.receive()
                greeting = hello.document() if hello.kind == Kind.HELLO else {}
                if greeting.get("token") != self.token or greeting.get("part") not in self.inboxes:
                    channel.close()  # not one of this exchange's tasks
                    continue
                self.listen_to(greeting["part"], channel)
        except TimeoutError:
            raise OperationalError(
                f"part {self.part} of a distributed fixpoint could not reach the others within {self.timeout:.0f} s"
            ) from None
        except (OSError, EOFError) as error:
            raise OperationalError(
                f"part {self.part} of a distributed fixpoint could not reach the others: {error}"
            ) from None
        finally:
            self.listener.close()

    def listen_to(self, peer: int, channel: Channel) -> None:
        self.peers[peer] = channel
        threading.Thread(target=self.read, args=(peer, channel), name=f"recsql-peer-{peer}", daemon=True).start()

    def read(self, peer: int, channel: Channel) -> None:
        inbox = self.inboxes[peer]
        try:
            while True:
                frame = channel.receive()
                inbox.put(frame)
                if frame.kind == Kind.STOP:
                    return
        except (EOFError, OSError):
            inbox.put(GONE)

    def interrupt(self) -> None:
        """Stop this task at its next round (the driver cancelled the fixpoint)."""
        for inbox in self.inboxes.values():
            inbox.put(GONE)

    def route(self, table: pa.Table, owners: pa.Array) -> pa.Table:
        """Send each row of `table` to the task its entry of `owners` names; the rows all tasks sent here."""
        self.round += 1
        for peer, channel in self.peers.items():
            self.send(channel, Kind.ROWS, rows_payload(table.filter(pc.equal(owners, peer))))
        received = [table.filter(pc.equal(owners, self.part))]
        received.extend(self.receive(peer, Kind.ROWS).rows() for peer in sorted(self.peers))
        return pa.concat_tables(received).combine_chunks()

    def totals(self, counts: Sequence[int]) -> tuple[int, ...]:
        """The sums of every task's `counts`, position by position, in one round."""
        self.round += 1
        payload = document_payload(list(counts))
        for channel in self.peers.values():
            self.send(channel, Kind.COUNTS, payload)
        sums = list(counts)
        for peer in sorted(self.peers):
            for position, count in enumerate(self.receive(peer, Kind.COUNTS).document()):
                sums[position] += count
        return tuple(sums)

    def send(self, channel: Channel, kind: Kind, payload: bytes | pa.Buffer) -> None:
        try:
            channel.send(kind, self.round, payload)
        except OSError:
            raise Stopped() from None  # the peer is gone: its failure, or its executor's, says why

    def receive(self, peer: int, kind: Kind) -> Frame:
        try:
            frame = self.inboxes[peer].get(timeout=self.timeout)
        except queue.Empty:
            raise OperationalError(
                f"part {peer} of a distributed fixpoint did not answer within {self.timeout:.0f} s (round {self.round})"
            ) from None
        if frame.kind == Kind.STOP:
            self.inboxes[peer].put(frame)  # and at every later round
            raise Stopped()
        if frame.kind != kind or frame.round != self.round:
            raise OperationalError(
                f"part {peer} of a distributed fixpoint is out of step: {frame.kind.name} of round {frame.round} "
                f"in round {self.round}"
            )
        return frame

    def stop(self) -> None:
        """Tell the other tasks that this one failed and will not answer."""
        for channel in self.peers.values():
            with contextlib.suppress(OSError):  # gone already
                channel.send(Kind.STOP, self.round)

    def close(self) -> None:
        self.listener.close()
        for channel in self.peers.values():
            channel.close()
