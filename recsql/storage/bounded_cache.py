"""A least-recently-used cache bounded in bytes: what a statement read or computed (a table version's
rows, a closure's index, files read in this process) kept for the next statements while it fits. The
least recently used go first; the newest stays even past the budget (it is what the caller holds)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

Key = TypeVar("Key", bound=Hashable)
Value = TypeVar("Value")


class BoundedCache(Generic[Key, Value]):
    """`size_of(value)`: the bytes a value holds, counted against `budget`."""

    def __init__(self, budget: int, size_of: Callable[[Value], int]):
        self.budget = budget
        self.size_of = size_of
        self.kept: OrderedDict[Key, Value] = OrderedDict()
        self.size = 0  # the bytes of the values kept (summing them at each put would cost a walk of all)

    def get(self, key: Key, read: Callable[[], Value], fresh: Callable[[Value], bool] = lambda value: True) -> Value:
        """The value of `key`, read with `read()` (and kept) unless one is kept that is still `fresh`."""
        value = self.kept.get(key)
        if value is None or not fresh(value):
            value = read()
            self.put(key, value)
        else:
            self.kept.move_to_end(key)
        return value

    def find(self, key: Key) -> Value | None:
        """What is kept of `key`, if anything (not read, not counted as a use)."""
        return self.kept.get(key)

    def put(self, key: Key, value: Value) -> None:
        replaced = self.kept.get(key)
        self.size += self.size_of(value) - (self.size_of(replaced) if replaced is not None else 0)
        self.kept[key] = value
        self.kept.move_to_end(key)
        while len(self.kept) > 1 and self.size > self.budget:
            self.size -= self.size_of(self.kept.popitem(last=False)[1])
