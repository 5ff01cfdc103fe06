"""Hand-written PySpark semi-naive loops: what a data engineer writes without a recursive engine.

Each loop keeps the facts so far and the new facts of the last round, joins the new facts with the edges,
keeps what is new or better, caches it, counts it to decide whether to go on, and cuts the lineage of
the accumulated facts each round (local checkpoints), as Spark's documentation advises for iterative
jobs. Each returns the same one-row answer as its workload's SQL.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def edges_of(spark: SparkSession, weighted: bool = False) -> DataFrame:
    columns = ["src", "dst"] + (["w"] if weighted else [])
    return spark.table("edge").select(*columns).cache()


def set_fixpoint(start: DataFrame, step: Callable[[DataFrame], DataFrame]) -> DataFrame:
    """Facts from `start` and `step` (new facts from the last round's) until a round finds nothing new."""
    total = start.distinct().localCheckpoint()
    delta = total
    while True:
        delta = step(delta).distinct().subtract(total).localCheckpoint()
        if delta.count() == 0:
            return total
        total = total.union(delta).localCheckpoint()


def all_rounds(start: DataFrame, step: Callable[[DataFrame], DataFrame]) -> DataFrame:
    """The rows of every round, each computed by `step` from the last, until a round is empty."""
    delta = total = start.localCheckpoint()
    while True:
        delta = step(delta).localCheckpoint()
        if delta.count() == 0:
            return total
        total = total.union(delta).localCheckpoint()


def closure_pairs(spark: SparkSession) -> tuple:
    """Transitive closure: count of (x, y) pairs."""
    edges = edges_of(spark)
    start = edges.select(F.col("src").alias("x"), F.col("dst").alias("y"))
    total = set_fixpoint(start, lambda d: d.join(edges, d.y == edges.src).select("x", F.col("dst").alias("y")))
    return (total.count(),)


def same_generation(spark: SparkSession) -> tuple:
    """sg(x, y): siblings, then children of same-generation pairs."""
    edges = edges_of(spark)
    a, b = edges.alias("a"), edges.alias("b")
    start = (
        a.join(b, F.col("a.src") == F.col("b.src"))
        .where(F.col("a.dst") != F.col("b.dst"))
        .select(F.col("a.dst").alias("x"), F.col("b.dst").alias("y"))
    )
    total = set_fixpoint(
        start,
        lambda d: (
            d.join(a, d.x == F.col("a.src"))
            .join(b, d.y == F.col("b.src"))
            .select(F.col("a.dst").alias("x"), F.col("b.dst").alias("y"))
        ),
    )
    return (total.count(),)


def reachable(spark: SparkSession, source: int = 0) -> tuple:
    """Nodes reachable from `source`: their count."""
    edges = edges_of(spark)
    start = spark.createDataFrame([(source,)], "y int")
    total = set_fixpoint(start, lambda d: d.join(edges, d.y == edges.src).select(F.col("dst").alias("y")))
    return (total.count(),)


def propagate_minimum(spark: SparkSession, start: DataFrame, weighted: bool) -> DataFrame:
    """Label propagation to a fixpoint: each node keeps the smallest value offered along an edge (plus
    the edge's weight when weighted); only improved nodes propagate in the next round."""
    edges = edges_of(spark, weighted)
    best = start.localCheckpoint()
    delta = best
    while True:
        offered = delta.join(edges, delta.node == edges.src)
        value = F.col("value") + F.col("w") if weighted else F.col("value")
        offers = offered.groupBy(F.col("dst").alias("node")).agg(F.min(value).alias("offer"))
        improved = (
            offers.join(best, "node", "left")
            .where(F.col("value").isNull() | (F.col("offer") < F.col("value")))
            .select("node", F.col("offer").alias("value"))
            .localCheckpoint()
        )
        if improved.count() == 0:
            return best
        best = best.join(improved.select("node"), "node", "left_anti").union(improved).localCheckpoint()
        delta = improved


def connected_components(spark: SparkSession) -> tuple:
    """Each node labelled with the smallest id that reaches it: count of labels."""
    nodes = spark.table("edge").select(F.col("src").alias("node")).distinct()
    labels = propagate_minimum(spark, nodes.select("node", F.col("node").alias("value")), weighted=False)
    return (labels.select("value").distinct().count(),)


def shortest_paths(spark: SparkSession, source: int = 0) -> tuple:
    """Single-source shortest paths: count of reached nodes and the sum of their distances."""
    start = spark.createDataFrame([(source, 0)], "node int, value int")
    distances = propagate_minimum(spark, start, weighted=True)
    row = distances.agg(F.count("*"), F.sum("value")).first()
    return (row[0], row[1])


def all_pairs_shortest_paths(spark: SparkSession) -> tuple:
    """Shortest distance for every connected pair: count of pairs and the sum of distances."""
    edges = edges_of(spark, weighted=True)
    best = edges.groupBy(F.col("src").alias("x"), F.col("dst").alias("y")).agg(F.min("w").alias("d")).localCheckpoint()
    delta = best
    while True:
        offers = (
            delta.join(edges, delta.y == edges.src)
            .groupBy("x", F.col("dst").alias("y"))
            .agg(F.min(F.col("d") + F.col("w")).alias("offer"))
        )
        improved = (
            offers.join(best, ["x", "y"], "left")
            .where(F.col("d").isNull() | (F.col("offer") < F.col("d")))
            .select("x", "y", F.col("offer").alias("d"))
            .localCheckpoint()
        )
        if improved.count() == 0:
            row = best.agg(F.count("*"), F.sum("d")).first()
            return (row[0], row[1])
        best = best.join(improved.select("x", "y"), ["x", "y"], "left_anti").union(improved).localCheckpoint()
        delta = improved


def path_counts(spark: SparkSession) -> tuple:
    """Paths between every pair of a DAG: number of connected pairs and the total number of paths (the
    paths of length k found in round k, summed per pair)."""
    edges = edges_of(spark)
    start = edges.select(F.col("src").alias("x"), F.col("dst").alias("y"), F.lit(1).cast("long").alias("n"))
    total = all_rounds(
        start,
        lambda d: d.join(edges, d.y == edges.src).groupBy("x", F.col("dst").alias("y")).agg(F.sum("n").alias("n")),
    )
    row = total.groupBy("x", "y").agg(F.sum("n").alias("n")).agg(F.count("*"), F.sum("n")).first()
    return (row[0], row[1])


def reports_per_manager(spark: SparkSession) -> tuple:
    """Org chart: for each manager the number of people under them; count of managers and the sum."""
    edges = edges_of(spark)
    start = edges.select(F.col("src").alias("m"), F.col("dst").alias("e"))
    total = all_rounds(start, lambda d: d.join(edges, d.e == edges.src).select("m", F.col("dst").alias("e")))
    row = total.groupBy("m").count().agg(F.count("*"), F.sum("count")).first()
    return (row[0], row[1])
