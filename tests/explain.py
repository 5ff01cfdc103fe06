"""EXPLAIN output as text, under a chosen recsql.magic setting (restored afterwards)."""

from __future__ import annotations


def explain(cur, sql: str, params=None, magic: str = "auto", analyze: bool = False) -> str:
    cur.execute(f"SET recsql.magic = {magic}")
    try:
        cur.execute(("EXPLAIN ANALYZE " if analyze else "EXPLAIN ") + sql, params)
        return "\n".join(row[0] for row in cur.fetchall())
    finally:
        cur.execute("SET recsql.magic = auto")
