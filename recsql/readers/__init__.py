"""Tables over files (CSV, JSON, Parquet, ORC) read in this process, with the column types and values Spark
gives them, so that a plan evaluated here needs no Spark to read its tables.

Each reader covers the part of its format where it is sure to agree with Spark: values whose meaning it
knows, options it implements, layouts it reads the same way. Anything else raises `Refused` saying
why, and the table is read by Spark instead; a table is never read differently from Spark.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType


class Refused(Exception):
    """The files are outside what the reader knows Spark to read the same way: Spark reads them."""


@dataclass(frozen=True)
class FileTable:
    """A table's rows as Arrow (in the form the local evaluator takes: timestamps as UTC instants),
    with the schema Spark gives them."""

    schema: StructType
    table: pa.Table


def load(format: str, path: str, options: dict[str, str], declared: StructType | None, timezone: str) -> FileTable:
    """The rows of the files at `path` read as Spark reads `format` with these options (lower-case
    keys), under the declared schema or the one Spark would infer; timestamps without a zone are in
    `timezone`."""
    from recsql.readers import columnar, csv, json

    readers = {"csv": csv.load, "json": json.load, "parquet": columnar.load_parquet, "orc": columnar.load_orc}
    if format not in readers:
        raise Refused(f"format {format}")
    files = data_files(path)
    schema, table = readers[format](files, options, declared, timezone)
    return FileTable(schema, conform(table, schema))


def data_files(path: str) -> list[Path]:
    """The files Spark reads at `path`: the file itself, or a directory's files, hidden ones (`.`, `_`)
    left out; a directory with subdirectories (partitions, which Spark turns into columns) is refused."""
    root = Path(path)
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise Refused(f"no file at {path}")
    entries = [entry for entry in sorted(root.iterdir()) if not entry.name.startswith((".", "_"))]
    if any(entry.is_dir() for entry in entries):
        raise Refused(f"{path} has subdirectories")
    return entries


def conform(table: pa.Table, schema: StructType) -> pa.Table:
    """Arrow columns as the local evaluator holds Spark's types (timestamps as UTC instants, ...)."""
    target = to_arrow_schema(schema, timezone="UTC")
    columns = [column.cast(field.type) if column.type != field.type else column
               for column, field in zip(table.columns, target)]
    return pa.table(columns, schema=target)


def refuse_options(options: dict[str, str], known: set[str], format: str) -> None:
    unknown = sorted(set(options) - known)
    if unknown:
        raise Refused(f"{format} option {', '.join(unknown)}")
