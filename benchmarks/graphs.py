"""Graph generators for the benchmarks, as Arrow tables (src, dst[, w]); seeded, so runs are repeatable."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def erdos_renyi(nodes: int, edges: int, seed: int = 1, weighted: bool = False) -> pa.Table:
    """`edges` distinct directed edges drawn uniformly among `nodes` nodes (self-loops allowed)."""
    generator = np.random.default_rng(seed)
    pairs = np.unique(generator.integers(0, nodes, size=(edges * 2, 2)), axis=0)
    pairs = pairs[generator.permutation(len(pairs))[:edges]]
    columns = {"src": pa.array(pairs[:, 0], pa.int32()), "dst": pa.array(pairs[:, 1], pa.int32())}
    if weighted:
        columns["w"] = pa.array(generator.integers(1, 100, size=len(pairs)), pa.int32())
    return pa.table(columns)
