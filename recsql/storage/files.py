"""Reading a table's files: a managed table's snapshot or an external table's files as a Spark DataFrame,
and what tells whether an external table's files changed (no log says it)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from urllib.parse import unquote, urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from recsql.storage.entries import Entry
from recsql.storage.names import FILE_COLUMN
from recsql.storage.snapshots import Snapshot


def snapshot_frame(spark: SparkSession, snapshot: Snapshot, with_files: bool) -> DataFrame:
    """A snapshot's files as a DataFrame (Spark reads the Parquet files the version lists); `with_files`
    adds the column naming each row's file."""
    if not snapshot.files:
        return spark.createDataFrame([], with_file_column(snapshot.schema) if with_files else snapshot.schema)
    frame = spark.read.schema(snapshot.schema).parquet(*[file.path for file in snapshot.files])
    return frame.select("*", F.col("_metadata.file_path").alias(FILE_COLUMN)) if with_files else frame


def read_external(spark: SparkSession, entry: Entry, struct: StructType | None) -> DataFrame:
    """An external table's files as a DataFrame; with no schema given, Spark infers it (a job)."""
    reader = spark.read
    if struct is not None:
        reader = reader.schema(struct)
    return reader.options(**spark_options(entry, struct)).format(entry.format).load(entry.path)


def spark_options(entry: Entry, struct: StructType | None) -> dict[str, str]:
    """The options an external table's files are read with (by Spark, or as Spark would): its own,
    and for a CSV table without a schema, types inferred."""
    options = dict(entry.options)
    if entry.format == "csv" and struct is None:
        options.setdefault("inferschema", "true")
    return options


def with_file_column(schema: StructType) -> StructType:
    return StructType([*schema.fields, StructField(FILE_COLUMN, StringType())])


def local_path(path: str) -> str:
    """A file column's value as a path: Spark gives a URI (file:/tmp/a%20b/part.parquet)."""
    return unquote(urlparse(path).path) if path.startswith("file:") else path


def data_files(path: str) -> list[Path]:
    root = Path(path)
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith((".", "_")))


def data_version(path: str) -> str:
    """A fingerprint of an external table's files (names, sizes, modification times)."""
    parts = []
    for file in data_files(path):
        status = file.stat()
        parts.append(f"{file.name}:{status.st_size}:{status.st_mtime_ns}")
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]
