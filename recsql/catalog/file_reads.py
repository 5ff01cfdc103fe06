"""Files read in this process (recsql.catalog.readers), kept per version of the files so that a table read by one
statement is not read again by the next while its files stay the same; a refusal is kept too, for
Spark to read those files without asking the readers again. The rows kept are bounded in bytes: the
least recently read go first."""

from __future__ import annotations

import json

from pyspark.sql.types import StructType

from recsql.catalog.readers import FileTable, Refused, load
from recsql.storage.bounded_cache import BoundedCache
from recsql.storage.files import data_version

BUDGET_BYTES = 2 << 30

Read = tuple[str, FileTable | Refused]  # the version of the files, and what reading them gave


class FileReads:
    def __init__(self, budget: int = BUDGET_BYTES):
        # by what is read (format, path, options, schema, time zone)
        self.kept: BoundedCache[tuple[str, ...], Read] = BoundedCache(budget, read_bytes)

    def load(
        self, format: str, path: str, options: dict[str, str], declared: StructType | None, timezone: str
    ) -> FileTable | Refused:
        """The files' rows and schema as Spark gives them, or why they are Spark's to read."""
        key = (format, path, json.dumps(options, sort_keys=True), declared.json() if declared else "", timezone)
        version = data_version(path)

        def read() -> Read:
            try:
                return version, load(format, path, options, declared, timezone)
            except Refused as refused:
                return version, refused

        return self.kept.get(key, read, lambda known: known[0] == version)[1]


def read_bytes(read: Read) -> int:
    """The bytes of the rows a read holds (a refusal holds none)."""
    return read[1].table.nbytes if isinstance(read[1], FileTable) else 0
