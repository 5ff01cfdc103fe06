"""Closures a view stores, maintained over arrays in this process (closure_arrays) under the strategies
that evaluate in it: each closure's index kept by the version of its table in the catalog
(`kept_indexes`), found again by the next statement, and changed with the facts each maintenance adds
and removes."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow as pa

from recsql.catalog.catalog import Catalog
from recsql.settings import Strategy
from recsql.views import closure_arrays
from recsql.views.closure_arrays import Index, Pairs
from recsql.views.delta_rules import Inputs
from recsql.views.results import ChangedRelation, Maintained, Method, nonempty

IN_MEMORY = (Strategy.AUTO, Strategy.LOCAL)  # the strategies under which a closure is maintained over arrays


class ClosuresInMemory:
    """`local_rows`: a closure of more facts is left to the queries (its index would take as much memory
    as a local evaluation's bound)."""

    def __init__(self, catalog: Catalog, local_rows: int):
        self.catalog = catalog
        self.local_rows = local_rows
        self.builds: ThreadPoolExecutor | None = None  # where indexes are made beside the statement's work

    def maintained(self, stored: str, step: Inputs, old: pa.Table, record: Maintained) -> ChangedRelation | None:
        """A closure (stored as `stored`, facts `old`) whose steps only gained or only lost rows, with its
        index; None when its facts or steps are not integers that fit the arrays, or are too many."""
        if (step.plus is None) == (step.minus is None):
            return None
        changed = self.pairs_of(step.plus or step.minus)
        index = self.index(self.catalog.snapshot(stored).identity, old)
        if changed is None or index is None:
            return None
        if step.plus is not None:
            record.method = Method.INSERTION_IN_MEMORY
            fresh = closure_arrays.insertion(index, changed)
            added = fresh.table(old.schema)
            return ChangedRelation(
                pa.concat_tables([old, added]), nonempty(added), None, index=index.changed(added=fresh)
            )
        steps = self.pairs_of(step.new)
        if steps is None:
            return None
        deletion = closure_arrays.deletion(index, changed, steps)
        over, again = deletion.over_deleted, deletion.again
        record.method = Method.DRED_IN_MEMORY
        record.over_deleted, record.rederived = len(over), int(again.sum())
        index = index.changed(removed=over.take(~again)).merged()  # the table is written whole: merged anyway
        return ChangedRelation(
            index.table(old.schema), None, nonempty(over.take(~again).table(old.schema)), index=index
        )

    def index(self, version: str, facts: pa.Table) -> Index | None:
        """The index of a closure's facts (kept by version, made when first needed)."""
        index = self.catalog.kept_indexes.find(version)
        if index is not None or facts.num_rows > self.local_rows:
            return index
        index = self.made(facts)
        if index is not None:
            self.catalog.kept_indexes.put(version, index)
        return index

    def index_after(self, stored: str | None, result: ChangedRelation) -> Index | Future | None:
        """A closure's index after a change the queries made, or a computation: the one kept of the
        version before changed by the facts gained and lost, else made from the facts, by another
        thread while the facts are written (`settled` waits for it)."""
        old = self.catalog.kept_indexes.find(self.catalog.snapshot(stored).identity) if stored else None
        if old is None or result.types is not None:
            if self.builds is None:
                self.builds = ThreadPoolExecutor(1, thread_name_prefix="recsql-index")
            return self.builds.submit(self.made, result.facts)
        gained, lost = (Pairs.of(rows) if rows is not None else Pairs.empty() for rows in (result.plus, result.minus))
        return old.changed(added=gained, removed=lost) if gained is not None and lost is not None else None

    def made(self, facts: pa.Table) -> Index | None:
        pairs = Pairs.of(facts) if facts.num_rows <= self.local_rows else None
        return Index.of(pairs) if pairs is not None else None

    @staticmethod
    def settled(index: Index | Future | None) -> Index | None:
        """The index, once made; None if making it failed (it is made again when next needed: the view's
        table, committed already, does not depend on it)."""
        if not isinstance(index, Future):
            return index
        try:
            return index.result()
        except (MemoryError, ValueError, TypeError):
            return None

    def close(self) -> None:
        if self.builds is not None:
            self.builds.shutdown(wait=False)

    def pairs_of(self, name: str) -> Pairs | None:
        facts = self.catalog.arrow_table(name)
        return Pairs.of(facts) if isinstance(facts, pa.Table) else None
