"""TPC data (TPC-H by default; a Suite says which): generated as one Parquet file per table, kept per scale
factor, and made queryable in recsql, in Spark SQL and in DuckDB from the same files."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
from pyspark.sql import SparkSession

import recsql
from tpch.suite import TPCH, Suite


def generate(scale: float, root: Path, suite: Suite = TPCH) -> Path:
    """The directory holding the tables at `scale` under `root`, generated on first use."""
    target = root / f"sf{scale:g}"
    if all((target / f"{table}.parquet").exists() for table in suite.tables):
        return target
    name, *arguments = suite.generator
    command = shutil.which(name) or str(Path(sys.executable).with_name(name))
    if not Path(command).exists():
        raise RuntimeError(f"{name} is not installed: pip install -e '.[{suite.extra}]'")
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run([command, *arguments, "-s", f"{scale:g}", "--output-dir", str(target)], check=True)
    return target


def paths(directory: Path, suite: Suite = TPCH) -> dict[str, Path]:
    """Each table's Parquet file."""
    return {table: directory / f"{table}.parquet" for table in suite.tables}


def create_tables(connection: recsql.Connection, directory: Path, suite: Suite = TPCH) -> None:
    """Declare each table in recsql over its Parquet file (CREATE TABLE ... USING parquet)."""
    cursor = connection.cursor()
    for table, path in paths(directory, suite).items():
        cursor.execute(f"CREATE TABLE {table} USING parquet OPTIONS (path '{path}')")


def analyze_tables(connection: recsql.Connection, suite: Suite = TPCH) -> None:
    """Gather the optimizer's statistics of each table now (ANALYZE TABLE), as a database loading them would."""
    cursor = connection.cursor()
    for table in suite.tables:
        cursor.execute(f"ANALYZE TABLE {table}")


def spark_views(spark: SparkSession, directory: Path, suite: Suite = TPCH) -> None:
    """Each table as a Spark temporary view over its Parquet file, for `spark.sql`."""
    for table, path in paths(directory, suite).items():
        spark.read.parquet(str(path)).createOrReplaceTempView(table)


def duckdb_views(directory: Path, suite: Suite = TPCH) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with each table as a view over its Parquet file."""
    connection = duckdb.connect()
    for table, path in paths(directory, suite).items():
        connection.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{path}')")
    return connection
