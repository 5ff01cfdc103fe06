"""Running tests under a chosen recsql.strategy, and seeing which strata ran with which strategy.

A test (or a whole module, through `pytestmark`) marked `@under("local", "decomposed", ...)` runs once per
strategy named, with the `strategy` fixture of conftest.py: `SET recsql.strategy` for the test, and the
strata that ran with it.

`SPARK` names both Spark strategies without running a test twice alike: the test runs decomposed, and
once more distributed where a stratum ran decomposed (it has a pivot). A recursion without a pivot runs
distributed under either setting: it runs once (conftest.py's `pytest_runtest_call`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest

from recsql.engine.fixpoint import Fixpoint
from recsql.engine.local.engine import DuckDBEngine
from recsql.engine.local.recursive_query import RecursiveQuery
from recsql.engine.strategies.decomposed import Decomposed
from recsql.engine.strategies.exchanged import Exchanged

SPARK = "spark"  # decomposed, then distributed where a stratum ran decomposed (module docstring)
EVERY_STRATEGY = ("local", SPARK)

EXPLAINED = {  # how EXPLAIN says a recursive stratum runs with each strategy
    "local": "local, in one process",
    "decomposed": "decomposed on Spark (one job",
    "distributed": "distributed on Spark",
}


def under(*strategies: str) -> Callable:
    """Run the test once under each of `strategies` (the `strategy` fixture)."""

    def mark(test: Callable) -> Callable:
        return pytest.mark.usefixtures("strategy")(pytest.mark.strategies(*strategies)(test))

    return mark


def module_under(*strategies: str) -> list:
    """`pytestmark` of a module whose every test runs under each of `strategies`."""
    return [pytest.mark.strategies(*strategies), pytest.mark.usefixtures("strategy")]


def set_strategy(conn, strategy: str) -> None:
    cursor = conn.cursor()
    cursor.execute(f"SET recsql.strategy = {strategy}")
    cursor.close()


@contextlib.contextmanager
def auto_with_local_rows(conn, bound: int) -> Iterator[None]:
    """recsql.strategy = auto and recsql.local_rows = `bound` inside the block (as before after it)."""
    previous = conn.session.settings.strategy
    set_strategy(conn, "auto")
    cursor = conn.cursor()
    cursor.execute(f"SET recsql.local_rows = {bound}")
    try:
        yield
    finally:
        set_strategy(conn, previous)
        cursor.execute("SET recsql.local_rows = 10000000")
        cursor.close()


class Runs(list):
    """The relations of each recursive stratum that ran with `strategy` on `conn`, in order; `others`: those
    that ran with another strategy."""

    def __init__(self, conn, strategy: str):
        super().__init__()
        self.conn = conn
        self.strategy = strategy
        self.others: list[tuple[str, ...]] = []

    def start_again(self, strategy: str) -> None:
        """Count afresh, under `strategy` now."""
        self.clear()
        self.others.clear()
        self.strategy = strategy
        set_strategy(self.conn, strategy)

    def record(self, strategy: str, relations: tuple[str, ...]) -> None:
        (self if strategy == self.strategy else self.others).append(relations)


@contextlib.contextmanager
def counting_runs(conn, monkeypatch, strategy: str) -> Iterator[Runs]:
    """SET recsql.strategy = `strategy` inside the block (the previous one again after it); yields the
    strata that ran, by strategy (a fixpoint or a recursive query in DuckDB, on its own or printed into the
    query reading it, is local, on Spark distributed; a decomposed stratum runs its fixpoints inside Spark's
    workers, and so does a distributed one run as one job)."""
    runs = Runs(conn, strategy)
    run_fixpoint, run_decomposed, run_query = Fixpoint.run, Decomposed.run, RecursiveQuery.run
    checked_query = RecursiveQuery.checked

    def fixpoint(self, *args, **kwargs):
        runs.record("local" if isinstance(self.engine, DuckDBEngine) else "distributed", self.stratum.relations)
        return run_fixpoint(self, *args, **kwargs)

    def decomposed(self):
        runs.record("distributed" if isinstance(self, Exchanged) else "decomposed", self.stratum.relations)
        return run_decomposed(self)

    def recursive_query(self, *args, **kwargs):
        runs.record("local", self.stratum.relations)
        return run_query(self, *args, **kwargs)

    def printed_into_its_reader(self, *args, **kwargs):
        query = checked_query(self, *args, **kwargs)
        if query is not None:
            runs.record("local", self.stratum.relations)
        return query

    monkeypatch.setattr(Fixpoint, "run", fixpoint)
    monkeypatch.setattr(RecursiveQuery, "run", recursive_query)
    monkeypatch.setattr(RecursiveQuery, "checked", printed_into_its_reader)
    monkeypatch.setattr(Decomposed, "run", decomposed)
    previous = conn.session.settings.strategy
    set_strategy(conn, strategy)
    try:
        yield runs
    finally:
        set_strategy(conn, previous)
