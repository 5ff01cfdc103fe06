"""Single-source reachability with and without magic sets, and against DuckDB.

    python -m benchmarks.magic_sets [--nodes 2500] [--edges 5000] [--repeat 3]

The graph is a seeded Erdős–Rényi graph whose full transitive closure has millions of rows. recsql runs
the query with `SET recsql.magic = on` and `off`; DuckDB runs the same recursive CTE, which computes
the whole closure and filters it afterwards. Facts derived come from EXPLAIN ANALYZE; times are
medians of `--repeat` runs of the plain query.
"""

from __future__ import annotations

import argparse
import re
import tempfile

import duckdb

import recsql
from benchmarks.graphs import erdos_renyi
from benchmarks.timing import median_time, report
from recsql.optimizer.context import Magic

QUERY = """
WITH RECURSIVE reach(x, y) AS (
    SELECT src, dst FROM edge
    UNION
    SELECT reach.x, edge.dst FROM reach JOIN edge ON reach.y = edge.src)
SELECT y FROM reach WHERE x = {source}
"""


def derived_facts(cursor, sql: str) -> int:
    cursor.execute("EXPLAIN ANALYZE " + sql)
    text = "\n".join(row[0] for row in cursor.fetchall())
    return int(re.search(r"total derived facts: (\d+)", text).group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=2500)
    parser.add_argument("--edges", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--source", type=int, default=0)
    args = parser.parse_args()

    edges = erdos_renyi(args.nodes, args.edges)
    sql = QUERY.format(source=args.source)
    duck = duckdb.connect()
    duck.register("edge", edges)
    closure = duck.execute(QUERY.replace("WHERE x = {source}", "").replace("SELECT y", "SELECT count(*)")).fetchone()[0]
    duck_time, duck_rows = median_time(lambda: duck.execute(sql).fetchall(), args.repeat)

    with tempfile.TemporaryDirectory() as warehouse, recsql.connect(warehouse=warehouse) as conn:
        cursor = conn.cursor()
        cursor.execute("CREATE TABLE edge (src INT, dst INT)")
        cursor.executemany("INSERT INTO edge VALUES (?, ?)", list(zip(*[c.to_pylist() for c in edges.columns])))
        cursor.execute("ANALYZE TABLE edge")
        results = {}
        for magic in (Magic.ON, Magic.OFF):
            cursor.execute(f"SET recsql.magic = {magic}")
            facts = derived_facts(cursor, sql)  # also the warm-up run
            seconds, rows = median_time(lambda: (cursor.execute(sql), cursor.fetchall())[1], args.repeat)
            results[magic] = (seconds, facts, sorted(rows))
    on, off = results[Magic.ON], results[Magic.OFF]
    assert on[2] == off[2] == sorted(duck_rows), "answers differ"
    print(
        report(
            f"single-source reachability: {args.nodes} nodes, {edges.num_rows} edges, closure {closure:,} rows, "
            f"answer {len(on[2]):,} rows (medians of {args.repeat})",
            [
                ("recsql, magic on", f"{on[0]:.3f} s, {on[1]:,} facts derived"),
                ("recsql, magic off", f"{off[0]:.3f} s, {off[1]:,} facts derived"),
                ("DuckDB recursive CTE, filter outside", f"{duck_time:.3f} s"),
                ("facts: off / on", f"{off[1] / on[1]:.0f}x"),
                ("time: off / on", f"{off[0] / on[0]:.1f}x"),
                ("time: DuckDB / recsql magic on", f"{duck_time / on[0]:.2f}x"),
            ],
        )
    )


if __name__ == "__main__":
    main()
