"""The exchange the tasks of a one-job distributed fixpoint use (recsql/engine/local/exchange.py) and how
they find each other (rendezvous.py), with threads for tasks: every row reaches the task that owns it,
totals agree, the driver hears of each iteration, a failed or vanished task stops every other one, and a
closed coordinator stops them all."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recsql.engine.local.exchange import SocketExchange, Stopped
from recsql.engine.local.rendezvous import Coordinator, Registration
from recsql.errors import OperationalError

TIMEOUT = 30.0
HOST = "127.0.0.1"


def run_tasks(
    parts: int, task: Callable[[Registration], object], reported: Callable[[int, int], None] = lambda *_: None
) -> list[object]:
    """`task` run by `parts` threads, each with its exchange joined to the others through a coordinator;
    what each returned or raised."""
    coordinator = Coordinator(parts, HOST, reported)

    def joined(part: int) -> object:
        exchange = SocketExchange(part, parts, coordinator.rendezvous.token, TIMEOUT)
        registration = coordinator.rendezvous.join(exchange, HOST)
        try:
            return task(registration)
        except Exception as error:
            exchange.stop()
            return error
        finally:
            exchange.close()
            registration.close()

    try:
        with ThreadPoolExecutor(parts) as pool:
            return list(pool.map(joined, range(parts)))
    finally:
        coordinator.close()


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda parts: st.lists(
            st.lists(st.tuples(st.integers(-1000, 1000), st.integers(0, parts - 1)), max_size=30),
            min_size=parts,
            max_size=parts,
        )
    )
)
def test_every_row_reaches_its_owner_and_totals_agree(rows):
    reports: list[tuple[int, int]] = []

    def task(registration: Registration) -> tuple[list[int], tuple[int, ...]]:
        sent = rows[registration.exchange.part]
        table = pa.table({"value": pa.array([value for value, _ in sent], pa.int64())})
        received = registration.exchange.route(table, pa.array([owner for _, owner in sent], pa.int64()))
        totals = registration.exchange.totals((len(sent), 1))
        registration.progress(totals[0])
        return sorted(received.column("value").to_pylist()), totals

    results = run_tasks(len(rows), task, lambda attempt, new: reports.append((attempt, new)))
    for part, (received, totals) in enumerate(results):
        assert received == sorted(value for sent in rows for value, owner in sent if owner == part)
        assert totals == (sum(len(sent) for sent in rows), len(rows))
    assert reports == [(0, sum(len(sent) for sent in rows))]  # the first task's report, once


def test_large_tables_cross_in_both_directions_at_once():
    """Each task sends the other more than a socket buffers before either reads."""
    size = 2_000_000

    def task(registration: Registration) -> int:
        part = registration.exchange.part
        table = pa.table({"value": pa.array(range(size), pa.int64())})
        received = registration.exchange.route(table, pa.array([1 - part] * size, pa.int64()))
        return received.num_rows

    assert run_tasks(2, task) == [size, size]


def test_a_failed_task_stops_every_other_one():
    def task(registration: Registration) -> tuple[int, ...]:
        if registration.exchange.part == 1:
            raise ValueError("this part failed")
        return registration.exchange.totals((1,))

    outcomes = run_tasks(3, task)
    assert isinstance(outcomes[1], ValueError)
    assert all(isinstance(outcome, Stopped) for outcome in (outcomes[0], outcomes[2]))


def test_a_vanished_task_stops_every_other_one():
    """A task whose connections close without a word (its executor lost) stops the others."""

    def task(registration: Registration) -> tuple[int, ...]:
        if registration.exchange.part == 0:
            for channel in registration.exchange.peers.values():
                channel.close()
            return ()
        return registration.exchange.totals((1,))

    outcomes = run_tasks(3, task)
    assert all(isinstance(outcome, Stopped) for outcome in outcomes[1:])


def test_what_a_report_raises_stops_every_task_and_reaches_the_driver():
    class Cancelled(Exception):
        pass

    def cancel(attempt: int, new_facts: int) -> None:
        raise Cancelled()

    stopped: list[int] = []

    def task(registration: Registration) -> object:
        registration.progress(registration.exchange.totals((1,))[0])
        try:
            while True:  # rounds until the driver's close reaches this task
                registration.exchange.totals((0,))
        except Stopped:
            stopped.append(registration.exchange.part)
            raise

    with pytest.raises(Cancelled):
        run_tasks(2, task, cancel)
    assert sorted(stopped) == [0, 1]


def test_a_task_without_its_peers_fails_with_the_time_it_waited():
    coordinator = Coordinator(1, HOST, lambda *_: None)
    try:
        exchange = SocketExchange(0, 2, coordinator.rendezvous.token, 0.2)  # part 1 never comes
        exchange.listener.close()
        with pytest.raises(OperationalError, match="could not reach"):
            exchange.connect([(HOST, 1), (HOST, 1)])
    finally:
        coordinator.close()


def test_the_coordinator_ignores_a_stranger():
    """A connection without the exchange's token is closed, and the tasks still meet."""
    import socket

    coordinator = Coordinator(1, HOST, lambda *_: None)
    try:
        stranger = socket.create_connection(coordinator.rendezvous.coordinator)
        stranger.sendall(b"\x01" + b"\x00" * 8 + (2).to_bytes(8, "big") + b"{}")
        assert stranger.recv(1) == b""  # closed by the coordinator
        exchange = SocketExchange(0, 1, coordinator.rendezvous.token, TIMEOUT)
        registration = coordinator.rendezvous.join(exchange, HOST)
        assert registration.exchange.totals((3,)) == (3,)
        registration.close()
    finally:
        coordinator.close()
    assert not [thread for thread in threading.enumerate() if thread.name == "recsql-coordinator"]
