"""What a statement's commit leaves the next statements: the rows of the version it made, kept in memory
when the statement knows them all (the next statements, and the views reading the table, then do not
read them back from its files), and the statistics of the version before, carried to it when the
statement added or deleted a tenth of the rows or fewer (PostgreSQL analyzes a table again only past
such a share; the optimizer's estimates need no more)."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from recsql.statistics import TableStatistics
from recsql.storage.delta import ManagedTable
from recsql.storage.kept_rows import KeptRows
from recsql.storage.snapshots import DataFile, Snapshot, stored_rows
from recsql.storage.statistics_files import StatisticsFiles
from recsql.storage.writes import Rows

CARRIED_SHARE = 0.1  # the largest change, as a share of a table's rows, its statistics are carried over


class AfterCommits:
    def __init__(self, kept_rows: KeptRows[pa.Table], statistics_files: StatisticsFiles, timezone: Callable[[], str]):
        self.kept_rows = kept_rows
        self.statistics_files = statistics_files
        self.timezone = timezone

    def appended(self, name: str, table: ManagedTable, before: Snapshot, rows: Rows, written: int) -> None:
        self.keep(name, table, before, lambda: [self.kept_rows.find(before.identity), rows], written)

    def rewritten(
        self,
        name: str,
        table: ManagedTable,
        before: Snapshot,
        removed: tuple[DataFile, ...],
        parts: list[Rows],
        written: int,
        operation: str,
    ) -> None:
        whole = set(removed) == set(before.files)
        deleted = before.restricted(tuple(removed)).rows - written if operation == "DELETE" else None
        self.keep(name, table, before, lambda: parts if whole else [None], deleted)

    def keep(
        self,
        name: str,
        table: ManagedTable,
        before: Snapshot,
        parts: Callable[[], list[Rows | None]],
        changed: int | None,
    ) -> None:
        """After a statement's commit to table `name` made the version following `before` (no other
        writer's in between): `parts()` the rows of the new version, all of them (None: not known);
        `changed` the rows it added or deleted (None: it updated some)."""
        after = table.snapshot()
        if after.version != before.version + 1:
            return
        known = parts()
        if all(isinstance(part, pa.Table) for part in known):
            rows = [stored_rows(part, after.schema, self.timezone) for part in known]
            self.kept_rows.put(after.identity, pa.concat_tables(rows) if rows else after.arrow_schema.empty_table())
        carried = self.statistics_files.read(name, lambda: before.key) if changed is not None else None
        if carried is not None and changed <= carried.rows * CARRIED_SHARE:
            self.statistics_files.write(name, TableStatistics(after.rows, carried.columns, after.key))
