"""Spark's settings before Spark runs: the value a session started now would have for the few settings
recsql reads without it (the session time zone and ANSI mode, which decide what an expression means in
the local evaluator; the shuffle partitions, which the optimizer's costs use).

A setting comes from Spark's defaults file (`spark-defaults.conf` in `$SPARK_CONF_DIR`, or in the `conf`
directory of Spark's home) or else from Spark's own default. The session time zone is Spark's default
only in name: it is the JVM's default zone, which recsql works out as the JVM does (`$TZ`, else the
zone /etc/localtime links to) and gives to Spark when it starts, so that Spark and the local evaluator
cannot disagree.
"""

from __future__ import annotations

import datetime
import functools
import os
from pathlib import Path

TIME_ZONE = "spark.sql.session.timeZone"
DRIVER_MEMORY = "spark.driver.memory"
MEMORY_SHARE = 4  # an embedded driver may take a quarter of the machine's memory (Spark's default: 1 GiB)
ZONEINFO = "zoneinfo/"


def value(key: str) -> str | None:
    """What Spark would have for `key` given no setting of its own: its defaults file, else its default."""
    configured = defaults_file().get(key)
    if configured is not None:
        return configured
    builtin = BUILTIN.get(key)
    return builtin() if builtin is not None else None


def configured(key: str, settings: dict[str, str]) -> bool:
    """Whether `settings` (a session's own) or Spark's defaults file set `key`."""
    return key in settings or key in defaults_file()


def driver_memory() -> str:
    """The heap of an embedded driver, which also runs every task of a local master: a quarter of this
    machine's memory, at least Spark's 1 GiB (1 GiB cannot collect a result of some tens of millions of
    rows, a size recsql gives to Spark because it is past recsql.local_rows)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError):
        return "1g"
    return f"{max(1024, total // MEMORY_SHARE // (1 << 20))}m"


@functools.cache
def defaults_file() -> dict[str, str]:
    """The settings of Spark's defaults file (read once per process: Spark reads it once per JVM)."""
    directory = os.environ.get("SPARK_CONF_DIR") or str(Path(spark_home()) / "conf")
    path = Path(directory) / "spark-defaults.conf"
    settings = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    for line in lines:
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        key, _, rest = text.replace("\t", " ").partition(" ")
        settings[key] = rest.strip()
    return settings


def spark_home() -> str:
    home = os.environ.get("SPARK_HOME")
    if home:
        return home
    import pyspark

    return str(Path(pyspark.__file__).parent)


def local_time_zone() -> str:
    """The zone a JVM started now takes as its default: `$TZ`, else the zone /etc/localtime links to,
    else the current offset from UTC (a zone Spark takes as `+02:00`)."""
    zone = os.environ.get("TZ", "").removeprefix(":")
    if zone:
        return zone
    try:
        target = os.path.realpath("/etc/localtime")
    except OSError:
        target = ""
    if ZONEINFO in target:
        return target.split(ZONEINFO, 1)[1].removeprefix("posix/").removeprefix("right/")
    offset = datetime.datetime.now().astimezone().utcoffset() or datetime.timedelta()
    minutes = int(offset.total_seconds() // 60)
    return "UTC" if minutes == 0 else f"{'+' if minutes > 0 else '-'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def ansi_default() -> str:
    """Spark 4's default: ANSI mode on unless the environment says otherwise."""
    return os.environ.get("SPARK_ANSI_SQL_MODE", "true").lower()


BUILTIN = {
    TIME_ZONE: local_time_zone,
    "spark.sql.ansi.enabled": ansi_default,
    "spark.sql.shuffle.partitions": lambda: "200",
}
