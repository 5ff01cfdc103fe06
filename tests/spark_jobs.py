"""Counting the Spark jobs a query runs."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def job_group(conn, group: str) -> Iterator[list[int]]:
    """Spark's jobs inside the block go in the job group `group` (which must be new); the list yielded holds
    their ids once the block ends."""
    context = conn.spark_session.sparkContext
    context.setJobGroup(group, group)
    jobs: list[int] = []
    try:
        yield jobs
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
        jobs.extend(context.statusTracker().getJobIdsForGroup(group))


def spark_jobs(conn, sql: str, group: str, parameters=None) -> int:
    """The number of Spark jobs `sql` runs (counted in the job group `group`, which must be new)."""
    with job_group(conn, group) as jobs:
        cursor = conn.cursor()
        cursor.execute(sql, parameters)
        assert cursor.fetchall()
    return len(jobs)
