"""Frames over TCP: what the tasks of a one-job fixpoint and the driver coordinating them send each other.

A frame is a header (its kind, the exchange round it belongs to, the length of its payload) and a
payload: rows as an Arrow IPC stream, or a small JSON document. A connection carries frames both ways;
one thread reads it, any thread may write it.
"""

from __future__ import annotations

import contextlib
import enum
import json
import socket
import struct
import threading
from typing import Any, NamedTuple

import pyarrow as pa

HEADER = struct.Struct("!BqQ")  # kind, round, payload length
SMALL = 1 << 16  # a payload up to this size goes out in one write with its header


class Kind(enum.IntEnum):
    HELLO = 1  # who the sender is: to a peer (its part) or to the coordinator (where it listens)
    ADDRESSES = 2  # the coordinator to every task, once all registered: where each one listens
    ROWS = 3  # rows routed to the task that owns them
    COUNTS = 4  # a task's counts in a round of totals
    PROGRESS = 5  # the first task to the coordinator: an iteration's new facts, all tasks' together
    STOP = 6  # the sender stops (failed, cancelled) or is gone: so does the receiver


class Frame(NamedTuple):
    kind: Kind
    round: int
    payload: bytes | bytearray

    def document(self) -> Any:
        return json.loads(self.payload)

    def rows(self) -> pa.Table:
        return pa.ipc.open_stream(pa.py_buffer(self.payload)).read_all()


GONE = Frame(Kind.STOP, -1, b"")  # what a reader hands on when its connection ends


def rows_payload(table: pa.Table) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def document_payload(document: Any) -> bytes:
    return json.dumps(document).encode()


class Channel:
    """One TCP connection carrying frames."""

    def __init__(self, connection: socket.socket):
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection.settimeout(None)
        self.connection = connection
        self.lock = threading.Lock()  # one frame at a time

    @classmethod
    def to(cls, address: tuple[str, int], timeout: float) -> Channel:
        return cls(socket.create_connection(address, timeout=timeout))

    def send(self, kind: Kind, round: int, payload: bytes | pa.Buffer = b"") -> None:
        """Raises OSError when the other end is gone."""
        header = HEADER.pack(kind, round, len(payload))
        with self.lock:
            if len(payload) <= SMALL:
                self.connection.sendall(header + bytes(payload))
            else:
                self.connection.sendall(header)
                self.connection.sendall(memoryview(payload))

    def receive(self) -> Frame:
        """The next frame; EOFError when the other end closed the connection, OSError when it broke."""
        kind, round, length = HEADER.unpack(self.exactly(HEADER.size))
        return Frame(Kind(kind), round, self.exactly(length))

    def exactly(self, size: int) -> bytearray:
        data = bytearray(size)
        view = memoryview(data)
        received = 0
        while received < size:
            count = self.connection.recv_into(view[received:])
            if not count:
                raise EOFError("connection closed")
            received += count
        return data

    def close(self) -> None:
        with contextlib.suppress(OSError):  # already gone
            self.connection.shutdown(socket.SHUT_RDWR)
        self.connection.close()


def listener(backlog: int) -> socket.socket:
    """A socket listening on every interface, on a port the system picks."""
    return socket.create_server(("", 0), backlog=max(backlog, 1))
