"""Relation names that say which data of a table a statement reads: a version of it (time travel), or its
rows with the file each comes from (what DELETE, UPDATE and MERGE rewrite). The translator and the
optimizer see them as ordinary names; the catalog reads what they name."""

from __future__ import annotations

from translator.scope import INTERNAL_COLUMN_PREFIX

VERSION_MARK = "@"  # `t@3`: version 3 of table t, as a relation name (time travel)
FILES_MARK = "#files"  # `t#files`: table t with a last column naming the file of each row (DELETE, UPDATE)
FILE_COLUMN = INTERNAL_COLUMN_PREFIX + "file"


def version_name(base: str, version: int | None) -> str:
    """The relation name of a table's version (`t@3`), or of its current one (`t`)."""
    return base if version is None else f"{base}{VERSION_MARK}{version}"


def split_version(name: str) -> tuple[str, int | None, bool]:
    """`t@3` → ('t', 3, False); `t` → ('t', None, False); `t#files` → ('t', None, True)."""
    name = name.lower()
    files = name.endswith(FILES_MARK)
    base, mark, version = name.removesuffix(FILES_MARK).partition(VERSION_MARK)
    return base, int(version) if mark else None, files
