"""A client process of a Spark Connect server, for tests/test_spark_connect.py.

    python tests/connect_session.py URL WAREHOUSE DATA_DIR

Checks what a Connect session adds to the suites that run over it: Spark's own names seen through
recsql, settings the session cannot change, errors, cancelling a statement. Prints `@@ ` and one JSON
line: {"view": rows, "path table": rows, "explain": {strategy: text}, "refused": message, "unknown":
[class, message], "cancelled": [class, seconds], "after cancel": count, "written": rows, "registered":
rows, "reached at": address, "through the barrier": rows}.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's recsql, wherever run from

import recsql
from recsql.engine.spark.reachability import CONNECT_HOSTS, coordinator_host

CLOSURE = """WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM {edges}
UNION SELECT tc.src, e.dst FROM tc JOIN {edges} e ON tc.dst = e.src) SELECT src, dst FROM tc ORDER BY src, dst"""
# a distributed fixpoint of many short iterations: long enough to be cancelled while it runs
LONG = """WITH RECURSIVE n(i) AS (SELECT 0 UNION SELECT i + 1 FROM n WHERE i < 100000) SELECT count(*) FROM n"""
CANCEL_AFTER = 3.0  # seconds


def outcome(error: BaseException) -> list:
    return [type(error).__name__, str(error)]


def main(url: str, warehouse: str, data: str) -> None:
    try:
        _ = recsql.connect(remote=url, conf={"spark.executor.memory": "1g"}, warehouse=warehouse).spark_session
        refused = "no error"
    except recsql.ProgrammingError as error:
        refused = str(error)
    conn = recsql.connect(remote=url, warehouse=warehouse)
    spark = conn.spark_session
    spark.createDataFrame([(1, 2), (2, 3), (3, 1), (5, 6)], "src INT, dst INT").createOrReplaceTempView("sv")
    spark.createDataFrame([(10, 11), (11, 12)], "src BIGINT, dst BIGINT").write.parquet(data)
    cursor = conn.cursor()
    result: dict = {"refused": refused}
    for strategy in ("local", "decomposed", "distributed"):
        cursor.execute(f"SET recsql.strategy = {strategy}")
        cursor.execute(CLOSURE.format(edges="sv"))
        result.setdefault("view", {})[strategy] = [list(row) for row in cursor.fetchall()]
        cursor.execute(CLOSURE.format(edges=f"parquet.`{data}`"))
        result.setdefault("path table", {})[strategy] = [list(row) for row in cursor.fetchall()]
        cursor.execute("EXPLAIN " + CLOSURE.format(edges="sv"))
        result.setdefault("explain", {})[strategy] = "\n".join(row[0] for row in cursor.fetchall())
    result["reached at"] = coordinator_host(spark)  # the distributed tasks registered with this process
    CONNECT_HOSTS[spark] = None  # as where the executors cannot reach it: they meet through the barrier
    cursor.execute(CLOSURE.format(edges="sv"))
    result["through the barrier"] = [list(row) for row in cursor.fetchall()]
    del CONNECT_HOSTS[spark]
    try:
        cursor.execute("SELECT * FROM no_such_table")
    except recsql.Error as error:
        result["unknown"] = outcome(error)
    cursor.execute("SET recsql.strategy = distributed")
    threading.Timer(CANCEL_AFTER, conn.cancel).start()
    started = time.monotonic()
    try:
        cursor.execute(LONG)
        result["cancelled"] = ["not cancelled", time.monotonic() - started]
    except recsql.Error as error:
        result["cancelled"] = [type(error).__name__, time.monotonic() - started]
    cursor.execute("SELECT count(*) FROM sv")  # the session is usable after a cancel
    result["after cancel"] = cursor.fetchall()[0][0]
    # a managed table written from a fixpoint computed on the server, changed, and read back
    cursor.execute("DROP TABLE IF EXISTS reach")
    cursor.execute("CREATE TABLE reach AS " + CLOSURE.format(edges="sv"))
    cursor.execute("DELETE FROM reach WHERE src = dst")
    cursor.execute(f"INSERT INTO reach SELECT src, dst FROM parquet.`{data}`")
    cursor.execute("SELECT src, dst FROM reach ORDER BY src, dst")
    result["written"] = [list(row) for row in cursor.fetchall()]
    conn.register("pairs", spark.range(3).selectExpr("id AS src", "id + 1 AS dst"))  # a Connect DataFrame
    cursor.execute(CLOSURE.format(edges="pairs"))
    result["registered"] = [list(row) for row in cursor.fetchall()]
    print("@@ " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
