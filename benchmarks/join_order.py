"""A three-way join written in a bad order: recsql (System R join order) against the same text in spark.sql.

    python -m benchmarks.join_order [--rows 1000000] [--keys 20000] [--repeat 3]

`a` and `b` are large and share a key with few distinct values, so joining them first (the written order,
which Spark keeps) makes a large intermediate result; `c` is small and the filter on it keeps one row,
so starting from `c` keeps every intermediate result small. Both engines read the same Parquet files in
the same Spark session.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import recsql
from benchmarks.timing import median_time, report

QUERY = "SELECT count(*) AS n, sum(a.x) AS total FROM a JOIN b ON a.k = b.k JOIN c ON b.j = c.j WHERE c.name = 'n7'"


def tables(rows: int, keys: int, seed: int = 1) -> dict[str, pa.Table]:
    generator = np.random.default_rng(seed)
    groups = 1000
    return {
        "a": pa.table(
            {
                "k": generator.integers(0, keys, rows, dtype=np.int32),
                "x": generator.integers(0, 100, rows, dtype=np.int32),
            }
        ),
        "b": pa.table(
            {
                "k": generator.integers(0, keys, rows, dtype=np.int32),
                "j": generator.integers(0, groups, rows, dtype=np.int32),
            }
        ),
        "c": pa.table({"j": np.arange(groups, dtype=np.int32), "name": [f"n{i}" for i in range(groups)]}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as directory, recsql.connect(warehouse=str(Path(directory) / "wh")) as conn:
        cursor = conn.cursor()
        spark = conn.spark_session
        for name, table in tables(args.rows, args.keys).items():
            path = Path(directory) / f"{name}.parquet"
            pq.write_table(table, path)
            cursor.execute(f"CREATE TABLE {name} USING parquet OPTIONS (path '{path}')")
            spark.read.parquet(str(path)).createOrReplaceTempView(name)
            cursor.execute(f"ANALYZE TABLE {name}")
        cursor.execute("EXPLAIN " + QUERY)
        order = next(row[0] for row in cursor.fetchall() if row[0].strip().startswith("-- cost") and "a(" in row[0])
        recsql_time, recsql_rows = median_time(lambda: (cursor.execute(QUERY), cursor.fetchall())[1], args.repeat)
        spark_time, spark_rows = median_time(lambda: [tuple(r) for r in spark.sql(QUERY).collect()], args.repeat)
    assert recsql_rows == spark_rows, f"answers differ: {recsql_rows} vs {spark_rows}"
    print(
        report(
            f"three-way join, written order a ⋈ b ⋈ σ(c): {args.rows:,} rows in a and b, {args.keys:,} keys "
            f"(medians of {args.repeat})",
            [
                ("recsql join order", order.strip().removeprefix("-- ")),
                ("recsql", f"{recsql_time:.3f} s"),
                ("spark.sql, same text", f"{spark_time:.3f} s"),
                ("time: spark.sql / recsql", f"{spark_time / recsql_time:.1f}x"),
                ("answer", str(recsql_rows)),
            ],
        )
    )


if __name__ == "__main__":
    main()
