"""Progress of a recursive evaluation, as every strategy reports it to a listener (the shell's progress
line, EXPLAIN ANALYZE's trace)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Progress:
    """One iteration of a recursive component (0: its exit rules), as reported to a progress listener,
    with those before it derived ahead together (the rounds of one query): reported once, as they come."""

    relations: tuple[str, ...]
    iteration: int
    delta_rows: int
    total_rows: int
    elapsed: float  # since the component started
    facts: Mapping[str, int] = field(default_factory=dict)  # new facts per relation in this iteration
    earlier: tuple[Mapping[str, int], ...] = ()  # new facts of the iterations reported with this one, in order

    def summary(self) -> str:
        """`tc · iteration 12 · +1,204 new · 48,113 rows`."""
        return " · ".join(
            [
                ", ".join(self.relations),
                f"iteration {self.iteration}",
                f"+{self.delta_rows:,} new",
                f"{self.total_rows:,} rows",
            ]
        )


ProgressListener = Callable[[Progress], None]


class StatementProgress:
    """A progress listener that is also told when each statement ends (a display closing its bar)."""

    def __call__(self, event: Progress) -> None:
        raise NotImplementedError

    def finished(self, error: BaseException | None) -> None:
        """The statement ended: successfully (None) or with `error`."""
