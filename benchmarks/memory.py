"""Peak memory of a run: the resident set of this process and its children (Spark's JVM runs as one),
sampled in a background thread."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import psutil


def tree_rss() -> int:
    process = psutil.Process()
    total = process.memory_info().rss
    for child in process.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            total += child.memory_info().rss
    return total


def peak_growth(
    run: Callable[[], Any], interval: float = 0.02, measure: Callable[[], int] = tree_rss
) -> tuple[Any, int]:
    """The result of `run` and how far resident memory (`measure`: of the process tree by default) rose
    above its level at the start, at its peak (bytes)."""
    baseline = peak = measure()
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(interval):
            peak = max(peak, measure())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        result = run()
    finally:
        done.set()
        sampler.join()
    return result, max(peak, measure()) - baseline
