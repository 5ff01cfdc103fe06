"""A recursion of 1,000 iterations runs to completion: lineage is cut, nothing overflows."""

from __future__ import annotations


def test_thousand_iterations(cur):
    cur.execute(
        "WITH RECURSIVE counter(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM counter WHERE n < 1000) "
        "SELECT count(*), sum(n), max(n) FROM counter"
    )
    assert cur.fetchall() == [(1000, sum(range(1, 1001)), 1000)]
