"""The semi-naive loop on Spark (a Spark job per relation and iteration, engine/spark/engine.py): what Spark
plans for an iteration does not grow with the iterations before it."""

from __future__ import annotations

import networkx as nx
import pandas as pd
import pytest
from strategies import set_strategy

from recsql.engine.spark.engine import SparkEngine
from recsql.engine.strategies import distributed

SHORTEST = (
    "WITH RECURSIVE sp(node, min() AS d) AS (SELECT 0, 0 UNION SELECT e.dst, sp.d + e.w FROM sp "
    "JOIN sl_weighted e ON sp.node = e.src) SELECT node, d FROM sp"
)


@pytest.mark.spark
def test_spark_size_estimates_of_a_min_recursion_stay_small(conn, cur, monkeypatch):
    """Each iteration's delta is a checkpoint that keeps Spark's size estimate of the query that made it.
    Estimated from an outer join (the product of its sides), the estimates' digits doubled each iteration
    and estimating them outgrew the iterations past twenty; from an anti-join they grow by a few digits
    per iteration."""
    edges = [(i, j, (j - i) ** 2) for i in range(12) for j in range(i + 1, 12)]  # each hop improves
    conn.register("sl_weighted", pd.DataFrame(edges, columns=["src", "dst", "w"]))
    digits: list[int] = []
    materialize = SparkEngine.materialize

    def measured(self, frame):
        digits.append(len(str(frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes())))
        return materialize(self, frame)

    monkeypatch.setattr(SparkEngine, "materialize", measured)
    # the loop, as the distributed strategy runs it where its one-job form cannot run (off a local master)
    monkeypatch.setattr(distributed, "run_exchanged", lambda run, stratum: None)
    set_strategy(conn, "distributed")
    cur.execute(SHORTEST)
    graph = nx.DiGraph()
    graph.add_weighted_edges_from(edges)
    assert sorted(cur.fetchall()) == sorted(nx.single_source_dijkstra_path_length(graph, 0).items())
    assert len(digits) >= 11 and max(digits) < 100, digits
