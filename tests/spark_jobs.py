"""Counting the Spark jobs a query runs."""

from __future__ import annotations


def spark_jobs(conn, sql: str, group: str, parameters=None) -> int:
    """The number of Spark jobs `sql` runs (counted in the job group `group`, which must be new)."""
    context = conn.spark_session.sparkContext
    context.setJobGroup(group, sql)
    try:
        cursor = conn.cursor()
        cursor.execute(sql, parameters)
        assert cursor.fetchall()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    return len(context.statusTracker().getJobIdsForGroup(group))
