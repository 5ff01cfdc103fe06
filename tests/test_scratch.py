"""The statement's scratch space (recsql/engine/scratch.py): directories made on first use and removed
when the outermost statement ends, however it ends."""

from __future__ import annotations

import os

import pytest

from recsql.engine.scratch import Scratch


def test_nothing_is_made_for_a_statement_that_asks_for_nothing():
    scratch = Scratch()
    with scratch.statement():
        pass
    assert not scratch.roots


def test_directories_live_until_the_outermost_statement_ends():
    scratch = Scratch()
    with scratch.statement():
        first = scratch.directory("parts-")
        with scratch.statement():
            second = scratch.directory("parts-")
            open(os.path.join(second, "part-00000.parquet"), "wb").close()
        assert os.path.isdir(first) and os.path.isdir(second) and first != second
    assert not os.path.exists(first) and not os.path.exists(second) and not scratch.roots


def test_a_failed_statement_leaves_nothing_behind():
    scratch = Scratch()
    with pytest.raises(ZeroDivisionError), scratch.statement():
        made = scratch.directory("parts-")
        _ = 1 / 0
    assert not os.path.exists(made)
    with scratch.statement():  # the next statement starts afresh
        assert os.path.isdir(scratch.directory("parts-"))


def test_shared_directories_are_made_under_the_shared_root(tmp_path):
    """A directory every executor sees is made under the shared root (the warehouse's), and goes too."""
    shared = tmp_path / "warehouse" / "scratch"
    scratch = Scratch(shared=shared)
    with scratch.statement():
        here, there = scratch.directory("parts-"), scratch.directory("parts-", shared=True)
        assert os.path.commonpath([there, str(shared)]) == str(shared)
        assert os.path.commonpath([here, str(shared)]) != str(shared)
    assert not os.path.exists(here) and not os.path.exists(there) and not os.listdir(shared)
