"""How the tasks of a one-job strategy (decomposed, exchanged) return their parts of a fixpoint.

Each task's output ends with one row of its statistics (iterations, facts, or the error that failed it)
in columns of their own. Its facts come before it, as rows of the job's output (which Spark then keeps
in a checkpoint), or, where the tasks share this machine's files (a local master), in a Parquet file of
the part's own in a directory the result is then read from. On a 22-million-fact closure, Spark took
3-6 s to turn the parts' Arrow batches into its rows and keep them in a local checkpoint; writing them
as Parquet took 0.3-0.6 s per part, and reading them back is Spark's vectorized Parquet scan.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from statistics import mean

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Row
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    AtomicType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegralType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from recsql.engine.local.database import first_line
from recsql.engine.local.exchange import Stopped
from recsql.engine.progress import Progress
from recsql.errors import Error, OperationalError, error_class

# a part's statistics row (null in its facts' rows): its iterations, facts, the new facts and the time so far
# after each iteration (for EXPLAIN ANALYZE); a failed part's statistics row names its error
ITERATIONS, FACTS, FAILURE, HISTORY = (
    "recsql_part_iterations",
    "recsql_part_facts",
    "recsql_part_failure",
    "recsql_part_history",
)
STATISTICS = (ITERATIONS, FACTS, FAILURE, HISTORY)
STEP = StructType(
    [StructField("iteration", LongType()), StructField("facts", LongType()), StructField("elapsed", DoubleType())]
)
STATISTICS_FIELDS = (
    StructField(ITERATIONS, LongType()),
    StructField(FACTS, LongType()),
    StructField(FAILURE, StringType()),
    StructField(HISTORY, ArrayType(STEP)),
)
STATISTICS_SCHEMA = to_arrow_schema(StructType(list(STATISTICS_FIELDS)))
STOPPED = f"{Stopped.__name__}: "  # the failure of a part stopped because another part failed

# Parquet files without this key are read under spark.sql.parquet.datetimeRebaseModeInRead, which by
# default fails on dates before 1582; with it, as written (the proleptic Gregorian calendar, as Arrow's)
SPARK_VERSION_KEY = b"org.apache.spark.version"
FILE_TYPES = (
    BooleanType,
    IntegralType,
    FloatType,
    DoubleType,
    DecimalType,
    StringType,
    BinaryType,
    DateType,
    TimestampType,
    TimestampNTZType,
)


@dataclass(frozen=True)
class PartOutput:
    """What a task yields for its part: its facts (of `schema`) as rows, or, with `directory`, in a
    Parquet file there; then its statistics row. Pickled to the Python workers."""

    schema: pa.Schema  # the facts, or what `reduce` makes of them
    directory: str | None = None  # where each part writes its facts, one file each
    reduce: Callable[[pa.Table], pa.Table] | None = None  # the facts to an aggregate's partial rows (reduction.py)

    def batches(
        self, result: pa.Table, iterations: int, part: int, history: Sequence[Progress] = ()
    ) -> Iterator[pa.RecordBatch]:
        """A part's facts (or their partial aggregates) and its statistics row (`history`: its fixpoint's
        progress, iteration by iteration)."""
        try:
            facts = (result if self.reduce is None else self.reduce(result)).cast(self.schema)
        except Error as error:
            yield self.failure(error)
            return
        if self.directory is None:
            output = self.output_schema()
            for batch in facts.to_batches():
                nothing = [pa.nulls(batch.num_rows, field.type) for field in STATISTICS_SCHEMA]
                yield pa.RecordBatch.from_arrays([*batch.columns, *nothing], schema=output)
        else:
            try:
                self.write(facts, part)
            except OSError as error:
                yield self.failure(
                    OperationalError(
                        f"a part of the fixpoint could not write its facts in {self.directory} ({error}): on a "
                        "cluster the warehouse must be a directory every executor sees at the same path"
                    )
                )
                return
        yield self.statistics(iterations, result.num_rows, None, history)

    def failure(self, error: Exception) -> pa.RecordBatch:
        """The statistics row of a part whose evaluation failed: the error travels as data, since Spark
        reports a failed task's exception only as text (and a failed barrier stage not even so). An error
        that is not recsql's is a bug: InternalError. A subclass travels as the PEP 249 class it is one of."""
        if isinstance(error, Stopped):
            failure = STOPPED + error.message
        elif isinstance(error, Error):
            kind = next(kind for kind in type(error).__mro__ if error_class(kind.__name__) is kind)
            failure = f"{kind.__name__}: {error.message}"
        else:
            failure = f"InternalError: a Spark task failed: {type(error).__name__}: {first_line(error)}"
        return self.statistics(0, 0, failure)

    def statistics(
        self, iterations: int, facts: int, failure: str | None, history: Sequence[Progress] = ()
    ) -> pa.RecordBatch:
        no_fact = [pa.nulls(1, field.type) for field in self.rows()]
        steps = [
            {"iteration": event.iteration, "facts": event.delta_rows, "elapsed": event.elapsed} for event in history
        ]
        statistics = [
            pa.array([iterations], pa.int64()),
            pa.array([facts], pa.int64()),
            pa.array([failure], pa.string()),
            pa.array([steps], STATISTICS_SCHEMA.field(HISTORY).type),
        ]
        return pa.RecordBatch.from_arrays([*no_fact, *statistics], schema=self.output_schema())

    def rows(self) -> pa.Schema:
        """The facts' columns of the output rows: none when the facts go to files."""
        return self.schema if self.directory is None else pa.schema([])

    def output_schema(self) -> pa.Schema:
        return pa.schema([*self.rows(), *STATISTICS_SCHEMA])

    def write(self, facts: pa.Table, part: int) -> None:
        """The part's file, made visible complete (a rename), once per part whatever the attempt."""
        assert self.directory is not None
        import pyspark

        path = os.path.join(self.directory, f"part-{part:05d}.parquet")
        hidden = os.path.join(self.directory, f".part-{part:05d}-{os.getpid()}.tmp")  # Spark skips dot files
        metadata = {**(facts.schema.metadata or {}), SPARK_VERSION_KEY: pyspark.__version__.encode()}
        pq.write_table(facts.replace_schema_metadata(metadata), hidden)
        os.replace(hidden, path)


def storable_in_files(schema: StructType) -> bool:
    """Whether Parquet holds every column of `schema` as Spark reads it back."""
    return all(file_type(field.dataType) for field in schema.fields)


def file_type(data_type: DataType) -> bool:
    if isinstance(data_type, ArrayType):
        return file_type(data_type.elementType)
    if isinstance(data_type, MapType):
        return file_type(data_type.keyType) and file_type(data_type.valueType)
    if isinstance(data_type, StructType):
        return storable_in_files(data_type)
    return isinstance(data_type, AtomicType) and isinstance(data_type, FILE_TYPES)


def parts_progress(
    relations: tuple[str, ...], statistics: Sequence[Row], elapsed: float, before: float = 0.0
) -> list[Progress]:
    """The progress of a fixpoint run by parts, iteration by iteration, from the parts' statistics rows: the
    new facts of all parts, at the time the slowest part had taken; the last iteration at the job's own
    time (`elapsed`). `before`: the time of an evaluation the parts went on from. Parts without exit facts
    run no iteration: with none, the exit rules derived nothing."""
    facts: dict[int, int] = {} if statistics else {0: 0}
    seconds: dict[int, float] = {}
    for row in statistics:
        for step in row[HISTORY] or ():
            facts[step["iteration"]] = facts.get(step["iteration"], 0) + step["facts"]
            seconds[step["iteration"]] = max(seconds.get(step["iteration"], 0.0), step["elapsed"])
    events, total, last = [], 0, max(facts, default=0)
    for iteration in sorted(facts):
        total += facts[iteration]
        at = elapsed if iteration == last else min(seconds[iteration], elapsed)
        new = {name: facts[iteration] for name in relations}
        events.append(Progress(relations, iteration, facts[iteration], total, before + at, new))
    return events


def raise_failure(failures: Iterable[str | None]) -> None:
    """Raise an error a part reported, as the recsql exception class it was raised as: one that
    failed before one that only stopped because another did."""
    reported = sorted(
        (failure for failure in failures if failure is not None), key=lambda failure: failure.startswith(STOPPED)
    )
    if reported:
        kind, _, message = reported[0].partition(": ")
        raise error_class(kind)(message)


def parts_balance(relations: tuple[str, ...], statistics: Sequence[Row]) -> str | None:
    """EXPLAIN ANALYZE's line on how evenly the parts shared the work: the facts of the largest part, and
    (where every part timed its own fixpoint, as decomposed parts do) the time of the longest, each
    against the mean; None for fewer than two parts."""
    facts = [row[FACTS] for row in statistics]
    if len(facts) < 2:
        return None
    line = (
        f"{', '.join(relations)}: {len(facts)} parts, facts per part: largest {max(facts):,}, mean {mean(facts):,.0f}"
    )
    times = [row[HISTORY][-1]["elapsed"] for row in statistics if row[HISTORY]]
    if len(times) == len(facts):
        line += (
            f"; time per part: longest {max(times):.3f} s, mean {mean(times):.3f} s ({max(times) / mean(times):.2f}x)"
        )
    return line
