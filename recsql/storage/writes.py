"""Writing a statement's rows as files of a managed table, committed at once or not at all."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from recsql.errors import ProgrammingError
from recsql.storage.delta import ManagedTable
from recsql.storage.snapshots import DataFile, parquet_files

Rows = pa.Table | DataFrame  # a statement's rows: Arrow computed in this process, or Spark's


def write_rows(
    table: ManagedTable,
    parts: list[Rows],
    schema: StructType,
    commit: Callable[[list[DataFile]], None],
    timezone: Callable[[], str],
) -> int:
    """Write rows as files of `table` and commit them with `commit(files)`; the files of a failed write
    or commit are removed. Rows computed in this process are written with Arrow (timestamps without a time
    zone taken in `timezone()`); Spark's by Spark, in parallel, into a staging directory of the table.
    Returns the rows written."""
    files: list[DataFile] = []
    staging: list[Path] = []
    try:
        for rows in parts:
            if isinstance(rows, pa.Table):
                files += table.write_arrow(checked_width(table.name, rows, schema), schema, timezone)
                continue
            staging.append(table.staging_directory())
            renamed = checked_width(table.name, rows, schema).toDF(*schema.fieldNames())
            columns = [renamed[f"`{f.name}`"].cast(f.dataType) for f in schema.fields]
            renamed.select(*columns).write.parquet(str(staging[-1]))
            files += parquet_files(staging[-1])
        commit(files)
    except BaseException:
        table.discard(files, staging)
        raise
    return sum(file.rows for file in files)


def row_count(rows: Rows) -> int:
    """How many rows there are (a Spark job for Spark's)."""
    return rows.num_rows if isinstance(rows, pa.Table) else rows.count()


def checked_width(name: str, rows: Rows, schema: StructType) -> Rows:
    """The rows, if they have as many columns as table `name`."""
    width = rows.num_columns if isinstance(rows, pa.Table) else len(rows.columns)
    if width != len(schema.fields):
        raise ProgrammingError(f"'{name}' has {len(schema.fields)} columns but the rows written have {width}")
    return rows
