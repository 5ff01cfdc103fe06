"""Data a session registers (`Connection.register`): queryable as tables by this session only, hiding a
stored table of the same name, never written to the warehouse."""

from __future__ import annotations

from typing import Iterator, Mapping

import pyarrow as pa
from pyspark.sql import DataFrame

from recsql import statistics
from recsql.statistics import TableStatistics


class Registered(Mapping[str, DataFrame]):
    """The registered DataFrames by (lower-case) name, with what the catalog keeps of each: a version
    (registering a name again is new data), its statistics, and its Arrow data when it was given as Arrow
    (then read without a Spark job)."""

    def __init__(self) -> None:
        self.frames: dict[str, DataFrame] = {}
        self.statistics: dict[str, TableStatistics] = {}
        self.arrow: dict[str, pa.Table] = {}
        self.registrations = 0  # numbers each add() call: a version of registered data
        self.versions: dict[str, str] = {}

    def __getitem__(self, name: str) -> DataFrame:
        return self.frames[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.frames)

    def __len__(self) -> int:
        return len(self.frames)

    def add(self, name: str, frame: DataFrame, data: pa.Table | None) -> None:
        """Register a DataFrame under `name`; when its Arrow data is at hand, statistics come from it."""
        self.frames[name] = frame
        self.registrations += 1
        self.versions[name] = f"registered {self.registrations}"
        self.statistics.pop(name, None)
        self.arrow.pop(name, None)
        if data is not None:
            self.statistics[name] = statistics.from_arrow(data)
            self.arrow[name] = data

    def version(self, name: str) -> str:
        return self.versions[name]

    def remove(self, name: str) -> None:
        """DROP TABLE of registered data (the stored table it hid, if any, is seen again)."""
        del self.frames[name]
        self.statistics.pop(name, None)
        self.arrow.pop(name, None)

    def table_statistics(self, name: str) -> TableStatistics:
        """Statistics of registered data, gathered on first use (one Spark job unless given as Arrow)."""
        if name not in self.statistics:
            self.analyze(name)
        return self.statistics[name]

    def analyze(self, name: str) -> TableStatistics:
        """Gather the statistics of registered data now (ANALYZE TABLE), with one Spark job."""
        self.statistics[name] = statistics.from_spark(self.frames[name])
        return self.statistics[name]
