"""A closure maintained over arrays (recsql.views.closure_arrays) against networkx: for random graphs
(cycles and self-loops included, node numbers at the ends of the 32-bit range), the paths an insertion
of steps adds and those a deletion of steps removes are exactly what the closure gains and loses. An
index changed many times, its changes beside its sorted keys or merged into them, answers as the set
of paths it holds does."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import transitive_closure

from recsql.views.closure_arrays import Index, Pairs, deletion, insertion

NODES = st.sampled_from([-(2**31), -7, -1, 0, 1, 2, 3, 4, 5, 2**31 - 2, 2**31 - 1])
STEPS = st.sets(st.tuples(NODES, NODES), max_size=14)


def pairs(rows: set[tuple[int, int]]) -> Pairs:
    ordered = sorted(rows)
    return Pairs(np.array([x for x, _ in ordered], np.int64), np.array([y for _, y in ordered], np.int64))


def rows(found: Pairs) -> set[tuple[int, int]]:
    return set(zip(found.first.tolist(), found.second.tolist()))


@settings(max_examples=150, deadline=None)
@given(steps=STEPS, gained=st.sets(st.tuples(NODES, NODES), min_size=1, max_size=4))
def test_an_insertion_adds_the_paths_the_new_steps_make(steps, gained):
    index = Index.of(pairs(transitive_closure(steps)))
    fresh = insertion(index, pairs(gained - steps))
    assert rows(fresh) == transitive_closure(steps | gained) - transitive_closure(steps)
    assert rows(index.changed(added=fresh).pairs()) == transitive_closure(steps | gained)


@settings(max_examples=150, deadline=None)
@given(steps=STEPS.filter(bool), data=st.data())
def test_a_deletion_removes_the_paths_no_step_left_makes(steps, data):
    lost = data.draw(st.sets(st.sampled_from(sorted(steps)), min_size=1, max_size=4))
    index = Index.of(pairs(transitive_closure(steps)))
    deleted = deletion(index, pairs(lost), pairs(steps - lost))
    gone = deleted.over_deleted.take(~deleted.again)
    assert rows(gone) == transitive_closure(steps) - transitive_closure(steps - lost)
    assert rows(index.changed(removed=gone).pairs()) == transitive_closure(steps - lost)


@settings(max_examples=100, deadline=None)
@given(
    initial=st.sets(st.tuples(NODES, NODES), min_size=30, max_size=60),
    changes=st.lists(st.tuples(st.booleans(), st.sets(st.tuples(NODES, NODES), max_size=3)), max_size=12),
    nodes=st.sets(NODES, min_size=1, max_size=3),
)
def test_an_index_changed_again_and_again_answers_as_its_paths(initial, changes, nodes):
    held, index = set(initial), Index.of(pairs(initial))
    for adding, paths in changes:
        paths = paths - held if adding else paths & held
        index = index.changed(added=pairs(paths)) if adding else index.changed(removed=pairs(paths))
        held = held | paths if adding else held - paths
        assert len(index) == len(held)
    probe = pairs(held | {(x, y) for x in nodes for y in nodes})
    assert rows(probe.take(index.holds(probe))) == held
    chosen = np.array(sorted(nodes), np.int64)
    assert sorted(
        zip(*(c.tolist() for c in (index.successors(chosen).first, index.successors(chosen).second)))
    ) == sorted(path for path in held if path[0] in nodes)
    assert rows(index.predecessors(chosen)) == {path for path in held if path[1] in nodes}
    assert len(index.predecessors(chosen)) == len({path for path in held if path[1] in nodes})
    assert rows(index.pairs()) == rows(index.merged().pairs()) == held
