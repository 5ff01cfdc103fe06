"""How the rounds of a stratum run as recursive queries (recursive_query.py) are evaluated: in chunks of
rounds, as `fixpoint.iterate` asks for them (fixpoint.Evaluation), between the loop's checks (Rounds), after
the loop's iterations while the types settle or the rounds are wide (LoopThenRounds, Thinness); or all at
once, the query calling back with each round's rows for the loop's checks (CountedRounds)."""

from __future__ import annotations

import functools
import time
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from recsql.engine.fixpoint import Ahead, CapacityExceeded, Fixpoint, Limits, Reached
from recsql.engine.local.database import Database, quote
from recsql.engine.progress import Progress, ProgressListener

BOUND = "__rounds_bound"  # the parameter bounding a chunk's rounds
SEEDS = "__round_seeds"  # the rows a chunk starts from
FROM = "__rounds_from"  # the parameter naming the round a chunk goes on from
ROWS = "__rounds_rows"  # the parameter bounding a chunk's rows, where each round is one row at most
FIRST_CHUNK = 8  # rounds in the first chunk: how far the rows may grow before the limits are first checked
LONGEST_CHUNK = 4096
LONGEST_NARROWING = 65_536  # rounds of a narrowing recursion's chunk: a thin one's in a quarter of a second
GROWTH = 8  # how many times longer the next chunk, while rounds do not grow
THIN_ROUND = 1000  # rows: a round no wider (and no wider than the one before) hands a UNION's rest to one query
FEW_KNOWN = 10_000  # facts: past them a UNION or a min() stays in the loop (a query's rounds compare with each)


def thin_with_few_known(new: int, before: int, known: int) -> bool:
    """Whether rounds may run as one query from a round of `new` rows after one of `before` (0: none):
    it is thin (at most THIN_ROUND rows, and no wider than the round before) and at most FEW_KNOWN facts
    are known (each round of a UNION's or a min()'s query compares its rows with them all)."""
    return new <= min(THIN_ROUND, before or new) and known <= FEW_KNOWN


class Recursion(Protocol):
    """The recursive query whose rounds are run (recursive_query.RecursiveQuery)."""

    name: str  # the relation's
    db: Database
    bag: bool  # UNION ALL: a chunk goes on from the last round's rows alone
    narrowing: bool  # no round wider than the one before
    round_column: str

    @property
    def single_row(self) -> bool:
        """Every round is one row at most: the rows, in order, are the rounds (no column says)."""
        ...

    def query(self, anchor: str) -> str:
        """The recursion from the rows of `anchor`, with their rounds."""
        ...

    def exit_sql(self) -> str: ...

    def exit_rows_bound(self) -> int | None: ...

    def with_rounds(self, known: pa.Table, new: pa.Table, round_: int) -> pa.Table:
        """The facts known before round `round_` and those new in it, each with a round."""
        ...

    def facts(self, rows: pa.Table) -> pa.Table:
        """The relation's facts among rows of rounds."""
        ...


def between_rounds(sql: str, first: int, bound: int) -> str:
    """`sql` with its FROM and BOUND parameters as the literals `first` and `bound` (and ROWS as the rows of
    rounds `first` to `bound`): DuckDB reads a parameter again in every round of a recursion (a thin one
    runs in about two thirds of the time so)."""
    rows = str(bound - first + 1)
    return sql.replace(f"${BOUND}", str(bound)).replace(f"${FROM}", str(first)).replace(f"${ROWS}", rows)


class Rounds:
    """The rounds of a recursion, queried in chunks as `fixpoint.iterate` asks for them (fixpoint.Evaluation).
    A chunk queries the rounds after `from_round` up to its bound, starting from the rows of `from_round`
    (a UNION's from all its rows, which its rounds must not derive again); the rows of the bound's round are
    there when the recursion goes on past it."""

    def __init__(self, recursion: Recursion, limits: Limits):
        self.recursion = recursion
        self.max_iterations = limits.max_iterations
        self.row_bound = limits.row_bound()
        self.round_column = recursion.round_column
        self.chunks: list[pa.Table] = []  # each chunk's rows, but for those of the rounds it started from
        self.counts: dict[int, int] = {}  # rows per round queried so far
        self.chunk_counts = np.zeros(0, np.int64)  # rows per round of the last chunk, the last round's last
        self.known_before = 0  # facts known before the round the rounds were seeded with
        self.round = 0  # the round iterate() is at
        self.last = 0  # the last round queried
        self.length = FIRST_CHUNK

    @functools.cached_property
    def sql(self) -> str:
        """The recursion from the SEEDS rows (printed once asked: a recursion may stay in the loop)."""
        return self.recursion.query(f"SELECT * FROM {quote(SEEDS)}")

    def start(self) -> int:
        """The exit rules' rounds and a first chunk: of a narrowing recursion whose exit rows are bounded,
        as many rounds as the rows allowed can fill at that width (up to LONGEST_NARROWING: progress
        comes between chunks), else FIRST_CHUNK."""
        exit_rows = self.recursion.exit_rows_bound() if self.recursion.narrowing else None
        if exit_rows is not None:
            self.length = min(max(self.row_bound // max(exit_rows, 1), FIRST_CHUNK), LONGEST_NARROWING)
        self.query(self.recursion.query(self.recursion.exit_sql()), 0, {})
        return self.counts.get(0, 0)

    def seed(self, known: pa.Table, new: pa.Table, round_: int) -> None:
        """Go on from round `round_`, whose new facts are `new`, the facts before them `known`: a first
        chunk of one round, which says whether the rounds grow."""
        self.chunks = [self.recursion.with_rounds(known, new, round_)]
        self.counts = {round_: new.num_rows}
        self.known_before = known.num_rows
        self.round = self.last = round_
        self.length = 0  # next_chunk: one round

    def thin(self) -> bool:
        """Whether the last round queried is thin and few facts are known (thin_with_few_known)."""
        last, before = self.counts.get(self.last, 0), self.counts.get(self.last - 1, 0)
        return thin_with_few_known(last, before, self.known_before + sum(self.counts.values()))

    def step(self) -> int:
        self.round += 1
        if self.round > self.last:
            self.next_chunk()
        return self.counts.get(self.round, 0)

    def next_chunk(self) -> None:
        """The rounds after the last one queried, from its rows: more of them while rounds do not grow;
        of a narrowing recursion, as many as the rows allowed can fill at the width of the last round."""
        last = self.counts.get(self.last, 0)
        first = self.counts.get(self.last - self.length + 1, last)
        if self.recursion.narrowing:
            self.length = min(max((self.row_bound - sum(self.counts.values())) // max(last, 1), 1), LONGEST_NARROWING)
        elif not self.length:
            self.length = 1
        else:
            self.length = min(self.length * GROWTH, LONGEST_CHUNK) if last <= first else 1
        if self.recursion.single_row:
            previous = self.chunks[-1]
            seeds = previous.slice(previous.num_rows - 1).drop_columns([self.round_column])
        elif self.recursion.bag:
            previous = self.chunks[-1]
            seeds = previous.filter(pc.equal(previous.column(self.round_column), self.last))
        else:
            seeds = self.all_rows()
        self.query(self.sql, self.last, {SEEDS: seeds})

    def query(self, sql: str, from_round: int, tables: dict[str, pa.Table]) -> None:
        bound = min(from_round + self.length, self.max_iterations)
        facts = self.recursion.db.query(between_rounds(sql, from_round, bound), **tables)
        if self.recursion.single_row:  # its rows are its rounds from `from_round` on
            positions = pa.array(np.arange(from_round, from_round + facts.num_rows, dtype=np.int64))
            facts = facts.append_column(self.round_column, positions)
        if self.chunks:
            facts = facts.filter(pc.greater(facts.column(self.round_column), from_round))
        self.chunks.append(facts)
        rounds = pc.value_counts(facts.column(self.round_column))
        values, counts = rounds.field("values").to_numpy(), rounds.field("counts").to_numpy()
        self.counts.update(zip(values.tolist(), counts.tolist()))
        self.chunk_counts = np.zeros(bound - from_round + 1, np.int64)
        self.chunk_counts[values - from_round] = counts
        self.last = bound

    def facts(self) -> dict[str, int]:
        return {self.recursion.name: self.counts.get(self.round, 0)}

    def ahead(self) -> Ahead | None:
        """The rounds queried after the one iterate() is at."""
        if self.last == self.round:
            return None
        return Ahead(self.chunk_counts[self.round - self.last :], self.skip)  # the chunk's last rounds

    def skip(self, rounds: int) -> None:
        self.round += rounds

    def reached(self, seconds: float = 0.0, facts: int = 0, expected: int = 0) -> Reached[pa.Table]:
        """Where the rounds are: the facts before the round iterate() is at, and those new in it."""
        name = self.recursion.name
        return Reached({name: self.before()}, {name: self.of_round()}, self.round, seconds, facts, expected)

    def facts_so_far(self) -> pa.Table:
        """The facts of every round."""
        return self.recursion.facts(self.all_rows())

    def before(self) -> pa.Table:
        """The facts of the rounds before the one iterate() is at."""
        rows = self.all_rows()
        return self.recursion.facts(rows.filter(pc.less(rows.column(self.round_column), self.round)))

    def of_round(self) -> pa.Table:
        """The new facts of the round iterate() is at."""
        rows = self.all_rows()
        return rows.filter(pc.equal(rows.column(self.round_column), self.round)).drop_columns([self.round_column])

    def all_rows(self) -> pa.Table:
        return pa.concat_tables(self.chunks) if len(self.chunks) > 1 else self.chunks[0]


class LoopThenRounds:
    """The loop's iterations up to `settled_at`, then the rounds of the recursive queries, from the loop's
    facts (fixpoint.Evaluation). `while_wide`: the loop also runs while the rounds are wide (Thinness) or
    many facts are known (FEW_KNOWN), and from one iteration at least: each round of a UNION's or a min()'s
    query compares its rows with every fact known (`recurring`), so a wide or long search costs it far more
    than the loop (a bag's rounds compare nothing); the loop takes the rounds back where those queried end
    wide or with many facts known (`widened`)."""

    def __init__(self, loop: Fixpoint[pa.Table, str], settled_at: int, rounds: Rounds, while_wide: bool):
        self.loop = loop
        self.settled_at = max(settled_at, 1) if while_wide else settled_at
        self.rounds = rounds
        self.thinness = Thinness(loop, self.settled_at) if while_wide else None
        (self.name,) = loop.states
        self.queried = False  # whether the rounds have taken over

    def start(self) -> int:
        if self.settled_at:
            return self.observed(self.loop.start())
        self.queried = True
        return self.rounds.start()

    def step(self) -> int:
        if self.queried and not self.widened():
            return self.rounds.step()
        if self.queried:
            self.back_to_loop()
        new = self.observed(self.loop.step())
        ready = self.thinness.ready() if self.thinness is not None else self.loop.iterations >= self.settled_at
        if new and ready:
            state = self.loop.states[self.name]
            self.rounds.seed(state.old, state.delta, self.loop.iterations)
            self.queried = True
        return new

    def widened(self) -> bool:
        """Whether the rounds queried so far end wide or with many facts known, the next round to query: its
        rows would be compared with them all (`recurring`), where the loop's iteration costs less."""
        return self.thinness is not None and self.rounds.round == self.rounds.last and not self.rounds.thin()

    def back_to_loop(self) -> None:
        """The loop goes on from the last round queried (its facts and those before it)."""
        reached, loop = self.rounds.reached(), self.loop
        self.loop = Fixpoint(loop.engine, loop.program, loop.stratum, reached=reached)
        self.thinness = Thinness(self.loop, reached.iterations + 1)
        self.thinness.observe(self.loop.start())  # the next iteration is thin only if no wider than this round
        self.queried = False

    def observed(self, new: int) -> int:
        return self.thinness.observe(new) if self.thinness is not None else new

    def facts(self) -> dict[str, int]:
        return self.rounds.facts() if self.queried else self.loop.facts()

    def watched(self) -> tuple[int, ...]:
        return ()

    def ahead(self) -> Ahead | None:
        return self.rounds.ahead() if self.queried else None

    def result(self) -> pa.Table:
        return self.rounds.facts_so_far() if self.queried else self.loop.states[self.name].full

    def reached(self, seconds: float, exceeded: CapacityExceeded) -> Reached[pa.Table]:
        """Where the evaluation stopped past its capacity (CapacityExceeded.reached)."""
        where = self.rounds if self.queried else self.loop
        return where.reached(seconds, exceeded.facts, exceeded.expected)


class Thinness:
    """Whether `loop` may hand its rounds over to one query: from iteration `settled_at` on, once a round is
    thin (at most THIN_ROUND new rows, and no more than the round before: a chain, a hierarchy, the tail of
    a search) and few facts are known (FEW_KNOWN: each round of a UNION's or a min()'s query compares its
    rows with them all); before, a query and a round trip per iteration cost less."""

    def __init__(self, loop: Fixpoint[pa.Table, str], settled_at: int):
        self.loop = loop
        self.settled_at = settled_at
        (self.name,) = loop.states
        self.before = self.last = 0  # the new rows of the last two iterations observed

    def observe(self, new: int) -> int:
        self.before, self.last = self.last, new
        return new

    def ready(self) -> bool:
        known = self.loop.states[self.name].full.num_rows
        return self.loop.iterations >= self.settled_at and thin_with_few_known(self.last, self.before, known)


class CountedRounds:
    """The rounds of a UNION's recursive query as DuckDB runs them all at once (Database.query_by_rounds):
    called with each round's rows (its new facts: DuckDB's UNION keeps only the rows not known) before the
    next round is derived, it checks the loop's limits and reports progress as fixpoint.iterate does after
    each iteration of the loop, so that a limit stops the query at the iteration where it stops the loop,
    with the loop's error. `after`: the iterations the loop made before the query, whose facts (`derived`
    of them, `new` in the last) are the query's first round (none: the exit rules' facts are)."""

    def __init__(
        self,
        limits: Limits,
        progress: ProgressListener | None,
        started: float,
        after: int = 0,
        derived: int = 0,
        new: int = 0,
    ):
        self.limits = limits
        self.progress = progress
        self.started = started
        self.after = after
        self.derived = derived
        self.new = new
        self.rounds = 0  # the rounds called back so far

    def __call__(self, rows: int) -> None:
        self.rounds += 1
        iteration = self.iterations - 1  # whose new facts the rows are
        if self.rounds > 1 or not self.after:  # the loop checked and reported its own
            previous, self.new = self.new, rows
            self.derived += rows
            if iteration:  # as the loop's, from its first iteration on
                self.limits.check_rows(self.derived, iteration, rows, previous)
            self.report(iteration)
        self.limits.check_iteration(iteration + 1)

    @property
    def iterations(self) -> int:
        """The iterations made: the last one derived nothing new, once the query has ended."""
        return self.after + self.rounds

    def end(self) -> None:
        """The query has ended: its last round derived nothing new."""
        self.new = 0
        self.report(self.iterations)

    def report(self, iteration: int) -> None:
        if self.progress is not None:
            elapsed, relations = time.monotonic() - self.started, self.limits.stratum.relations
            (name,) = relations
            self.progress(Progress(relations, iteration, self.new, self.derived, elapsed, {name: self.new}))
