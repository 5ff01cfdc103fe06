"""Timing helpers: medians of repeated runs, and a plain-text report of ratios."""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def median_time(run: Callable[[], Any], repeat: int = 3) -> tuple[float, Any]:
    """The median wall time of `repeat` runs of `run`, and the result of the last one."""
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def report(title: str, rows: list[tuple[str, str]]) -> str:
    width = max(len(label) for label, _ in rows)
    lines = [title, "-" * len(title)]
    lines += [f"{label.ljust(width)}  {value}" for label, value in rows]
    return "\n".join(lines)
