"""The shape of the code, checked: small modules, imports that flow one way (no cycle between modules,
imports made only for type checking included), and a local evaluator that does not know Spark."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("recsql", "translator", "shell")
MAX_LINES = 500


def modules() -> dict[str, Path]:
    """Every module of the packages, by dotted name (a package by its own name)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project's modules that `name` imports, wherever the import statement is (a function, an
    `if TYPE_CHECKING:` block)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def test_no_module_is_longer_than_the_limit():
    long = {name: n for name, path in modules().items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_no_import_cycle():
    found = modules()
    graph = {name: imports(name, path, set(found)) for name, path in found.items()}
    cycles = []
    state: dict[str, str] = {}  # name -> "open" while on the path, "done" after

    def visit(name: str, path: list[str]) -> None:
        state[name] = "open"
        for target in sorted(graph[name]):
            if state.get(target) == "open":
                cycles.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in cycles)


def test_the_local_evaluator_does_not_import_spark():
    """Importing any module of the local evaluator (and everything it imports) loads no part of Spark."""
    local = sorted(name for name in modules() if name.startswith("recsql.engine.local"))
    assert len(local) > 1
    check = "; ".join(f"import {name}" for name in local) + (
        "; import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))"
    )
    loaded = subprocess.run([sys.executable, "-c", check], cwd=ROOT, capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]", loaded.stdout


# The layers, lowest first: a module may import modules of its own layer and of the layers below it, never of
# a layer above. A module belongs to the layer of the longest prefix listed.
LAYERS: list[tuple[str, ...]] = [
    ("translator",),
    ("recsql.errors", "recsql.statistics", "recsql.analysis"),
    ("recsql.optimizer",),
    ("recsql.settings", "recsql.parameters"),
    ("recsql.planner",),
    ("recsql.cancellation", "recsql.spark"),
    # the engine: what is computed (sql/), the loop written once over an engine, the types derived in Python,
    # the local evaluator (knowing nothing of Spark), the Spark evaluator, the strategies over both
    (
        "recsql.engine.sql",
        "recsql.engine.columns",
        "recsql.engine.progress",
        "recsql.engine.spark_settings",
        "recsql.engine.relation_types",
        "recsql.engine.scratch",
        "recsql.engine.trace",
        "recsql.engine.answer",
    ),
    ("recsql.engine.states", "recsql.engine.fixpoint"),
    ("recsql.engine.types",),
    ("recsql.engine.local",),
    ("recsql.engine.spark",),
    ("recsql.engine.strategies",),
    ("recsql.engine.spark.runner",),
    ("recsql.engine.executor", "recsql.engine"),
    ("recsql.storage",),
    ("recsql.catalog",),
    ("recsql.services",),
    ("recsql.views",),
    ("recsql.statements",),
    ("recsql.session",),
    ("recsql.notebook",),
    ("recsql.cursor", "recsql.connection", "recsql"),
    ("recsql.frames", "recsql.alchemy"),
    ("shell",),
]


def layer_of(name: str) -> int:
    """The index in LAYERS of the longest listed prefix of `name`."""
    best = (-1, -1)
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best[0]:
                best = (len(prefix), index)
    assert best[1] >= 0, f"module {name} is in no layer of LAYERS"
    return best[1]


def test_imports_follow_the_layers():
    found = modules()
    against = []
    for name, path in found.items():
        for target in imports(name, path, set(found)):
            if layer_of(target) > layer_of(name):
                against.append(f"{name} -> {target}")
    assert not against, "imports against the layering (lower layer importing a higher one): " + "; ".join(
        sorted(against)
    )
