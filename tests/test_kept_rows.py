"""The in-memory rows of table versions: least recently used first out, within the byte budget."""

import pyarrow as pa

from recsql.storage.kept_rows import KeptRows


def rows(n: int) -> pa.Table:
    return pa.table({"a": pa.array(range(n), pa.int64())})  # 8 bytes a row


def test_least_recently_used_go_first_past_the_budget():
    kept = KeptRows(budget=250)
    for version in ("v1", "v2", "v3"):
        kept.put(version, rows(10))
    assert kept.get("v1", lambda: rows(0)).num_rows == 10  # used: now the most recent
    kept.put("v4", rows(10))  # 320 bytes: v2 goes
    assert list(kept.kept) == ["v3", "v1", "v4"]
    assert kept.size == sum(table.nbytes for table in kept.kept.values()) == 240


def test_a_version_put_again_counts_once():
    kept = KeptRows(budget=1000)
    for _ in range(5):
        kept.put("v1", rows(20))
    kept.put("v1", rows(10))
    assert kept.size == 80
    assert kept.get("v2", lambda: rows(3)).num_rows == 3 and kept.size == 104


def test_the_newest_stays_even_past_the_budget():
    kept = KeptRows(budget=10)
    kept.put("v1", rows(5))
    kept.put("v2", rows(100))
    assert list(kept.kept) == ["v2"] and kept.size == 800
