"""The optimizer's statistics kept in the warehouse (`statistics/<name>.json`), so that a table is not
read again to estimate every query over it. Each file names the data version it describes: statistics
of another version are not used."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from recsql.statistics import TableStatistics
from recsql.storage.format import write_atomically
from recsql.storage.names import STATE_MARK, VERSION_MARK


class StatisticsFiles:
    def __init__(self, directory: Path):
        self.directory = directory

    def path(self, name: str) -> Path:
        return self.directory / f"{name.lower()}.json"

    def read(self, name: str, version: Callable[[], str]) -> TableStatistics | None:
        """The statistics kept for `name` if they describe the data version `version()` (asked only when
        there are some: it may have to look at the table's files)."""
        try:
            data = json.loads(self.path(name).read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        return TableStatistics.from_json(data) if data.get("version") == version() else None

    def write(self, name: str, gathered: TableStatistics) -> None:
        """Keep statistics, replacing those kept before in one rename (another process may be reading them)."""
        write_atomically(self.path(name), json.dumps(gathered.to_json()))

    def remove(self, name: str) -> None:
        """Forget the statistics of a dropped table, of its versions, and of a materialized view's relations."""
        kept_by = [
            *self.directory.glob(f"{name}{VERSION_MARK}*.json"),
            *self.directory.glob(f"{name}{STATE_MARK}*.json"),
        ]
        for kept in [self.path(name), *kept_by]:
            kept.unlink(missing_ok=True)
