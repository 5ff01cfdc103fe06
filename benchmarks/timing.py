"""Timing helpers: medians of repeated runs, a plain-text report, and medians saved to a JSON file with
the conditions of their run, so that two runs (two versions of recsql) can be set side by side."""

from __future__ import annotations

import datetime
import json
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import recsql


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


def save_medians(path: str, medians: dict[str, float], conditions: dict[str, Any]) -> None:
    """Write the medians (seconds) and the run conditions, with the commit and the date, to `path`."""
    conditions = {
        **conditions,
        "recsql": recsql.__file__,
        "commit": recsql_commit(),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    }
    Path(path).write_text(json.dumps({**medians, "conditions": conditions}, indent=2) + "\n")
    print(f"medians written to {path}")


def recsql_commit() -> str | None:
    """The git commit of the recsql that runs, marked when tracked files differ from it."""
    root = str(Path(recsql.__file__).resolve().parent.parent)
    try:
        commit = git(root, "rev-parse", "HEAD")
        changed = git(root, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + (" (with uncommitted changes)" if changed else "")


def git(root: str, *args: str) -> str:
    return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, check=True).stdout.strip()


def load_medians(path: str) -> tuple[dict[str, float], dict[str, Any]]:
    """The medians and the run conditions of a file written by `save_medians`."""
    data = json.loads(Path(path).read_text())
    conditions = data.pop("conditions", {})
    return data, conditions


def compare_medians(old_path: str, new_path: str, compared: tuple[str, ...]) -> str:
    """A markdown table of two medians files: workload, old and new medians, new/old; then the commits,
    and every condition among `compared` in which the two runs differ."""
    (old, old_conditions), (new, new_conditions) = load_medians(old_path), load_medians(new_path)
    lines = ["| workload | old (s) | new (s) | new/old ratio |", "|---|---:|---:|---:|"]
    for name in list(old) + [name for name in new if name not in old]:
        before, after = old.get(name), new.get(name)
        ratio = f"{after / before:.2f}" if before and after is not None else "n/a"
        cells = [f"{value:.3f}" if value is not None else "n/a" for value in (before, after)]
        lines.append(f"| {name} | {cells[0]} | {cells[1]} | {ratio} |")
    lines.append("")
    for label, conditions in (("old", old_conditions), ("new", new_conditions)):
        lines.append(f"{label}: commit {conditions.get('commit')}, {conditions.get('date')}")
    for key in compared:
        if old_conditions.get(key) != new_conditions.get(key):
            lines.append(f"the runs differ in {key}: {old_conditions.get(key)} (old), {new_conditions.get(key)} (new)")
    return "\n".join(lines)
