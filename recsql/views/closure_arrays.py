"""A transitive closure maintained in this process over arrays: the closure programs of delta_rules
(insertion, over-deletion, re-derivation) evaluated with lookups into an index of the view's paths
instead of as queries.

A change of a few steps reaches a few hundred paths of a closure of hundreds of thousands: what costs
is then not the work but each query's fixed price (planning, printing, an in-process DuckDB query of a
few milliseconds even on no rows, a pass over the closure where it is joined), and a maintenance runs
half a dozen. Here the closure's paths are kept sorted (`Index`, kept between statements by the
version of the view's table, its changes kept beside it): the paths from the few nodes a change reaches, and
whether a path is known, are binary searches, the paths to them a pass over one column, and the rest
works on the few paths found.

It takes closures over integer columns without NULLs whose values fit in 32 bits (a path's two ends
packed into one 64-bit key); `Pairs.of` says None for any other, which the queries maintain."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

LOW = np.int64(0xFFFFFFFF)
INT32 = (-(2**31), 2**31 - 1)


@dataclass(frozen=True)
class Pairs:
    """A binary relation as two int64 arrays of equal length (rows may repeat)."""

    first: np.ndarray
    second: np.ndarray

    @staticmethod
    def of(table: pa.Table) -> Pairs | None:
        """The rows of a two-column table, or None when they are not integers within 32 bits, or a
        column holds a NULL."""
        if table.num_columns != 2:
            return None
        columns = []
        for column in table.columns:
            if not pa.types.is_integer(column.type) or column.null_count:
                return None
            values = column.to_numpy().astype(np.int64, copy=False)
            if values.size and (values.min() < INT32[0] or values.max() > INT32[1]):
                return None
            columns.append(values)
        return Pairs(*columns)

    @staticmethod
    def empty() -> Pairs:
        return Pairs(np.zeros(0, np.int64), np.zeros(0, np.int64))

    def __len__(self) -> int:
        return self.first.size

    def keys(self) -> np.ndarray:
        """One int64 per row, equal for equal rows."""
        return (self.first << 32) | (self.second & LOW)

    def take(self, rows: np.ndarray) -> Pairs:
        return Pairs(self.first[rows], self.second[rows])

    def unique(self) -> Pairs:
        return unpacked(np.unique(self.keys()))

    def plus(self, other: Pairs) -> Pairs:
        return Pairs(np.concatenate([self.first, other.first]), np.concatenate([self.second, other.second]))

    def table(self, schema: pa.Schema) -> pa.Table:
        return pa.table(
            [pa.array(column).cast(field.type) for column, field in zip((self.first, self.second), schema)],
            schema=schema,
        )


def unpacked(keys: np.ndarray) -> Pairs:
    return Pairs(keys >> 32, keys.astype(np.int32).astype(np.int64))  # the low half wraps to its sign


def member(values: np.ndarray, among: np.ndarray) -> np.ndarray:
    """Whether each of `values` is one of `among`: a pass over the larger, a lookup into the smaller (the
    larger cut to the values the smaller has first)."""
    if among.size > values.size:
        among = among[member(among, values)]
    among = np.unique(among)
    if among.size == 0:
        return np.zeros(values.size, dtype=bool)
    low, high = among[0], among[-1]
    if int(high) - int(low) > 8 * (values.size + among.size):
        return among_sorted(values, among)
    table = np.zeros(int(high) - int(low) + 1, dtype=bool)  # a lookup table of their range
    table[among - low] = True
    inside = np.flatnonzero((values >= low) & (values <= high))
    found = np.zeros(values.size, dtype=bool)
    found[inside] = table[values[inside] - low]
    return found


def joined(left: Pairs, right: Pairs) -> Pairs:
    """(x, z) for each (x, y) of `left` and (y, z) of `right`, repeats kept. Each side is first cut to
    the rows whose y the other side has (a pass over a large side), the rest joins what is left."""
    left = left.take(member(left.second, right.first))
    right = right.take(member(right.first, left.second))
    order = np.argsort(right.first, kind="stable")
    starts = np.searchsorted(right.first[order], left.second, side="left")
    counts = np.searchsorted(right.first[order], left.second, side="right") - starts
    return Pairs(np.repeat(left.first, counts), right.second[order][ranges(starts, counts)])


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The positions starts[i], starts[i] + 1, ... (counts[i] of them) for each i, one after the other."""
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(starts, counts) + within


def contained(facts: Pairs, pairs: Pairs) -> np.ndarray:
    """Whether each of `facts` is one of `pairs` (a pass over the first column of each, the larger cut
    to the rows whose first the smaller has)."""
    if len(pairs) > len(facts):
        pairs = pairs.take(member(pairs.first, facts.first))
    rows = np.flatnonzero(member(facts.first, pairs.first))
    inside = np.zeros(len(facts), dtype=bool)
    inside[rows] = member(facts.take(rows).keys(), pairs.keys())
    return inside


def among_sorted(values: np.ndarray, ordered: np.ndarray) -> np.ndarray:
    """Whether each of `values` is in the sorted array `ordered`."""
    return located(values, ordered)[1]


def located(values: np.ndarray, ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of `values` is in the sorted array `ordered`, and whether it is there at all."""
    if not ordered.size:
        return np.zeros(values.size, dtype=np.intp), np.zeros(values.size, dtype=bool)
    position = np.minimum(np.searchsorted(ordered, values), ordered.size - 1)
    return position, ordered[position] == values


NO_KEYS = np.zeros(0, np.int64)
MERGED_SHARE = 8  # the changes an index holds beside its sorted keys, at most, are a 1/8 of them


@dataclass(frozen=True)
class Index:
    """A closure's paths as keys sorted by their start, then end: the paths from given nodes, and whether
    it holds given paths, are binary searches. The paths to given nodes are a pass over the paths'
    ends, kept beside the keys as 32-bit numbers (the pass reads half of what the keys are).

    The paths added and removed since the keys were sorted are kept beside them, sorted too, until they
    are an eighth as many (then merged in one pass): a change of a few paths is a few small arrays, not
    a copy of the large ones (each copy of which also costs the pages it is written to)."""

    keys: np.ndarray  # first << 32 | second, sorted
    ends: np.ndarray  # second, int32, in the keys' order
    added: np.ndarray = field(default_factory=lambda: NO_KEYS)  # keys of paths added since, sorted
    removed: np.ndarray = field(default_factory=lambda: NO_KEYS)  # keys of `keys` removed since, sorted

    @staticmethod
    def of(closure: Pairs) -> Index:
        return Index.sorted(np.sort(closure.keys()))

    @staticmethod
    def sorted(keys: np.ndarray) -> Index:
        return Index(keys, keys.astype(np.int32))  # the low half wraps to its sign

    @property
    def nbytes(self) -> int:
        return self.keys.nbytes + self.ends.nbytes + self.added.nbytes + self.removed.nbytes

    def __len__(self) -> int:
        return self.keys.size - self.removed.size + self.added.size

    def merged(self) -> Index:
        """The same paths, all in the sorted keys."""
        if not self.added.size and not self.removed.size:
            return self
        kept = np.delete(self.keys, np.searchsorted(self.keys, self.removed))  # each removed key is one of them
        return Index.sorted(np.insert(kept, np.searchsorted(kept, self.added), self.added))

    def pairs(self) -> Pairs:
        return unpacked(self.merged().keys)

    def table(self, schema: pa.Schema) -> pa.Table:
        """The paths as a table of `schema` (two integer columns), sorted."""
        merged = self.merged()
        halves = (merged.keys >> 32).astype(np.int32), merged.ends
        return pa.table([pa.array(half).cast(field.type) for half, field in zip(halves, schema)], schema=schema)

    def holds(self, pairs: Pairs) -> np.ndarray:
        keys = pairs.keys()
        return (among_sorted(keys, self.keys) & ~among_sorted(keys, self.removed)) | among_sorted(keys, self.added)

    def successors(self, nodes: np.ndarray) -> Pairs:
        """The paths from any of `nodes`."""
        return self.current(starting_with(self.keys, nodes), starting_with(self.added, nodes))

    def predecessors(self, nodes: np.ndarray) -> Pairs:
        """The paths to any of `nodes`."""
        nodes = nodes.astype(np.int32)
        return self.current(self.keys[member(self.ends, nodes)], self.added[member(self.added.astype(np.int32), nodes)])

    def current(self, sorted_keys: np.ndarray, added: np.ndarray) -> Pairs:
        """Paths found among the sorted keys (less the removed ones) and among those added."""
        if self.removed.size:
            sorted_keys = sorted_keys[~among_sorted(sorted_keys, self.removed)]
        return unpacked(np.concatenate([sorted_keys, added]))

    def changed(self, added: Pairs | None = None, removed: Pairs | None = None) -> Index:
        """The index with `added` paths (none of them held) and without `removed` ones (all held)."""
        now_added, now_removed = self.added, self.removed
        if removed is not None and len(removed):
            gone = np.sort(removed.keys())
            were_added = among_sorted(gone, now_added)
            now_added = now_added[~among_sorted(now_added, gone[were_added])]
            now_removed = np.union1d(now_removed, gone[~were_added])
        if added is not None and len(added):
            now_added = np.union1d(now_added, added.keys())
        index = Index(self.keys, self.ends, now_added, now_removed)
        return index.merged() if (now_added.size + now_removed.size) * MERGED_SHARE > self.keys.size else index


def starting_with(keys: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """The keys (sorted) whose high half is one of `nodes`."""
    nodes = np.unique(nodes)
    starts = np.searchsorted(keys, nodes << 32)
    counts = np.searchsorted(keys, (nodes << 32) | LOW, side="right") - starts
    return keys[ranges(starts, counts)]


def insertion(closure: Index, gained: Pairs) -> Pairs:
    """The paths a closure gains with the steps `gained`: each new path is old paths joined by gained
    steps (delta_rules.StratumRules.closure_insertion)."""
    reach = gained.plus(joined(closure.predecessors(gained.first), gained)).unique()  # old path or none, a step
    through = delta = reach  # paths ending with a gained step
    while len(delta):
        delta = joined(delta, reach).unique()
        delta = delta.take(~contained(delta, through))
        through = through.plus(delta)
    derived = through.plus(joined(through, closure.successors(through.second))).unique()
    return derived.take(~closure.holds(derived))


@dataclass(frozen=True)
class Deletion:
    over_deleted: Pairs  # the old paths through a lost step (sorted, no repeats)
    again: np.ndarray  # per over-deleted path, whether the new steps still derive it


def deletion(closure: Index, lost: Pairs, steps: Pairs) -> Deletion:
    """DRed of a closure that lost steps (`steps`: all of them after the change): over-delete every
    path through a lost step, then derive again those of them that remain, each a new step followed by
    a kept path or by a path found again (delta_rules.StratumRules.closure_over_deletion and
    closure_rederivation)."""
    through = lost.plus(joined(closure.predecessors(lost.first), lost)).unique()
    over = through.plus(joined(through, closure.successors(through.second))).unique()
    over = over.take(closure.holds(over))
    again = contained(over, steps)
    if not len(over):
        return Deletion(over, again)
    # each over-deleted path (a, d) with each new step (a, w): the rest of it is (w, d)
    chosen = np.flatnonzero(member(over.first, steps.first))
    followed = joined(Pairs(chosen, over.first[chosen]), steps)  # (row of the path, w)
    rows, rest = followed.first, Pairs(followed.second, over.second[followed.first])
    position, found = located(rest.keys(), over.keys())  # (over is sorted) rests over-deleted themselves
    np.logical_or.at(again, rows[~found], closure.holds(rest.take(~found)))  # kept: held, not over-deleted
    rows, position = rows[found], position[found]
    frontier = again
    while frontier.any():  # paths found again make those ending with them found again
        reached = np.zeros_like(again)
        np.logical_or.at(reached, rows, frontier[position])
        frontier = reached & ~again
        again = again | frontier
    return Deletion(over, again)
