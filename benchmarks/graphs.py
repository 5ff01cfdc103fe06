"""Graph generators for the benchmarks, as Arrow tables (src, dst[, w]); seeded, so runs are repeatable.

Node ids are int32 from 0; weights (when asked for) are int32 in [0, 100) unless a graph is asked for
other `weights` (the lowest and one past the highest)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

WEIGHTS = (0, 100)


def edge_table(
    pairs: np.ndarray, generator: np.random.Generator, weighted: bool, weights: tuple[int, int] = WEIGHTS
) -> pa.Table:
    columns = {"src": pa.array(pairs[:, 0], pa.int32()), "dst": pa.array(pairs[:, 1], pa.int32())}
    if weighted:
        columns["w"] = pa.array(generator.integers(*weights, size=len(pairs)), pa.int32())
    return pa.table(columns)


def distinct_pairs(pairs: np.ndarray, edges: int, generator: np.random.Generator) -> np.ndarray:
    """Up to `edges` distinct pairs of `pairs`, in random order."""
    pairs = np.unique(pairs, axis=0)
    return pairs[generator.permutation(len(pairs))[:edges]]


def erdos_renyi(
    nodes: int, edges: int, seed: int = 1, weighted: bool = False, weights: tuple[int, int] = WEIGHTS
) -> pa.Table:
    """G(n, m): `edges` distinct directed edges drawn uniformly among `nodes` nodes (self-loops allowed)."""
    generator = np.random.default_rng(seed)
    pairs = distinct_pairs(generator.integers(0, nodes, size=(edges * 2, 2)), edges, generator)
    return edge_table(pairs, generator, weighted, weights)


def chain(length: int) -> pa.Table:
    """A path 0 -> 1 -> ... -> length: the longest recursion for its size."""
    ids = np.arange(length)
    return edge_table(np.stack([ids, ids + 1], axis=1), np.random.default_rng(0), weighted=False)


def gnp(nodes: int, probability: float, seed: int = 1, weighted: bool = False) -> pa.Table:
    """G(n, p): each ordered pair of distinct nodes is an edge with probability `probability`."""
    generator = np.random.default_rng(seed)
    edges = generator.binomial(nodes * (nodes - 1), probability)
    pairs = generator.integers(0, nodes, size=(edges * 2 + 16, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return edge_table(distinct_pairs(pairs, edges, generator), generator, weighted)


def random_dag(nodes: int, edges: int, seed: int = 1, weighted: bool = False) -> pa.Table:
    """A random DAG: distinct edges from a node to a node with a larger id."""
    generator = np.random.default_rng(seed)
    pairs = np.sort(generator.integers(0, nodes, size=(edges * 3, 2)), axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return edge_table(distinct_pairs(pairs, edges, generator), generator, weighted)


def tree(height: int, seed: int = 1, weighted: bool = False, fanout: tuple[int, int] = (2, 6)) -> pa.Table:
    """A rooted tree (root 0, edges parent -> child) of the given height, each inner node with a random
    number of children in [fanout[0], fanout[1]]."""
    generator = np.random.default_rng(seed)
    parents, children = [], []
    level, next_id = np.array([0]), 1
    for _ in range(height):
        counts = generator.integers(fanout[0], fanout[1] + 1, size=len(level))
        ids = np.arange(next_id, next_id + counts.sum())
        parents.append(np.repeat(level, counts))
        children.append(ids)
        level, next_id = ids, next_id + len(ids)
    pairs = np.stack([np.concatenate(parents), np.concatenate(children)], axis=1)
    return edge_table(pairs, generator, weighted)


def grid(side: int, seed: int = 1, weighted: bool = False) -> pa.Table:
    """An n x n grid, node (i, j) = i * n + j, with edges to the right and downward neighbours."""
    generator = np.random.default_rng(seed)
    ids = np.arange(side * side).reshape(side, side)
    right = np.stack([ids[:, :-1].ravel(), ids[:, 1:].ravel()], axis=1)
    down = np.stack([ids[:-1, :].ravel(), ids[1:, :].ravel()], axis=1)
    return edge_table(np.concatenate([right, down]), generator, weighted)


def rmat(
    scale: int,
    edges: int,
    seed: int = 1,
    weighted: bool = False,
    probabilities: tuple[float, float, float] = (0.45, 0.25, 0.15),
) -> pa.Table:
    """R-MAT: 2**scale nodes; each edge picks a quadrant of the adjacency matrix `scale` times with
    probabilities (a, b, c, 1 - a - b - c). Duplicate edges and self-loops are dropped, so slightly fewer
    than `edges` remain."""
    generator = np.random.default_rng(seed)
    a, b, c = probabilities
    src = np.zeros(edges, dtype=np.int64)
    dst = np.zeros(edges, dtype=np.int64)
    for _ in range(scale):
        draw = generator.random(edges)
        right = (draw >= a) & (draw < a + b) | (draw >= a + b + c)  # quadrants b and d: column bit set
        lower = draw >= a + b  # quadrants c and d: row bit set
        src = src * 2 + lower
        dst = dst * 2 + right
    pairs = np.stack([src, dst], axis=1)
    pairs = np.unique(pairs[pairs[:, 0] != pairs[:, 1]], axis=0)
    return edge_table(pairs[generator.permutation(len(pairs))], generator, weighted)


def as_dag(table: pa.Table) -> pa.Table:
    """Each edge oriented from its smaller node to its larger one (its duplicates kept once): a DAG."""
    src, dst = table.column("src").to_numpy(), table.column("dst").to_numpy()
    pairs = np.unique(np.stack([np.minimum(src, dst), np.maximum(src, dst)], axis=1), axis=0)
    return pa.table({"src": pairs[:, 0], "dst": pairs[:, 1]})
