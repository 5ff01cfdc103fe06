"""A client process of a Spark Connect server, for tests/test_spark_connect.py: a Connect session the user
made, adopted by recsql (connect(spark=...), recsql.sql), answers as DataFrames of that session, and the
errors of a stopped session and of a server that is not there.

    python tests/connect_frames.py URL OUT_DIR UNREACHABLE_URL

Prints `@@ ` and one JSON line: {"written": {strategy: pairs}, "fetched": pairs, "stopped": [class,
message], "stopped since": [class, message], "unreachable": [class, message], "query error": [class,
message], "after errors": count}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's recsql, wherever run from

import pandas as pd
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

import recsql

CLOSURE = """WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM user_edges
UNION SELECT tc.src, e.dst FROM tc JOIN user_edges e ON tc.dst = e.src) SELECT src, dst FROM tc"""
EDGES = [(1, 2), (2, 3), (3, 1), (5, 6)]


def outcome(call) -> list:
    try:
        call()
        return ["no error", ""]
    except recsql.Error as error:
        return [type(error).__name__, str(error)]


def main(url: str, out: str, unreachable: str) -> None:
    spark = SparkSession.builder.remote(url).getOrCreate()
    spark.createDataFrame(pd.DataFrame(EDGES, columns=["src", "dst"])).createOrReplaceTempView("user_edges")
    result: dict = {"written": {}}
    for strategy in ("local", "decomposed", "distributed"):
        recsql.sql(f"SET recsql.strategy = {strategy}", spark=spark)
        path = f"{out}/{strategy}"
        recsql.sql(CLOSURE, spark=spark).write.parquet(path)
        table = pq.read_table(path)
        result["written"][strategy] = sorted(zip(table["src"].to_pylist(), table["dst"].to_pylist()))
    conn = recsql.connect(spark=spark, warehouse=f"{out}/warehouse")
    frame = conn.cursor().execute(CLOSURE + " ORDER BY src, dst").fetchdf()
    result["fetched"] = [list(row) for row in frame.itertuples(index=False, name=None)]
    conn.close()
    result["query error"] = outcome(lambda: recsql.sql("SELECT * FROM no_such_table", spark=spark))
    result["unreachable"] = outcome(lambda: recsql.connect(spark=SparkSession.builder.remote(unreachable).create()))
    stopped = SparkSession.builder.remote(url).create()
    stopped.stop()
    result["stopped"] = outcome(lambda: recsql.sql("SELECT 1", spark=stopped))
    used = SparkSession.builder.remote(url).create()
    recsql.sql("SET recsql.spark = always", spark=used)
    recsql.sql("SELECT 1", spark=used).collect()
    used.stop()
    result["stopped since"] = outcome(lambda: recsql.sql("SELECT 2", spark=used))
    result["after errors"] = spark.range(3).count()
    print("@@ " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
