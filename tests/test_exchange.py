"""The exchange the tasks of a one-job distributed fixpoint use (recsql/engine/local/exchange.py), with
threads for tasks: every row reaches the task that owns it, totals agree, a stop marker ends every
task's wait, and a finished exchange leaves nothing behind."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recsql.engine.local.exchange import DirectoryExchange, Stopped, TotalsReader, remove, stop

TIMEOUT = 60.0


def exchange_all(directory: str, rows: list[list[tuple[int, int]]]) -> list[tuple[pa.Table, int]]:
    """Each task (one per entry of `rows`) routes its rows (value, owner) and counts them."""
    parts = len(rows)

    def task(part: int) -> tuple[pa.Table, int]:
        exchange = DirectoryExchange(directory, 0, part, parts, TIMEOUT)
        table = pa.table({"value": pa.array([value for value, _ in rows[part]], pa.int64())})
        owners = pa.array([owner for _, owner in rows[part]], pa.int64())
        received = exchange.route(table, owners)
        return received, exchange.total(len(rows[part]))

    with ThreadPoolExecutor(parts) as pool:
        return list(pool.map(task, range(parts)))


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
def test_every_row_reaches_its_owner_and_totals_agree(tmp_path_factory, rows):
    directory = str(tmp_path_factory.mktemp("exchange"))
    results = exchange_all(directory, rows)
    for part, (received, total) in enumerate(results):
        expected = sorted(value for sent in rows for value, owner in sent if owner == part)
        assert sorted(received.column("value").to_pylist()) == expected
        assert total == sum(len(sent) for sent in rows)
    reader = TotalsReader(directory, len(rows))
    assert reader.new_totals() == [(0, sum(len(sent) for sent in rows))]  # the route round is not a total
    assert reader.new_totals() == []


def test_a_stop_marker_ends_the_wait_of_every_task(tmp_path):
    directory = str(tmp_path)
    waiting = DirectoryExchange(directory, 0, 0, 2, TIMEOUT)  # part 1 never answers
    stopper = threading.Timer(0.2, stop, [directory])
    stopper.start()
    with pytest.raises(Stopped):
        waiting.total(1)
    stopper.join()


def test_a_task_whose_exchange_is_removed_stops(tmp_path):
    directory = str(tmp_path / "exchange")
    os.mkdir(directory)
    late = DirectoryExchange(directory, 0, 0, 1, TIMEOUT)
    remove(directory)
    with pytest.raises(Stopped):
        late.total(1)
    assert not os.path.exists(directory)  # the late task did not make it again
