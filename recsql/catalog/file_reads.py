"""Files read in this process (recsql.catalog.readers), kept per version of the files so that a table read by one
statement is not read again by the next while its files stay the same; a refusal is kept too, for
Spark to read those files without asking the readers again. The rows kept are bounded in bytes: the
least recently read go first."""

from __future__ import annotations

import json
from collections import OrderedDict

from pyspark.sql.types import StructType

from recsql.catalog.readers import FileTable, Refused, load
from recsql.storage.files import data_version

BUDGET_BYTES = 2 << 30


class FileReads:
    def __init__(self, budget: int = BUDGET_BYTES):
        self.budget = budget
        # by what is read (format, path, options, schema, time zone): the version of the files and the read
        self.kept: OrderedDict[tuple[str, ...], tuple[str, FileTable | Refused]] = OrderedDict()

    def load(
        self, format: str, path: str, options: dict[str, str], declared: StructType | None, timezone: str
    ) -> FileTable | Refused:
        """The files' rows and schema as Spark gives them, or why they are Spark's to read."""
        key = (format, path, json.dumps(options, sort_keys=True), declared.json() if declared else "", timezone)
        version = data_version(path)
        known = self.kept.get(key)
        if known is not None and known[0] == version:
            self.kept.move_to_end(key)
            return known[1]
        try:
            result: FileTable | Refused = load(format, path, options, declared, timezone)
        except Refused as refused:
            result = refused
        self.kept[key] = (version, result)
        self.kept.move_to_end(key)
        self.evict()
        return result

    def evict(self) -> None:
        def size() -> int:
            return sum(read.table.nbytes for _, read in self.kept.values() if isinstance(read, FileTable))

        while len(self.kept) > 1 and size() > self.budget:
            self.kept.popitem(last=False)
