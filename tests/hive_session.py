"""A process with a Hive-metastore Spark session, for tests/test_spark_catalog.py.

    python tests/hive_session.py DIRECTORY create|query

The metastore (Derby) and Spark's warehouse live in DIRECTORY. `create` makes the Hive table
`hdb.edges (src INT, dst INT) STORED AS PARQUET` with EDGES through Spark; `query` runs, through recsql,
a transitive closure over it and prints `@@ ` followed by the closure's rows as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's recsql, wherever run from

import recsql

EDGES = [(1, 2), (2, 3), (3, 1), (3, 4), (7, 8)]
CLOSURE = """WITH RECURSIVE tc(src, dst) AS (SELECT src, dst FROM hdb.edges
UNION SELECT tc.src, e.dst FROM tc JOIN hdb.edges e ON tc.dst = e.src) SELECT src, dst FROM tc"""


def main(directory: Path, mode: str) -> None:
    metastore = directory / "metastore"
    conf = {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(directory / "spark-warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={metastore};create=true",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={directory}",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
    }
    conn = recsql.connect(master="local[1]", conf=conf, warehouse=str(directory / "recsql"))
    spark = conn.spark_session
    if mode == "create":
        spark.sql("CREATE DATABASE hdb")
        spark.sql("CREATE TABLE hdb.edges (src INT, dst INT) STORED AS PARQUET")
        values = ", ".join(f"({a}, {b})" for a, b in EDGES)
        spark.sql(f"INSERT INTO hdb.edges VALUES {values}")
        return
    cursor = conn.cursor()
    cursor.execute("SET recsql.strategy = distributed")
    cursor.execute(CLOSURE)
    print("@@ " + json.dumps([list(row) for row in cursor.fetchall()]), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
