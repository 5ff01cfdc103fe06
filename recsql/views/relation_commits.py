"""Committing the relations a maintenance changed to their tables of the view's directory (an append when a
relation only gained facts, else its facts replaced), and keeping their rows, statistics and closure indexes
for the next statements."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from pyspark.sql.types import StructField, StructType

from recsql import statistics
from recsql.catalog.catalog import Catalog
from recsql.statistics import TableStatistics
from recsql.storage.delta import ManagedTable
from recsql.storage.names import state_name, version_name
from recsql.storage.snapshots import Snapshot
from recsql.storage.writes import write_rows
from recsql.views.closure_memory import ClosuresInMemory
from recsql.views.results import ChangedRelation
from recsql.views.stored import Reflected


class RelationCommits:
    """The commits of view `view` (directory `root`) after a maintenance from `reflected` (None: the view
    computed anew); `output`: the relation that is the view's answer, its columns named `output_names`."""

    def __init__(
        self,
        catalog: Catalog,
        view: str,
        root: Path,
        reflected: Reflected | None,
        closures: ClosuresInMemory,
        output: str,
        output_names: list[str],
    ):
        self.catalog = catalog
        self.view = view
        self.root = root
        self.reflected = reflected
        self.closures = closures
        self.output = output
        self.output_names = output_names

    def commit(self, results: dict[str, ChangedRelation], parts: dict[str, str], statement: str) -> dict[str, int]:
        """Each stored relation's new version: a commit where it changed (an append when it only gained
        facts, else its facts replaced), else the version it had."""
        versions = dict(self.reflected.versions) if self.reflected is not None else {}
        done: set[str] = set()
        for name, result in results.items():
            part = parts[name]
            if part in done:
                continue
            done.add(part)
            if self.reflected is not None and result.plus is None and result.minus is None:
                continue
            versions[part] = self.write(part, result, name == self.output or parts[self.output] == part, statement)
        return versions

    def write(self, part: str, result: ChangedRelation, output: bool, statement: str) -> int:
        """Commit a relation's new facts to its table; the new version. Its rows and statistics are kept
        for the next statements (the statistics carried from the version before, rows counted again)."""
        root = self.root / part
        fresh = self.reflected is None or not (root / "_delta_log").exists()
        table = (
            ManagedTable(state_name(self.view, part), root)
            if fresh
            else self.catalog.managed(state_name(self.view, part))
        )  # the catalog's: it keeps the log it has read
        if fresh:
            names = self.output_names if output else [f"c{i}" for i in range(result.facts.num_columns)]
            schema = StructType([StructField(n, t) for n, t in zip(names, result.types)])
            root.mkdir(parents=True, exist_ok=True)
            write_rows(
                table,
                [result.facts],
                schema,
                lambda files: ManagedTable.create(table.name, root, schema, files, "MAINTAIN", statement),
                self.catalog.timezone,
            )
        else:
            latest = table.snapshot()
            schema = latest.schema
            if result.minus is None and latest.version == self.reflected.versions[part]:
                write_rows(
                    table,
                    [result.plus],
                    schema,
                    lambda files: table.append(files, schema, "MAINTAIN", statement),
                    self.catalog.timezone,
                )
            else:  # facts lost, or a commit no entry names (its process died before naming it): replaced
                write_rows(
                    table,
                    [result.facts],
                    schema,
                    lambda files: table.commit(latest, files, latest.files, schema, "MAINTAIN", statement),
                    self.catalog.timezone,
                )
        snapshot = table.snapshot()
        self.keep(part, snapshot, result.facts)
        index = self.closures.settled(result.index)
        if index is not None:
            self.catalog.kept_indexes.put(snapshot.identity, index)
        return snapshot.version

    def keep(self, part: str, snapshot: Snapshot, facts: pa.Table) -> None:
        rows = facts.rename_columns(snapshot.arrow_schema.names).cast(snapshot.arrow_schema)
        self.catalog.kept_rows.put(snapshot.identity, rows)
        before = None
        if self.reflected is not None and part in self.reflected.versions:
            before = self.catalog.cached_statistics(
                version_name(state_name(self.view, part), self.reflected.versions[part])
            )
        gathered = (
            statistics.from_arrow(rows, snapshot.key)
            if before is None
            else TableStatistics(rows.num_rows, before.columns, snapshot.key)
        )
        self.catalog.statistics_files.write(version_name(state_name(self.view, part), snapshot.version), gathered)
