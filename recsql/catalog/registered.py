"""Data a session registers (`Connection.register`): queryable as tables by this session only, hiding a
stored table of the same name, never written to the warehouse."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from recsql import statistics
from recsql.statistics import TableStatistics

FrameOf = Callable[[pa.Table], DataFrame]  # Arrow data as a Spark DataFrame (starts Spark if need be)


class Registered(Mapping[str, DataFrame]):
    """The registered data by (lower-case) name: a Spark DataFrame, or Arrow data (read without Spark,
    and made a DataFrame only when a plan runs on Spark), with what the catalog keeps of each: a version
    (registering a name again is new data) and its statistics."""

    def __init__(self, frame_of: FrameOf) -> None:
        self.frame_of = frame_of
        self.frames: dict[str, DataFrame] = {}
        self.statistics: dict[str, TableStatistics] = {}
        self.arrow: dict[str, pa.Table] = {}
        self.registrations = 0  # numbers each add() call: a version of registered data
        self.versions: dict[str, str] = {}

    def __getitem__(self, name: str) -> DataFrame:
        if name not in self.frames:
            self.frames[name] = self.frame_of(self.arrow[name])
        return self.frames[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.versions)

    def __len__(self) -> int:
        return len(self.versions)

    def __contains__(self, name: object) -> bool:
        return name in self.versions

    def add(self, name: str, frame: DataFrame | None, data: pa.Table | None) -> None:
        """Register a Spark DataFrame, or Arrow data (whose statistics are gathered at once)."""
        self.remove(name)
        self.registrations += 1
        self.versions[name] = f"registered {self.registrations}"
        if frame is not None:
            self.frames[name] = frame
        if data is not None:
            self.statistics[name] = statistics.from_arrow(data)
            self.arrow[name] = data

    def version(self, name: str) -> str:
        return self.versions[name]

    def arrow_table(self, name: str) -> pa.Table | str:
        return self.arrow.get(name, "a registered Spark DataFrame")

    def schema(self, name: str) -> StructType:
        """The Spark schema of registered data (of Arrow data: the one Spark gives it)."""
        if name in self.arrow:
            return from_arrow_schema(self.arrow[name].schema)
        return self[name].schema

    def remove(self, name: str) -> None:
        """DROP TABLE of registered data (the stored table it hid, if any, is seen again)."""
        for kept in (self.frames, self.statistics, self.arrow, self.versions):
            kept.pop(name, None)

    def table_statistics(self, name: str) -> TableStatistics:
        """Statistics of registered data, gathered on first use (one Spark job unless given as Arrow)."""
        if name not in self.statistics:
            self.analyze(name)
        return self.statistics[name]

    def analyze(self, name: str) -> TableStatistics:
        """Gather the statistics of registered data now (ANALYZE TABLE)."""
        data = self.arrow.get(name)
        self.statistics[name] = statistics.from_arrow(data) if data is not None else statistics.from_spark(self[name])
        return self.statistics[name]
