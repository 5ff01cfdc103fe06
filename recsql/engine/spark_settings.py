"""The Spark settings that decide what an expression means, which the local evaluator follows too."""

from __future__ import annotations

from dataclasses import dataclass

ANSI = "spark.sql.ansi.enabled"


@dataclass(frozen=True)
class SparkSettings:
    """Under ANSI mode (Spark's default) a bad cast or a division by zero is an error; timestamps are read
    in the session time zone."""

    ansi: bool = True
    timezone: str = "UTC"
