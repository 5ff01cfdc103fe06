"""Tables over files (CSV, JSON, Parquet, ORC) read in this process, with the column types and values Spark
gives them, so that a plan evaluated here needs no Spark to read its tables.

Each reader covers the part of its format where it is sure to agree with Spark: values whose meaning it
knows, options it implements, layouts it reads the same way. Anything else raises `Refused` saying
why, and the table is read by Spark instead; a table is never read differently from Spark.
"""

from __future__ import annotations

from pyspark.sql.types import StructType

from recsql.catalog.readers import columnar, csv, json
from recsql.catalog.readers.common import FileTable, Refused, data_files, with_spark_types

READERS = {"csv": csv.load, "json": json.load, "parquet": columnar.load_parquet, "orc": columnar.load_orc}


def load(format: str, path: str, options: dict[str, str], declared: StructType | None, timezone: str) -> FileTable:
    """The rows of the files at `path` read as Spark reads `format` with these options (lower-case
    keys), under the declared schema or the one Spark would infer; timestamps without a zone are in
    `timezone`."""
    if format not in READERS:
        raise Refused(f"format {format}")
    schema, table = READERS[format](data_files(path), options, declared, timezone)
    return FileTable(schema, with_spark_types(table, schema))


__all__ = ["FileTable", "Refused", "load"]
