"""What a reader of a managed table sees: one version's Parquet files (`DataFile`) and schema (`Snapshot`),
read as Arrow; and rows as the table's files store them (timestamps as UTC instants), for the writers."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from recsql.errors import DataError


@dataclass(frozen=True)
class DataFile:
    path: str  # absolute
    size: int
    rows: int


@dataclass(frozen=True)
class Snapshot:
    """One version of a table: what every reader of that version sees."""

    root: str
    version: int
    schema: StructType
    files: tuple[DataFile, ...]
    part: str = ""  # names a subset of the version's files (see restricted)

    @property
    def key(self) -> str:
        """Names this version of this table among all tables and versions (for caches)."""
        return f"{self.root}@{self.version}"

    @property
    def identity(self) -> str:
        """Names what is read: this version, or the part of it `restricted` made."""
        return self.key + self.part

    def restricted(self, files: tuple[DataFile, ...]) -> Snapshot:
        """The same version reduced to some of its files."""
        names = hashlib.sha1("|".join(file.path for file in files).encode()).hexdigest()[:16]
        return Snapshot(self.root, self.version, self.schema, files, f"#{names}")

    @property
    def bytes(self) -> int:
        return sum(file.size for file in self.files)

    @property
    def rows(self) -> int:
        """From the log's statistics (or, for a file written without them, its Parquet footer)."""
        return sum(file.rows if file.rows >= 0 else pq.read_metadata(file.path).num_rows for file in self.files)

    @property
    def arrow_schema(self) -> pa.Schema:
        return storage_schema(self.schema)

    def read_arrow(self, file_column: str | None = None) -> pa.Table:
        """The rows as Arrow, read from the Parquet files in this process; with `file_column`, a last
        column holding each row's file."""
        schema = self.arrow_schema
        if file_column is None:
            if not self.files:
                return schema.empty_table()
            return pq.ParquetDataset([file.path for file in self.files], schema=schema).read()
        schema = schema.append(pa.field(file_column, pa.string()))
        parts = []
        for file in self.files:
            rows = pq.read_table(file.path, schema=self.arrow_schema)
            parts.append(rows.append_column(file_column, pa.repeat(pa.scalar(file.path), rows.num_rows)))
        return pa.concat_tables(parts) if parts else schema.empty_table()


def storage_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema of a table's files: Delta stores a TIMESTAMP as an instant (UTC)."""
    return to_arrow_schema(schema, timezone="UTC")


def stored_rows(data: pa.Table, schema: StructType, timezone: Callable[[], str]) -> pa.Table:
    """Rows (in the table's column order) as its files store them, and as they read back; a DataError
    naming the column whose type cannot hold a value."""
    arrow_schema = storage_schema(schema)
    columns = []
    for i, field in enumerate(schema.fields):
        try:
            columns.append(stored_column(data.column(i), arrow_schema.field(i).type, timezone))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as error:
            raise DataError(f"column '{field.name}' ({field.dataType.simpleString()}): {error}") from None
    return pa.Table.from_arrays(columns, schema=arrow_schema)


def stored_column(column: pa.ChunkedArray, target: pa.DataType, timezone: Callable[[], str]) -> pa.ChunkedArray:
    """A column cast to the type its file stores, a timestamp without a time zone taken in `timezone()`."""
    if pa.types.is_timestamp(target) and target.tz and pa.types.is_timestamp(column.type) and not column.type.tz:
        column = pc.assume_timezone(column, timezone())
    return column.cast(target)


def parquet_files(directory: Path) -> list[DataFile]:
    """The Parquet files a writer (Spark) left in a directory, with their row counts (from the footers)."""
    return [
        DataFile(str(path), path.stat().st_size, pq.read_metadata(str(path)).num_rows)
        for path in sorted(Path(directory).rglob("*.parquet"))
        if not path.name.startswith((".", "_"))
    ]
