"""The catalog: tables and views that persist in a warehouse directory, plus session-registered data.

Layout of the warehouse:

    catalog/<name>.json   one metadata file per table or view (written atomically by rename)
    data/<name>-<id>/     the Parquet files of a managed table; INSERT adds a file

Several processes may share a warehouse: every read looks at the files; what is kept in memory (a
table's Spark view) is kept with the state of the files it was made from and made again when it changes.
Statistics are kept in the metadata file with the version of the data they describe (a fingerprint of
the data files), so a change to the data, by this process or another, makes them stale.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType
from sqlglot import exp

from recsql import statistics
from recsql.errors import ProgrammingError
from recsql.statistics import TableStatistics
from translator import dialect


@dataclass
class Entry:
    name: str
    kind: str  # table | external | view
    schema: dict | None = None  # Spark StructType as JSON
    path: str | None = None
    format: str = "parquet"
    options: dict = field(default_factory=dict)
    sql: str | None = None  # the CREATE VIEW statement
    statistics: dict | None = None  # TableStatistics as JSON, for the data version it names
    inferred_from: str | None = None  # the data version a schema read from the files (not declared) describes

    @property
    def struct(self) -> StructType | None:
        return StructType.fromJson(self.schema) if self.schema else None


def view_query_of(create: exp.Create) -> exp.Expression:
    """The query a CREATE VIEW statement defines; a column list `v(a, b)` renames its columns."""
    query = create.expression
    if isinstance(create.this, exp.Schema):
        columns = [exp.to_identifier(column.name) for column in create.this.expressions]
        alias = exp.TableAlias(this=exp.to_identifier(create.this.this.name), columns=columns)
        query = exp.select("*").from_(exp.Subquery(this=query, alias=alias))
    return query


class Catalog:
    def __init__(self, spark: SparkSession, warehouse: Path):
        self.spark = spark
        self.warehouse = Path(warehouse).expanduser()
        self.metadata = self.warehouse / "catalog"
        self.data = self.warehouse / "data"
        self.metadata.mkdir(parents=True, exist_ok=True)
        self.data.mkdir(parents=True, exist_ok=True)
        self.registered: dict[str, DataFrame] = {}
        self.registered_statistics: dict[str, TableStatistics] = {}
        self.registered_arrow: dict[str, pa.Table] = {}
        self.registrations = 0  # numbers each register() call: a version of registered data
        self.registered_version: dict[str, str] = {}
        self.views: dict[str, tuple[str, str]] = {}  # table → (the version it was read at, its view)

    # -------------------------------------------------------------- lookups (the translator's view)

    def table_columns(self, name: str) -> tuple[str, ...] | None:
        name = name.lower()
        if name in self.registered:
            return tuple(self.registered[name].columns)
        entry = self.entry(name)
        if entry is None or entry.kind == "view":
            return None
        return tuple(self.struct_of(entry).fieldNames())

    def view_query(self, name: str) -> exp.Expression | None:
        name = name.lower()
        if name in self.registered:
            return None
        entry = self.entry(name)
        if entry is None or entry.kind != "view":
            return None
        return view_query_of(dialect.parse_one(entry.sql))

    def names(self) -> dict[str, str]:
        """Every table and view by name, with its kind: table, external, view, or registered (this
        session's data, which hides a stored table of the same name)."""
        stored = {}
        for path in sorted(self.metadata.glob("*.json")):
            entry = self.entry(path.stem)
            if entry is not None:
                stored[entry.name] = entry.kind
        return dict(sorted({**stored, **dict.fromkeys(self.registered, "registered")}.items()))

    def entry(self, name: str) -> Entry | None:
        path = self.metadata / f"{name.lower()}.json"
        try:
            return Entry(**json.loads(path.read_text()))
        except FileNotFoundError:
            return None

    def dataframe(self, name: str) -> DataFrame:
        name = name.lower()
        if name in self.registered:
            return self.registered[name]
        entry = self.entry(name)
        if entry is None or entry.kind == "view":
            raise ProgrammingError(f"table '{name}' not found")
        return self.read(entry, self.struct_of(entry))

    def view(self, name: str) -> str:
        """The name of a Spark temporary view of a table's current data, for SQL. A view is created once
        per version of the table (its metadata and its files) and kept for the session: a query does not
        pay for reading the table's metadata into Spark again."""
        name = name.lower()
        version = self.registered_version.get(name) if name in self.registered else self.file_version(name)
        known = self.views.get(name)
        if known is not None and known[0] == version:
            return known[1]
        view = f"recsql_table_{name}_{uuid.uuid4().hex[:8]}"
        self.dataframe(name).createOrReplaceTempView(view)
        if known is not None:
            self.spark.catalog.dropTempView(known[1])
        self.views[name] = (version, view)
        return view

    def file_version(self, name: str) -> str:
        """What a stored table is at present: its metadata and the fingerprint of its files."""
        path = self.metadata / f"{name}.json"
        try:
            metadata = path.read_text()
        except FileNotFoundError:
            raise ProgrammingError(f"table '{name}' not found") from None
        entry = Entry(**json.loads(metadata))
        return metadata + (data_version(entry.path) if entry.path else "")

    def read(self, entry: Entry, struct: StructType | None) -> DataFrame:
        """A table's files as a DataFrame; with no schema given, Spark infers it from the files (a job)."""
        reader = self.spark.read
        if struct is not None:
            reader = reader.schema(struct)
        if entry.kind == "table":
            return reader.parquet(entry.path)
        options = dict(entry.options)
        if entry.format == "csv" and struct is None:
            options.setdefault("inferSchema", "true")
        return reader.options(**options).format(entry.format).load(entry.path)

    def struct_of(self, entry: Entry) -> StructType:
        """A table's schema: declared, or inferred from its files and kept in its entry until they change
        (inferring costs Spark jobs: a query must not pay them for every table it reads)."""
        if entry.struct is not None and entry.inferred_from is None:
            return entry.struct
        version = data_version(entry.path)
        if entry.struct is not None and entry.inferred_from == version:
            return entry.struct
        struct = self.read(entry, None).schema
        entry.schema, entry.inferred_from = json.loads(struct.json()), version
        self._write_entry(entry)
        return struct

    def arrow_table(self, name: str) -> pa.Table | None:
        """A table's rows as Arrow without a Spark job: registered Arrow data, or a managed table whose
        Parquet files are small; None otherwise."""
        name = name.lower()
        if name in self.registered:
            return self.registered_arrow.get(name)
        entry = self.entry(name)
        if entry is None or entry.kind != "table" or data_bytes(entry.path) > self.ARROW_STATISTICS_BYTES:
            return None
        return pq.read_table(entry.path, schema=to_arrow_schema(entry.struct))

    def schema(self, name: str) -> StructType:
        """A table's Spark schema (from its catalog entry when it has one: no Spark analysis)."""
        name = name.lower()
        entry = self.entry(name) if name not in self.registered else None
        if entry is not None and entry.kind != "view":
            return self.struct_of(entry)
        return self.dataframe(name).schema

    # -------------------------------------------------------------- statistics (the optimizer's view)

    ARROW_STATISTICS_BYTES = 64 << 20  # managed tables up to this size are read with Arrow, not Spark

    def table_statistics(self, name: str) -> TableStatistics | None:
        """Statistics of a table's current data, gathered on first use and cached per data version."""
        name = name.lower()
        if name in self.registered:
            if name not in self.registered_statistics:
                self.registered_statistics[name] = statistics.from_spark(self.registered[name])
            return self.registered_statistics[name]
        entry = self.entry(name)
        if entry is None or entry.kind == "view":
            return None
        version = data_version(entry.path)
        if entry.statistics and entry.statistics.get("version") == version:
            return TableStatistics.from_json(entry.statistics)
        return self.analyze(name)

    def analyze(self, name: str) -> TableStatistics:
        """Gather a table's statistics now (ANALYZE TABLE) and cache them."""
        name = name.lower()
        if name in self.registered:
            self.registered_statistics[name] = statistics.from_spark(self.registered[name])
            return self.registered_statistics[name]
        entry = self.entry(name)
        if entry is None or entry.kind == "view":
            raise ProgrammingError(f"table '{name}' not found")
        version = data_version(entry.path)
        if entry.kind == "table" and data_bytes(entry.path) <= self.ARROW_STATISTICS_BYTES:
            table = pq.read_table(entry.path, schema=to_arrow_schema(entry.struct))
            gathered = statistics.from_arrow(table, version)
        else:
            gathered = statistics.from_spark(self.dataframe(name), version)
        entry.statistics = gathered.to_json()
        self._write_entry(entry)
        return gathered

    # -------------------------------------------------------------- changes

    def register(self, name: str, frame: DataFrame, data: pa.Table | None = None) -> None:
        """Register a DataFrame under `name`; when its Arrow data is at hand, statistics come from it."""
        name = name.lower()
        self.registered[name] = frame
        self.registrations += 1
        self.registered_version[name] = f"registered {self.registrations}"
        self.registered_statistics.pop(name, None)
        self.registered_arrow.pop(name, None)
        if data is not None:
            self.registered_statistics[name] = statistics.from_arrow(data)
            self.registered_arrow[name] = data

    def create_table(self, name: str, schema: StructType, replace: bool = False) -> None:
        self._check_new(name, replace)
        path = self.data / f"{name.lower()}-{uuid.uuid4().hex[:12]}"
        path.mkdir(parents=True)
        self._write_entry(Entry(name.lower(), "table", json.loads(schema.json()), str(path)))

    def create_table_as(self, name: str, frame: DataFrame, replace: bool = False) -> None:
        self._check_new(name, replace)
        path = self.data / f"{name.lower()}-{uuid.uuid4().hex[:12]}"
        frame.write.parquet(str(path))
        self._write_entry(Entry(name.lower(), "table", json.loads(frame.schema.json()), str(path)))

    def create_external(self, name: str, format: str, path: str, options: dict, schema: StructType | None) -> None:
        self._check_new(name, False)
        if not Path(path).exists():
            raise ProgrammingError(f"path '{path}' of table '{name}' does not exist")
        entry = Entry(name.lower(), "external", json.loads(schema.json()) if schema else None, path, format, options)
        self._write_entry(entry)
        try:
            self.struct_of(entry)  # fail now, not at the first query, if the file cannot be read
        except Exception:
            self._remove_entry(name)
            raise

    def create_view(self, name: str, sql: str, replace: bool = False) -> None:
        self._check_new(name, replace)
        self._write_entry(Entry(name.lower(), "view", sql=sql))

    def insert(self, name: str, table: pa.Table) -> None:
        """Append rows given as an Arrow table whose columns are in the table's order."""
        entry = self._managed(name)
        schema = to_arrow_schema(entry.struct)
        columns = [table.column(i).cast(schema.field(i).type) for i in range(table.num_columns)]
        batch = pa.Table.from_arrays(columns, schema=schema)
        pq.write_table(batch, str(Path(entry.path) / f"part-{uuid.uuid4().hex}.parquet"))

    def insert_frame(self, name: str, frame: DataFrame) -> None:
        entry = self._managed(name)
        fields = entry.struct.fields
        if len(frame.columns) != len(fields):
            raise ProgrammingError(f"'{name}' has {len(fields)} columns but the inserted rows have {len(frame.columns)}")
        renamed = frame.toDF(*[f.name for f in fields])
        renamed.select(*[renamed[f"`{f.name}`"].cast(f.dataType) for f in fields]).write.mode("append").parquet(entry.path)

    def drop(self, name: str, kind: str, if_exists: bool) -> None:
        name = name.lower()
        if kind == "table" and name in self.registered:
            del self.registered[name]
            self.registered_statistics.pop(name, None)
            self.registered_arrow.pop(name, None)
            return
        entry = self.entry(name)
        wanted = {"table": ("table", "external"), "view": ("view",)}[kind]
        if entry is None or entry.kind not in wanted:
            if if_exists:
                return
            raise ProgrammingError(f"{kind} '{name}' not found")
        self._remove_entry(name)
        if entry.kind == "table":
            shutil.rmtree(entry.path, ignore_errors=True)

    # -------------------------------------------------------------- helpers

    def _managed(self, name: str) -> Entry:
        entry = self.entry(name)
        if name.lower() in self.registered or entry is None or entry.kind != "table":
            kind = "a registered table" if name.lower() in self.registered else "not a managed table"
            raise ProgrammingError(f"cannot insert into '{name}': {kind}")
        return entry

    def _check_new(self, name: str, replace: bool) -> None:
        existing = self.entry(name)
        if existing is not None and not replace:
            raise ProgrammingError(f"{existing.kind if existing.kind == 'view' else 'table'} '{name}' already exists")
        if existing is not None and existing.kind == "table":
            shutil.rmtree(existing.path, ignore_errors=True)

    def _write_entry(self, entry: Entry) -> None:
        target = self.metadata / f"{entry.name}.json"
        temporary = self.metadata / f".{entry.name}.{uuid.uuid4().hex}.tmp"
        temporary.write_text(json.dumps(entry.__dict__))
        os.replace(temporary, target)

    def _remove_entry(self, name: str) -> None:
        (self.metadata / f"{name.lower()}.json").unlink(missing_ok=True)


def data_files(path: str) -> list[Path]:
    root = Path(path)
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith((".", "_")))


def data_version(path: str) -> str:
    """A fingerprint of a table's data files (names, sizes, modification times)."""
    parts = []
    for file in data_files(path):
        status = file.stat()
        parts.append(f"{file.name}:{status.st_size}:{status.st_mtime_ns}")
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]


def data_bytes(path: str) -> int:
    return sum(file.stat().st_size for file in data_files(path))

