"""A query's answer as the engine hands it to the session: Arrow rows with the names and Spark types of
the output columns, or, for an answer Spark computed, the rows kept on Spark's executors until asked for."""

from __future__ import annotations

import functools
import io
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import DataType, StructField, StructType

from recsql.engine.columns import column_names
from recsql.spark.session_kinds import arrow_frame


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
        return cls(names, types, frame.toDF(*column_names(len(names))).toArrow())

    @property
    def rows(self) -> int:
        return int(self.table.num_rows)

    def head(self, rows: int) -> pa.Table:
        return self.table.slice(0, rows)

    def batches(self) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
        return self.table.schema, iter(self.table.to_batches())

    def frame(self, spark: SparkSession) -> DataFrame:
        """The rows as a DataFrame of `spark`, named and typed as the answer (sent from this process)."""
        schema = StructType([StructField(name, kind) for name, kind in zip(self.names, self.types)])
        return arrow_frame(spark, self.table.rename_columns(self.names), schema)


class StoredAnswer:
    """An answer Spark computed, checkpointed on its executors (engine.spark.engine.checkpoint): its
    lineage no longer reads the statement's scratch files or the fixpoint's checkpoints, so it outlives the
    statement. Rows reach this process only when asked for; as a DataFrame they never do."""

    def __init__(self, frame: DataFrame):
        self.names = list(frame.columns)
        self.types = [field.dataType for field in frame.schema.fields]
        self.stored = frame.toDF(*column_names(len(self.names)))

    @functools.cached_property
    def table(self) -> pa.Table:
        """The rows collected into this process (one Spark job, reading the stored rows)."""
        return self.stored.toArrow()

    @functools.cached_property
    def rows(self) -> int:
        return self.table.num_rows if "table" in self.__dict__ else self.stored.count()

    def head(self, rows: int) -> pa.Table:
        """The first rows, without collecting the others."""
        if "table" in self.__dict__:
            return self.table.slice(0, rows)
        return self.stored.limit(rows).toArrow()

    def batches(self) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
        """The rows as Arrow batches, streamed partition by partition (a Spark job each, in the answer's
        order): this process holds a partition or two of them at a time, never the whole answer."""
        if "table" in self.__dict__:
            return self.table.schema, iter(self.table.to_batches())
        schema = self.stored.limit(0).toArrow().schema  # the types the rows arrive with, as toArrow's
        encoded = self.stored.mapInArrow(ipc_encoded, "batch binary")
        batches = (
            batch.cast(schema)
            for row in encoded.toLocalIterator(prefetchPartitions=True)
            for batch in pa.ipc.open_stream(row.batch)
        )
        return schema, batches

    def frame(self, spark: SparkSession) -> DataFrame:
        """The stored rows as a DataFrame (of the session that computed them), named as the answer."""
        return self.stored.toDF(*self.names)


def ipc_encoded(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Each batch of a partition as one value: its Arrow IPC stream (run by Spark's Python workers)."""
    for batch in batches:
        sink = io.BytesIO()
        with pa.ipc.new_stream(sink, batch.schema) as writer:
            writer.write_batch(batch)
        yield pa.RecordBatch.from_pydict({"batch": [sink.getvalue()]})
