"""The benchmark workloads: a graph, the query in recsql's SQL, and the same question for each alternative
(DuckDB's recursive CTE, Spark's native recursive CTE where it terminates, a hand-written PySpark loop).

Every query reads one table, `edge(src, dst[, w])`, and answers with one row of counts and sums, so the
answers are compared exactly and no engine pays for returning millions of rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from benchmarks import graphs, loops


@dataclass(frozen=True)
class Workload:
    name: str
    graph: str  # what the graph is, for the report
    edges: Callable[[], pa.Table]
    recsql: str
    duckdb: str
    loop: Callable | None  # None: no hand-written loop (thousands of Spark jobs are no contender)
    spark: str | None = None  # Spark's native WITH RECURSIVE (UNION ALL): only where it terminates

    @property
    def datalog(self) -> str | None:
        """The recsql query as a Datalog program (benchmarks/datalog.py), where it has a twin."""
        return DATALOG_TWINS.get(self.recsql)


def symmetric(table: pa.Table) -> pa.Table:
    """Both directions of every edge (an undirected graph), without duplicates."""
    reverse = pa.table({"src": table["dst"], "dst": table["src"]})
    both = pa.concat_tables([table.select(["src", "dst"]), reverse])
    return both.group_by(["src", "dst"]).aggregate([])


TC = """WITH RECURSIVE tc(x, y) AS (SELECT src, dst FROM edge UNION
SELECT tc.x, e.dst FROM tc JOIN edge e ON tc.y = e.src) SELECT count(*) FROM tc"""
TC_SPARK = """WITH RECURSIVE tc(x, y) MAX RECURSION LEVEL 100000 AS (SELECT src, dst FROM edge UNION ALL
SELECT tc.x, e.dst FROM tc JOIN edge e ON tc.y = e.src) SELECT count(*) FROM (SELECT DISTINCT x, y FROM tc)"""

SG = """WITH RECURSIVE sg(x, y) AS (
SELECT a.dst, b.dst FROM edge a JOIN edge b ON a.src = b.src WHERE a.dst <> b.dst UNION
SELECT a.dst, b.dst FROM sg JOIN edge a ON a.src = sg.x JOIN edge b ON b.src = sg.y) SELECT count(*) FROM sg"""

REACH = """WITH RECURSIVE reach(y) AS (SELECT 0 UNION SELECT e.dst FROM reach JOIN edge e ON e.src = reach.y)
SELECT count(*) FROM reach"""
REACH_SPARK = """WITH RECURSIVE reach(y) MAX RECURSION LEVEL 100000 AS (SELECT 0 UNION ALL
SELECT e.dst FROM reach JOIN edge e ON e.src = reach.y) SELECT count(*) FROM (SELECT DISTINCT y FROM reach)"""

CC = """WITH RECURSIVE cc(node, min() AS label) AS (SELECT src, src FROM edge UNION
SELECT e.dst, cc.label FROM cc JOIN edge e ON cc.node = e.src) SELECT count(DISTINCT label) FROM cc"""
CC_DUCKDB = """WITH RECURSIVE cc(node, label) USING KEY (node) AS (
SELECT DISTINCT src, src FROM edge UNION
SELECT e.dst, min(cc.label) FROM cc JOIN edge e ON cc.node = e.src GROUP BY e.dst
HAVING min(cc.label) < coalesce((SELECT r.label FROM recurring.cc r WHERE r.node = e.dst), 2147483647))
SELECT count(DISTINCT label) FROM cc"""

SSSP = """WITH RECURSIVE sp(node, min() AS d) AS (SELECT 0, 0 UNION
SELECT e.dst, sp.d + e.w FROM sp JOIN edge e ON sp.node = e.src) SELECT count(*), sum(d) FROM sp"""
SSSP_DUCKDB = """WITH RECURSIVE sp(node, d) USING KEY (node) AS (SELECT 0, 0 UNION
SELECT e.dst, min(sp.d + e.w) FROM sp JOIN edge e ON sp.node = e.src GROUP BY e.dst
HAVING min(sp.d + e.w) < coalesce((SELECT r.d FROM recurring.sp r WHERE r.node = e.dst), 2147483647))
SELECT count(*), sum(d) FROM sp"""

APSP = """WITH RECURSIVE ap(x, y, min() AS d) AS (SELECT src, dst, w FROM edge UNION
SELECT ap.x, e.dst, ap.d + e.w FROM ap JOIN edge e ON ap.y = e.src) SELECT count(*), sum(d) FROM ap"""
APSP_DUCKDB = """WITH RECURSIVE ap(x, y, d) USING KEY (x, y) AS (SELECT src, dst, min(w) FROM edge GROUP BY src, dst
UNION SELECT ap.x, e.dst, min(ap.d + e.w) FROM ap JOIN edge e ON ap.y = e.src GROUP BY ap.x, e.dst
HAVING min(ap.d + e.w) < coalesce((SELECT r.d FROM recurring.ap r WHERE r.x = ap.x AND r.y = e.dst), 2147483647))
SELECT count(*), sum(d) FROM ap"""

PATHS = """WITH RECURSIVE paths(x, y, sum() AS n) AS (SELECT src, dst, 1 FROM edge UNION
SELECT paths.x, e.dst, paths.n FROM paths JOIN edge e ON paths.y = e.src) SELECT count(*), sum(n) FROM paths"""
PATHS_UNION_ALL = """WITH RECURSIVE walk(x, y) {level} AS (SELECT src, dst FROM edge UNION ALL
SELECT walk.x, e.dst FROM walk JOIN edge e ON walk.y = e.src)
SELECT count(*), sum(n) FROM (SELECT x, y, count(*) AS n FROM walk GROUP BY x, y)"""

REPORTS = """WITH RECURSIVE under(m, e) AS (SELECT src, dst FROM edge UNION
SELECT under.m, edge.dst FROM under JOIN edge ON under.e = edge.src)
SELECT count(*), sum(n) FROM (SELECT m, count(*) AS n FROM under GROUP BY m)"""
REPORTS_UNION_ALL = """WITH RECURSIVE under(m, e) {level} AS (SELECT src, dst FROM edge UNION ALL
SELECT under.m, edge.dst FROM under JOIN edge ON under.e = edge.src)
SELECT count(*), sum(n) FROM (SELECT m, count(*) AS n FROM under GROUP BY m)"""

SPARK_LEVEL = "MAX RECURSION LEVEL 100000"

DATALOG_TWINS = {  # recsql's query: the same question as a Datalog program
    TC: """tc(X, Y) :- edge(X, Y).
tc(X, Y) :- tc(X, Z), edge(Z, Y).
n(count<_>) :- tc(_, _).
.output n""",
    SG: """sg(X, Y) :- edge(P, X), edge(P, Y), X != Y.
sg(X, Y) :- sg(A, B), edge(A, X), edge(B, Y).
n(count<_>) :- sg(_, _).
.output n""",
    REACH: """reach(0).
reach(Y) :- reach(X), edge(X, Y).
n(count<_>) :- reach(_).
.output n""",
    CC: """cc(X, mmin<X>) :- edge(X, _).
cc(Y, mmin<L>) :- cc(X, L), edge(X, Y).
n(countd<L>) :- cc(_, L).
.output n""",
    SSSP: """sp(0, mmin<0>).
sp(Y, mmin<D>) :- sp(X, D0), edge(X, Y, W), D = D0 + W.
n(count<_>, sum<D>) :- sp(_, D).
.output n""",
    APSP: """ap(X, Y, mmin<W>) :- edge(X, Y, W).
ap(X, Y, mmin<D>) :- ap(X, Z, D0), edge(Z, Y, W), D = D0 + W.
n(count<_>, sum<D>) :- ap(_, _, D).
.output n""",
    PATHS: """paths(X, Y, msum<1>) :- edge(X, Y).
paths(X, Y, msum<N>) :- paths(X, Z, N), edge(Z, Y).
n(count<_>, sum<N>) :- paths(_, _, N).
.output n""",
    REPORTS: """under(M, E) :- edge(M, E).
under(M, E) :- under(M, X), edge(X, E).
per(M, count<_>) :- under(M, _).
n(count<_>, sum<N>) :- per(_, N).
.output n""",
}


def workloads(quick: bool) -> list[Workload]:
    """The workloads at full size (the sizes the project's speed targets name), or small for a smoke run."""

    def size(full, small):
        return small if quick else full

    dag_nodes, dag_edges = size((10_000, 30_000), (1_000, 3_000))
    cyclic_nodes, cyclic_edges = size((2_000, 8_000), (300, 1_000))
    side = size(40, 12)
    scale, rmat_edges = size((17, 1_300_000), (10, 8_000))
    apsp_nodes, apsp_p = size((150, 0.02), (40, 0.06))
    height = size(8, 5)
    return [
        Workload(
            "tc-dag",
            f"random DAG, {dag_nodes:,} nodes, {dag_edges:,} edges",
            lambda: graphs.random_dag(dag_nodes, dag_edges),
            TC,
            TC,
            loops.closure_pairs,
            TC_SPARK,
        ),
        Workload(
            "tc-cyclic",
            f"G(n, m), {cyclic_nodes:,} nodes, {cyclic_edges:,} edges",
            lambda: graphs.erdos_renyi(cyclic_nodes, cyclic_edges),
            TC,
            TC,
            loops.closure_pairs,
        ),
        Workload("same-generation", f"{side}x{side} grid", lambda: graphs.grid(side), SG, SG, loops.same_generation),
        Workload(
            "reachability",
            f"RMAT-{scale}, {rmat_edges:,} edges",
            lambda: graphs.rmat(scale, rmat_edges),
            REACH,
            REACH,
            loops.reachable,
        ),
        Workload(
            "connected-components",
            f"RMAT-{scale}, {rmat_edges:,} edges, undirected",
            lambda: symmetric(graphs.rmat(scale, rmat_edges)),
            CC,
            CC_DUCKDB,
            loops.connected_components,
        ),
        Workload(
            "sssp",
            f"RMAT-{scale}, {rmat_edges:,} edges, weights in [0, 100)",
            lambda: graphs.rmat(scale, rmat_edges, weighted=True),
            SSSP,
            SSSP_DUCKDB,
            loops.shortest_paths,
        ),
        Workload(
            "apsp",
            f"G(n, p), {apsp_nodes} nodes, p = {apsp_p}, weights in [0, 100)",
            lambda: graphs.gnp(apsp_nodes, apsp_p, weighted=True),
            APSP,
            APSP_DUCKDB,
            loops.all_pairs_shortest_paths,
        ),
        Workload(
            "path-counting",
            f"random DAG, {dag_nodes:,} nodes, {dag_edges:,} edges",
            lambda: graphs.random_dag(dag_nodes, dag_edges),
            PATHS,
            PATHS_UNION_ALL.format(level=""),
            loops.path_counts,
            PATHS_UNION_ALL.format(level=SPARK_LEVEL),
        ),
        Workload(
            "org-chart",
            f"tree of height {height}, fan-out 2-6",
            lambda: graphs.tree(height),
            REPORTS,
            REPORTS,
            loops.reports_per_manager,
            REPORTS_UNION_ALL.format(level=SPARK_LEVEL),
        ),
    ]


def scale_workloads() -> list[Workload]:
    """The sizes where Spark is the point: results past recsql.local_rows, graphs of hundreds of thousands
    of nodes, a recursion of hundreds of iterations (`python -m benchmarks.run --scale`)."""
    return [
        Workload(
            "tc-cyclic-22m",
            "G(n, m), 5,000 nodes, 15,000 edges (seed 7)",
            lambda: graphs.erdos_renyi(5_000, 15_000, seed=7),
            TC,
            TC,
            loops.closure_pairs,
        ),
        Workload(
            "tc-dag",
            "random DAG, 10,000 nodes, 30,000 edges",
            lambda: graphs.random_dag(10_000, 30_000),
            TC,
            TC,
            loops.closure_pairs,
            TC_SPARK,
        ),
        Workload(
            "connected-components",
            "G(n, m), 200,000 nodes, 400,000 edges, undirected",
            lambda: symmetric(graphs.erdos_renyi(200_000, 400_000)),
            CC,
            CC_DUCKDB,
            loops.connected_components,
        ),
        Workload(
            "sssp-50k",
            "G(n, m), 50,000 nodes, 200,000 edges, weights in [1, 100]",
            lambda: graphs.erdos_renyi(50_000, 200_000, weighted=True, weights=(1, 101)),
            SSSP,
            SSSP_DUCKDB,
            loops.shortest_paths,
        ),
        Workload(
            "sssp-200k",
            "G(n, m), 200,000 nodes, 800,000 edges, weights in [1, 100]",
            lambda: graphs.erdos_renyi(200_000, 800_000, weighted=True, weights=(1, 101)),
            SSSP,
            SSSP_DUCKDB,
            loops.shortest_paths,
        ),
        Workload(
            "tc-rmat-dag",
            "R-MAT, 2^14 nodes, 30,000 edges (seed 3), as a DAG: the work per source follows a power law",
            lambda: graphs.as_dag(graphs.rmat(14, 30_000, seed=3)),
            TC,
            TC,
            loops.closure_pairs,
        ),
        Workload(
            "chain-300", "a path of 300 edges", lambda: graphs.chain(300), REACH, REACH, loops.reachable, REACH_SPARK
        ),
    ]


DEPTH = 10_000  # rows of the deep workloads, each a row deeper than the last: as many iterations
HIERARCHY_DEPTH = 2_000  # each row's path is as long as its depth: rows of quadratic size in all
DAYS = 3_653  # ten years from 2000-01-01
COUNTER = f"""WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < {DEPTH})
SELECT count(*), sum(n) FROM r"""
HIERARCHY = """WITH RECURSIVE h(id, depth, path) AS (SELECT 0, 0, CAST('0' AS STRING) UNION ALL
SELECT e.dst, h.depth + 1, h.path || '/' || CAST(e.dst AS STRING) FROM h JOIN edge e ON h.id = e.src)
SELECT count(*), sum(depth), sum(length(path)) FROM h"""
DATES = f"""WITH RECURSIVE d(day) AS (SELECT DATE '2000-01-01' UNION ALL
SELECT day + INTERVAL 1 DAY FROM d WHERE day < DATE '2000-01-01' + INTERVAL {DAYS - 1} DAY)
SELECT count(*), max(year(day)) FROM d"""
RUNNING_TOTAL = """WITH RECURSIVE rt(i, total) AS (SELECT 0, 0 UNION ALL
SELECT e.dst, rt.total + e.dst FROM rt JOIN edge e ON e.src = rt.i) SELECT count(*), max(total) FROM rt"""
FIBONACCI = f"""WITH RECURSIVE f(i, a, b) AS (SELECT 1, 0, 1 UNION ALL
SELECT i + 1, b, (a + b) % 1000003 FROM f WHERE i < {DEPTH}) SELECT count(*), sum(a) FROM f"""


def deep_workloads() -> list[Workload]:
    """Deep, thin recursions: each iteration derives a row or two, for thousands of iterations, the first
    recursive queries users write (`python -m benchmarks.run --deep`). recsql beside DuckDB: a hand-written
    loop or Spark's native CTE pays a Spark job per iteration."""
    chain = lambda: graphs.chain(DEPTH - 1)  # noqa: E731 - the same graph for every workload reading one
    nodes = f"a path of {DEPTH:,} nodes"
    return [
        Workload("counter", f"no table, {DEPTH:,} rows", chain, COUNTER, COUNTER, None),
        Workload("chain-reachability", f"{nodes} (UNION)", chain, REACH, REACH, None),
        Workload(
            "hierarchy-paths",
            f"a path of {HIERARCHY_DEPTH:,} nodes, each row's path as text",
            lambda: graphs.chain(HIERARCHY_DEPTH - 1),
            HIERARCHY,
            HIERARCHY,
            None,
        ),
        Workload("date-series", f"{DAYS:,} days (ten years) from 2000-01-01", chain, DATES, DATES, None),
        Workload("running-total", f"{nodes}, a sum along it", chain, RUNNING_TOTAL, RUNNING_TOTAL, None),
        Workload("fibonacci-mod-p", f"{DEPTH:,} numbers, modulo 1,000,003", chain, FIBONACCI, FIBONACCI, None),
    ]
