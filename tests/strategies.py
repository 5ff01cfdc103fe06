"""Running tests under a chosen recsql.strategy, and counting the strata that ran it."""

from __future__ import annotations

import contextlib
from typing import Iterator


def set_strategy(conn, strategy: str) -> None:
    cursor = conn.cursor()
    cursor.execute(f"SET recsql.strategy = {strategy}")
    cursor.close()


@contextlib.contextmanager
def counting_runs(conn, monkeypatch, evaluator: type, strategy: str) -> Iterator[list]:
    """SET recsql.strategy = `strategy` inside the block (the previous one again after it); yields the
    relations of each stratum `evaluator.run` evaluated, in order."""
    runs = []
    run = evaluator.run

    def counted(self):
        runs.append(self.stratum.relations)
        return run(self)

    monkeypatch.setattr(evaluator, "run", counted)
    previous = conn.session.settings.strategy
    set_strategy(conn, strategy)
    try:
        yield runs
    finally:
        set_strategy(conn, previous)
