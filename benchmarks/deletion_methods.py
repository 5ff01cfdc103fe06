"""DRed against counting for the steps a transitive closure loses: why recsql maintains set relations by
DRed. Both run as computations over the closure's paths in memory (recsql.views.closure_arrays), on the
closure of a random DAG, deleting the same random steps.

    python -m benchmarks.deletion_methods [--nodes 10000] [--edges 30000] [--deletes 10] [--repeat 5]

Counting (Gupta, Mumick and Subrahmanian) keeps with each path the number of its derivations: for a
closure, the number of distinct walks between its ends. Deleting a step (u, v) subtracts, for every x
reaching u (or u itself) and z reached from v (or v itself), count(x, u) * count(v, z) from the count of
(x, z); a path whose count falls to 0 is gone, and nothing is derived again. DRed keeps no counts: it
over-deletes the paths through a lost step and derives again those still derivable.

Prints the medians of `--repeat` runs: the time to make what each method keeps beside the paths (the
sorted index for DRed; the index and every path's count for counting, at CREATE or REFRESH) and the
time to delete `--deletes` steps (the same steps for both, the paths removed checked equal), and the
largest count. On a graph with a cycle counting has no answer (a path on a cycle has infinitely many
derivations) and on a deep DAG its counts outgrow 64 bits (70 layers of two nodes, each joined to both
of the next: 2**69 walks from end to end), which is why recsql maintains a closure by DRed.
"""

from __future__ import annotations

import argparse
import random

import numpy as np

from benchmarks.materialized import random_dag
from benchmarks.timing import median_time
from recsql.views.closure_arrays import Index, Pairs, deletion, ranges, unpacked

Counts = tuple[np.ndarray, np.ndarray]  # sorted path keys, and each path's number of derivations


def pairs_of(rows: list[tuple[int, int]] | set[tuple[int, int]]) -> Pairs:
    ordered = sorted(rows)
    return Pairs(np.array([x for x, _ in ordered], np.int64), np.array([y for _, y in ordered], np.int64))


def summed(keys: np.ndarray, counts: np.ndarray) -> Counts:
    """Equal keys made one, their counts added (exactly: int64 sums, no floats)."""
    if not keys.size:
        return keys, counts
    order = np.argsort(keys, kind="stable")
    keys, counts = keys[order], counts[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return keys[starts], np.add.reduceat(counts, starts)


def path_counts(steps: Pairs) -> Counts:
    """Every path's number of walks, semi-naively: walks one step longer each iteration (a DAG's)."""
    order = np.argsort(steps.first, kind="stable")
    starts, ends = steps.first[order], steps.second[order]
    keys, counts = summed(steps.keys(), np.ones(len(steps), np.int64))
    known_keys, known_counts = [keys], [counts]
    while keys.size:
        walks = unpacked(keys)
        low, high = np.searchsorted(starts, walks.second), np.searchsorted(starts, walks.second, side="right")
        longer = Pairs(np.repeat(walks.first, high - low), ends[ranges(low, high - low)])
        keys, counts = summed(longer.keys(), np.repeat(counts, high - low))
        known_keys.append(keys)
        known_counts.append(counts)
    return summed(np.concatenate(known_keys), np.concatenate(known_counts))


def counting_deletion(paths: Counts, lost: Pairs) -> np.ndarray:
    """The keys of the paths the lost steps leave with no derivation, by subtracting the walks through
    each step in turn (a walk of a DAG goes through a step once: none is subtracted twice)."""
    keys, counts = paths[0], paths[1].copy()
    ends = keys.astype(np.int32)  # the low halves
    into = np.flatnonzero(np.isin(ends, lost.first.astype(np.int32)))  # the paths into a lost step's start
    for u, v in zip(lost.first.tolist(), lost.second.tolist()):
        before = into[ends[into] == u]
        after = np.arange(np.searchsorted(keys, v << 32), np.searchsorted(keys, (v << 32) | 0xFFFFFFFF, "right"))
        sources = np.r_[keys[before] >> 32, u]
        walks_in = np.r_[counts[before], 1]
        targets = np.r_[keys[after].astype(np.int32).astype(np.int64), v]
        walks_out = np.r_[counts[after], 1]
        through = (np.repeat(sources, targets.size) << 32) | (np.tile(targets, sources.size) & 0xFFFFFFFF)
        counts[np.searchsorted(keys, through)] -= np.outer(walks_in, walks_out).ravel()
    return keys[counts == 0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--edges", type=int, default=30_000)
    parser.add_argument("--deletes", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(7)
    steps = random_dag(args.nodes, args.edges, rng)
    lost = rng.sample(sorted(steps), args.deletes)
    counted_made, counted = median_time(lambda: path_counts(pairs_of(steps)), args.repeat)
    index_made, index = median_time(lambda: Index.of(unpacked(counted[0])), args.repeat)
    remaining = pairs_of(steps - set(lost))
    dred_seconds, dred = median_time(lambda: deletion(index, pairs_of(lost), remaining), args.repeat)
    counting_seconds, gone = median_time(lambda: counting_deletion(counted, pairs_of(lost)), args.repeat)
    assert np.array_equal(np.sort(dred.over_deleted.take(~dred.again).keys()), gone), "the methods differ"
    print(
        f"closure of a random DAG ({args.nodes:,} nodes, {args.edges:,} steps): {counted[0].size:,} paths, "
        f"largest count {int(counted[1].max()):,}; deleting {args.deletes} steps removes {gone.size:,} paths"
    )
    print(f"  {'method':<10} {'made at REFRESH':>16} {'DELETE':>10}  kept beside each path")
    print(f"  {'DRed':<10} {index_made * 1000:13.1f} ms {dred_seconds * 1000:7.1f} ms  nothing (index: 12 bytes)")
    print(
        f"  {'counting':<10} {(counted_made + index_made) * 1000:13.1f} ms {counting_seconds * 1000:7.1f} ms  "
        "its count (8 bytes more)"
    )


if __name__ == "__main__":
    main()
