"""What the readers share: the refusal that hands files to Spark, the table they make, the files they read."""

from __future__ import annotations

import gzip
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


COMPRESSED = (".bz2", ".deflate", ".lz4", ".snappy", ".zst", ".zstd", ".xz", ".br")  # codecs Spark may know


def read_bytes(file: Path) -> bytes:
    """A text file's bytes, gunzipped as Spark does for `.gz`; other compression is refused."""
    if file.suffix.lower() in COMPRESSED:
        raise Refused(f"compressed file {file.name}")
    data = file.read_bytes()
    return gzip.decompress(data) if file.suffix.lower() == ".gz" else data


def with_spark_types(table: pa.Table, schema: StructType) -> pa.Table:
    """Arrow columns as the local evaluator holds Spark's types (timestamps as UTC instants, ...)."""
    target = to_arrow_schema(schema, timezone="UTC")
    columns = [
        column.cast(field.type) if column.type != field.type else column for column, field in zip(table.columns, target)
    ]
    return pa.table(columns, schema=target)


def refuse_options(options: dict[str, str], known: set[str], format: str) -> None:
    unknown = sorted(set(options) - known)
    if unknown:
        raise Refused(f"{format} option {', '.join(unknown)}")
