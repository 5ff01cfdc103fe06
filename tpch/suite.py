"""A TPC benchmark as the runner sees it: its tables, the generator that writes them as Parquet files (one
per table), its queries, and the reference each answer is checked against."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Suite:
    name: str  # as reports name it ("TPC-H")
    package: str  # the Python package holding its queries and runner (`python -m <package>.run`)
    tables: tuple[str, ...]
    generator: tuple[str, ...]  # the generator's command (a console script) and its arguments before the scale
    extra: str  # the pip extra that installs the generator
    queries_directory: Path  # qNN.sql files (qNNa.sql, qNNb.sql for variants)
    reference: str  # what --check compares answers with: "duckdb" or "spark" (spark.sql on the same files)

    def queries(self) -> dict[str, str]:
        """The query texts by name ("1", "14a"), in order."""
        files = sorted(self.queries_directory.glob("q*.sql"), key=lambda path: (int(path.stem[1:3]), path.stem))
        return {path.stem[1:].lstrip("0"): path.read_text() for path in files}


TPCH = Suite(
    "TPC-H",
    "tpch",
    ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"),
    ("tpchgen-cli", "parquet"),
    "tpch",
    Path(__file__).with_name("queries"),
    "duckdb",
)
