"""A query's answer as the engine hands it to the session: Arrow rows with the names and Spark types of
the output columns."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import DataType


@dataclass(frozen=True)
class Answer:
    names: list[str]
    types: list[DataType]
    table: pa.Table  # columns c0 .. cN

    @classmethod
    def of(cls, frame: DataFrame) -> Answer:
        """Collect a Spark answer (one Spark job)."""
        names = list(frame.columns)
        types = [field.dataType for field in frame.schema.fields]
        table = frame.toDF(*[f"c{i}" for i in range(len(names))]).toArrow()
        return cls(names, types, table)
