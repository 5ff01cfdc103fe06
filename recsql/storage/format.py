"""The warehouse's layout version, and the upgrade of warehouses of an earlier layout when they are opened.

Format 1 (recsql 0.1): a managed table is a directory of Parquet files named by its catalog entry, with
no log. Format 2: a managed table is a Delta Lake table under tables/ (the entry names its directory).
"""

from __future__ import annotations

import json
import os
import uuid
import warnings
from pathlib import Path

from pyspark.sql.types import StructType

from recsql.errors import OperationalError, WarehouseUpgraded
from recsql.storage.delta import ManagedTable
from recsql.storage.snapshots import parquet_files

FORMAT = 2


def upgrade(warehouse: Path, metadata: Path) -> None:
    """A warehouse of format 1 becomes format 2: each managed table gets a Delta log whose version 0 lists
    its files, where they are. Said in a warning."""
    mark = warehouse / "format.json"
    try:
        found = json.loads(mark.read_text())["format"]
    except FileNotFoundError:
        found = 1
    except (json.JSONDecodeError, KeyError):
        raise OperationalError(f"the warehouse {warehouse} has an unreadable format.json") from None
    if found > FORMAT:
        raise OperationalError(
            f"the warehouse {warehouse} is of format {found}, written by a newer recsql "
            f"(this one reads format {FORMAT} and older): upgrade recsql"
        )
    if found == FORMAT:
        return
    upgraded = []
    for path in sorted(metadata.glob("*.json")):
        entry = json.loads(path.read_text())
        if entry.get("kind") != "table" or entry.get("format") == "delta":
            if "statistics" in entry:  # format 2 keeps statistics beside the entries, not in them
                del entry["statistics"]
                write_atomically(path, json.dumps(entry))
            continue
        root = Path(entry["path"])
        if not (root / "_delta_log").exists():
            ManagedTable.create(
                entry["name"],
                root,
                StructType.fromJson(entry["schema"]),
                parquet_files(root),
                "CREATE TABLE",
                "(upgraded from a recsql warehouse of format 1)",
            )
        managed = {"name": entry["name"], "kind": "table", "path": os.path.relpath(root, warehouse)}
        write_atomically(path, json.dumps(managed))
        upgraded.append(entry["name"])
    write_atomically(mark, json.dumps({"format": FORMAT}))
    if upgraded:
        warnings.warn(
            f"recsql: the warehouse {warehouse} was upgraded to format {FORMAT}: the tables "
            f"{', '.join(upgraded)} are now Delta Lake tables",
            WarehouseUpgraded,
            stacklevel=4,
        )


def write_atomically(target: Path, text: str) -> None:
    """Replace a small file by one rename: readers see the old text or the new, never a part."""
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    temporary.write_text(text)
    os.replace(temporary, target)
