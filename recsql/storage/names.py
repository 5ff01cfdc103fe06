"""Relation names that say which data of a table a statement reads: a version of it (time travel), its
rows with the file each comes from (what DELETE, UPDATE and MERGE rewrite), or a relation a materialized
view stores. The translator and the
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


STATE_MARK = "$"  # `v$r0`: a relation a materialized view v stores (its answer or what maintaining it needs)


def state_name(view: str, part: str) -> str:
    return f"{view}{STATE_MARK}{part}"


def split_state(base: str) -> tuple[str, str | None]:
    """`v$r0` → ('v', 'r0'); `t` → ('t', None)."""
    view, mark, part = base.partition(STATE_MARK)
    return view, part if mark else None
