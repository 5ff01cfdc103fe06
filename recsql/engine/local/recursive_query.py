"""A recursive stratum run as DuckDB `WITH RECURSIVE` queries printed from its rules, where the planner found
DuckDB's recursion to mean what the semi-naive loop means (planner/single_query.py): DuckDB iterates inside
one query, with no Python and no round trip per iteration.

The rules are printed and cast to the types of Spark's evaluation as the loop prints and casts them, so the
values are the loop's. Where Spark widens the facts' types while iterating (a literal anchor of INT beside a
BIGINT table), the loop runs the iterations whose types differ, casting iteration by iteration, and the
queries go on from its facts once the types have settled. The loop's limits hold:

* UNION ALL: a column counts the rounds. The query runs in chunks of rounds, each chunk starting from the
  rows of the last round of the one before; between chunks the rounds' row counts go through the loop's
  own checks (fixpoint.iterate), so max_iterations, max_rows and a local capacity stop the evaluation with
  the loop's errors, and progress is reported round by round. Chunks grow while the rounds do not.
* UNION: DuckDB's own UNION keeps the rows not known yet, as the loop does, and is fast; it has no column
  counting the rounds (rows differing in it would all be kept), so the planner takes this form only where
  rows cannot grow without end. The loop runs while the rounds are wide (its cost per iteration is worth
  it there, and a wide search would soon pass the bound below); once a round is thin and no wider than the
  last, one query runs the rest from the loop's facts. Its answer stands if it could not have passed a
  limit: no more new rows than the iterations max_iterations leaves (each iteration adds a row), max_rows
  and the capacity; otherwise the loop goes on from where it handed over, to stop where it stops. Where
  the iterations are to be counted (EXPLAIN ANALYZE), the rows are keyed by their columns (`USING KEY`),
  carry their round, and each round keeps only the rows the recursion does not hold yet (an anti-join
  with `recurring`): the same rows, by rounds, checked as UNION ALL's are, at the cost of that join each
  round.
* min() / max() in the header: each round's candidates are grouped and only the groups whose value improves
  on the best known one are kept, as the loop's merge keeps them; the rows are keyed by their group and
  round (`USING KEY`), so every improvement stays with its round, counted and checked as UNION ALL's rows
  are; the best known values are the latest round's of each group.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from recsql.engine.columns import column_names
from recsql.engine.fixpoint import CapacityExceeded, Fixpoint, Limits, Reached, iterate
from recsql.engine.local.database import Database
from recsql.engine.progress import Progress, ProgressListener
from recsql.engine.relation_types import SETTLED, RelationTypes, ResultTypes
from recsql.engine.sql.printing import Printer
from recsql.engine.sql.queries import improves
from recsql.engine.sql.rules import identifier, range_call, rule_query, table
from recsql.planner.plan import Stratum
from translator.ir import Atom, Condition, Iteration, Program, Rule, var

RECURSION = "__recursion"  # the common table expression of the stratum's relation
ROUND = "__round"  # the variable of the round that derived a row (UNION ALL)
BOUND = "__rounds_bound"  # the parameter bounding a chunk's rounds
SEEDS = "__round_seeds"  # the rows a chunk starts from
FROM = "__rounds_from"  # the parameter naming the round a chunk goes on from
FIRST_CHUNK = 8  # rounds in the first chunk: how far the rows may grow before the limits are first checked
LONGEST_CHUNK = 4096
GROWTH = 8  # how many times longer the next chunk, while rounds do not grow
SETTLING = 3  # iterations the loop may run while the types widen, before the queries go on
THIN_ROUND = 1000  # rows: a round no wider (and no wider than the one before) hands a UNION's rest to one query
FEW_KNOWN = 10_000  # facts: past them a UNION or a min() stays in the loop (a query's rounds compare with each)


def settled_at(stratum: Stratum, types: ResultTypes | None) -> int | None:
    """The iteration from which the stratum runs as recursive queries: the first after which its facts have
    the types they keep (0: the exit rules'). None where it does not run so: the planner found the form does
    not fit, or the types settle only later."""
    if stratum.single_query is None or not stratum.single_query.fits or not stratum.exit_rules:
        return None
    if types is None:
        return 0
    settled = types(SETTLED)
    if any(settled[name].full != settled[name].delta for name in stratum.relations):
        return None
    for iteration in range(SETTLING + 1):
        current = types(iteration)
        if all(current[n].full == settled[n].full and current[n].delta == settled[n].delta for n in settled):
            return iteration
    return None


class RecursiveQuery:
    """One stratum of one relation, its rules printed for DuckDB reading the stratum's inputs as `inputs`
    names them (registered tables of `db`), from iteration `settled_at` on (the loop's before).
    `counted`: count a UNION's iterations too."""

    def __init__(
        self,
        db: Database,
        printer: Printer,
        program: Program,
        stratum: Stratum,
        inputs: Mapping[str, str],
        types: ResultTypes | None,
        settled_at: int,
        counted: bool = False,
    ):
        self.db = db
        self.printer = printer
        self.program = program
        self.stratum = stratum
        self.inputs = inputs
        (self.name,) = stratum.relations
        self.width = len(program.relations[self.name].columns)
        self.names = column_names(self.width + 1)  # the relation's columns, then the round's
        self.start_types = types(0)[self.name] if types is not None else None
        self.round_types = types(SETTLED)[self.name] if types is not None else None
        self.settled_at = settled_at
        self.bag = stratum.iteration is Iteration.BAG
        self.aggregate = program.relations[self.name].aggregate  # min() / max(): rounds keep improvements
        self.keys = [self.names[i] for i in program.relations[self.name].group_key]
        self.counted = counted or self.bag or self.aggregate is not None
        self.iterations: int | None = None  # once run: the iterations, where counted

    def run(
        self, loop: Fixpoint[pa.Table, str], limits: Limits, progress: ProgressListener | None
    ) -> dict[str, pa.Table]:
        """The facts of the relation. `loop`: the loop, not started, for the iterations before the types
        settle, and under UNION while the rounds are wide (and after, where the query's answer may have
        passed a limit)."""
        started = time.monotonic()
        if self.counted:
            evaluation = LoopThenRounds(loop, self.settled_at, Rounds(self, limits), while_wide=not self.bag)
            try:
                self.iterations = iterate(evaluation, limits, progress)
            except CapacityExceeded as exceeded:
                exceeded.reached = evaluation.reached(time.monotonic() - started, exceeded)
                raise
            return {self.name: evaluation.result()}
        wide = WideRounds(loop, self.settled_at)
        try:
            iterate(wide, limits, progress, until=wide.handing_over)
        except CapacityExceeded as exceeded:
            exceeded.reached = loop.reached(time.monotonic() - started, exceeded.facts, exceeded.expected)
            raise
        known = loop.states[self.name].full
        if not wide.going_on:
            return {self.name: known}
        facts = self.db.query(self.query(f"SELECT * FROM {self.printer.quote(SEEDS)}"), **{SEEDS: known})
        rows = facts.num_rows
        if loop.iterations + rows - known.num_rows > limits.max_iterations or rows > min(
            limits.max_rows, limits.capacity or rows
        ):  # it may have passed a limit: the loop goes on from where it handed over, to stop where it stops
            resumed = Fixpoint(loop.engine, self.program, self.stratum, reached=loop.reached(0.0))
            answer = resumed.run(limits, progress)
            self.iterations = resumed.iterations
            return answer
        if progress is not None:
            elapsed, after = time.monotonic() - started, loop.iterations + 1
            progress(Progress(self.stratum.relations, after, rows, rows, elapsed, {self.name: rows}, whole=True))
        return {self.name: facts}

    # ------------------------------------------------------------------ printing

    def query(self, anchor: str) -> str:
        """The recursion from the rows of `anchor` (with their rounds where counted)."""
        quote = self.printer.quote
        names = self.names[: self.width + self.counted]
        recursive = self.recursive_sql()
        union, key = "UNION ALL" if self.bag else "UNION", ""
        if self.aggregate is not None:
            key = f" USING KEY ({', '.join(quote(name) for name in (*self.keys, names[-1]))})"
            recursive = self.improvements(self.best(recursive))
        elif self.counted and not self.bag:  # each round keeps the rows the recursion does not hold yet
            key = f" USING KEY ({', '.join(quote(name) for name in names[:-1])})"
            same = " AND ".join(f"n.{quote(name)} IS NOT DISTINCT FROM k.{quote(name)}" for name in names[:-1])
            recursive = f"SELECT n.* FROM ({recursive}) AS n ANTI JOIN recurring.{quote(RECURSION)} AS k ON {same}"
        return (
            f"WITH RECURSIVE {quote(RECURSION)}({', '.join(quote(name) for name in names)}){key} AS "
            f"(SELECT * FROM ({anchor}) AS anchor {union} ({recursive})) SELECT * FROM {quote(RECURSION)}"
        )

    def best(self, candidates: str) -> str:
        """The best value of each group of `candidates` (rows with their round), as the loop's merge takes it."""
        assert self.aggregate is not None  # only of a min() / max() recursion
        quote = self.printer.quote
        function = self.aggregate.function.value
        items = [
            f"{function}(c.{quote(name)}) AS {quote(name)}" if i == self.aggregate.column else f"c.{quote(name)}"
            for i, name in enumerate(self.names[: self.width])
        ]
        round_ = quote(self.names[self.width])
        groups = ", ".join(f"c.{quote(name)}" for name in self.keys)
        return f"SELECT {', '.join(items)}, max(c.{round_}) AS {round_} FROM ({candidates}) AS c GROUP BY {groups}"

    def improvements(self, best: str) -> str:
        """The groups of `best` whose value improves on every one known (or that are new): the loop's own
        condition (queries.improves), over every round's rows of the group."""
        relation = self.program.relations[self.name]
        known = exp.Table(this=identifier(RECURSION), db=identifier("recurring"))
        return f"SELECT b.* FROM ({best}) AS b WHERE {self.printer.sql(improves(relation, known))}"

    def facts(self, rows: pa.Table) -> pa.Table:
        """The relation's facts among rows of rounds: the rows without their round, of min() / max() each
        group's latest (best) row."""
        column = self.names[self.width]
        if self.aggregate is None:
            return rows.drop_columns([column])
        quote = self.printer.quote
        groups = ", ".join(quote(name) for name in self.keys)
        return self.db.query(
            f"SELECT * EXCLUDE ({quote(column)}) FROM _rows "
            f"QUALIFY row_number() OVER (PARTITION BY {groups} ORDER BY {quote(column)} DESC) = 1",
            _rows=rows,
        )

    @functools.cache  # noqa: B019 - one per stratum run, printed once for its every chunk
    def recursive_sql(self) -> str:
        return self.printer.union_all([self.variant_sql(variant.rule) for variant in self.stratum.variants])

    def exit_sql(self) -> str:
        """The facts of the exit rules (with round 0 where rounds are counted)."""
        parts = [self.printer.sql(rule_query(rule, self.source)) for rule in self.stratum.exit_rules]
        sql = self.typed(self.printer.union_all(parts), self.start_types, self.width)
        if self.counted:
            sql = f"SELECT *, CAST(0 AS BIGINT) AS {self.printer.quote(self.names[self.width])} FROM ({sql}) AS facts"
        if self.aggregate is not None:
            sql = self.best(sql)
        return sql

    def variant_sql(self, rule: Rule) -> str:
        """A recursive rule over the last round's rows (where counted, the rows of rounds from the FROM
        parameter below the BOUND parameter, deriving the next round's)."""
        extra: tuple[exp.Expr, ...] = ()
        if self.counted:
            rule = counting(rule, self.name)
            extra = (exp.Add(this=var(ROUND), expression=exp.Literal.number(1)),)
        sql = self.printer.sql(rule_query(rule, self.source, extra))
        return self.typed(sql, self.round_types, self.width + len(extra))

    def source(self, position: int, atom: Atom) -> exp.Expr:
        if atom.call_args:
            return range_call(atom)
        return table(RECURSION if atom.relation == self.name else self.inputs[atom.relation])

    def typed(self, sql: str, types: RelationTypes | None, width: int) -> str:
        """`sql` cast as the loop casts a relation's candidates, then its new facts (a round's column as is)."""
        if types is None:
            return sql
        names = self.names[:width]
        candidates = types.candidates if types.candidates != types.delta else None  # one cast does
        for schema in (candidates, types.delta):
            if schema is not None:
                if width > self.width:
                    schema = schema.append(pa.field(names[-1], pa.int64()))
                sql = self.db.cast(sql, names, schema)
        return sql

    def with_rounds(self, known: pa.Table, new: pa.Table, round_: int) -> pa.Table:
        """The facts known before round `round_` and those new in it, each with a round (the known ones the
        round before: all a chunk needs of them is that they are older)."""
        column = self.printer.quote(self.names[self.width])
        sql = (
            f"SELECT *, CAST({round_ - 1} AS BIGINT) AS {column} FROM _known "
            f"UNION ALL SELECT *, CAST({round_} AS BIGINT) AS {column} FROM _new"
        )
        return self.db.query(sql, _known=known, _new=new)


def counting(rule: Rule, relation: str) -> Rule:
    """`rule` reading the round of the relation's rows, for rounds from the FROM parameter below the BOUND one."""
    body = tuple(
        dataclasses.replace(literal, args=(*literal.args, ROUND))
        if isinstance(literal, Atom) and literal.relation == relation
        else literal
        for literal in rule.body
    )
    below = Condition(exp.LT(this=var(ROUND), expression=exp.Placeholder(this=BOUND)))
    since = Condition(exp.GTE(this=var(ROUND), expression=exp.Placeholder(this=FROM)))
    return dataclasses.replace(rule, body=(*body, below, since))


def between_rounds(sql: str, first: int, bound: int) -> str:
    """`sql` with its FROM and BOUND parameters as the literals `first` and `bound`: DuckDB reads a
    parameter again in every round of a recursion (a thin one runs in about two thirds of the time so)."""
    return sql.replace(f"${BOUND}", str(bound)).replace(f"${FROM}", str(first))


class Rounds:
    """The rounds of a recursion, queried in chunks as `fixpoint.iterate` asks for them (fixpoint.Evaluation).
    A chunk queries the rounds after `from_round` up to its bound, starting from the rows of `from_round`
    (a UNION's from all its rows, which its rounds must not derive again); the rows of the bound's round are
    there when the recursion goes on past it."""

    def __init__(self, recursion: RecursiveQuery, limits: Limits):
        self.recursion = recursion
        self.max_iterations = limits.max_iterations
        self.sql = recursion.query(f"SELECT * FROM {recursion.printer.quote(SEEDS)}")
        self.round_column = recursion.names[recursion.width]
        self.chunks: list[pa.Table] = []  # each chunk's rows, but for those of the rounds it started from
        self.counts: dict[int, int] = {}  # rows per round queried so far
        self.round = 0  # the round iterate() is at
        self.last = 0  # the last round queried
        self.length = FIRST_CHUNK

    def start(self) -> int:
        self.query(self.recursion.query(self.recursion.exit_sql()), 0, {})
        return self.counts.get(0, 0)

    def seed(self, known: pa.Table, new: pa.Table, round_: int) -> None:
        """Go on from round `round_`, whose new facts are `new`, the facts before them `known`."""
        self.chunks.append(self.recursion.with_rounds(known, new, round_))
        self.counts[round_] = new.num_rows
        self.round = self.last = round_

    def step(self) -> int:
        self.round += 1
        if self.round > self.last:
            self.next_chunk()
        return self.counts.get(self.round, 0)

    def next_chunk(self) -> None:
        """The rounds after the last one queried, from its rows: more of them while rounds do not grow."""
        last = self.counts.get(self.last, 0)
        first = self.counts.get(self.last - self.length + 1, last)
        self.length = min(self.length * GROWTH, LONGEST_CHUNK) if last <= first else 1
        if self.recursion.bag:
            previous = self.chunks[-1]
            seeds = previous.filter(pc.equal(previous.column(self.round_column), self.last))
        else:
            seeds = self.all_rows()
        self.query(self.sql, self.last, {SEEDS: seeds})

    def query(self, sql: str, from_round: int, tables: dict[str, pa.Table]) -> None:
        bound = min(from_round + self.length, self.max_iterations)
        facts = self.recursion.db.query(between_rounds(sql, from_round, bound), **tables)
        if self.chunks:
            facts = facts.filter(pc.greater(facts.column(self.round_column), from_round))
        self.chunks.append(facts)
        rounds = pc.value_counts(facts.column(self.round_column))
        self.counts.update(zip(rounds.field("values").to_pylist(), rounds.field("counts").to_pylist()))
        self.last = bound

    def facts(self) -> dict[str, int]:
        return {self.recursion.name: self.counts.get(self.round, 0)}

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
    than the loop (a bag's rounds compare nothing)."""

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
        if self.queried:
            return self.rounds.step()
        new = self.observed(self.loop.step())
        ready = self.thinness.ready() if self.thinness is not None else self.loop.iterations >= self.settled_at
        if new and ready:
            state = self.loop.states[self.name]
            self.rounds.seed(state.old, state.delta, self.loop.iterations)
            self.queried = True
        return new

    def observed(self, new: int) -> int:
        return self.thinness.observe(new) if self.thinness is not None else new

    def facts(self) -> dict[str, int]:
        return self.rounds.facts() if self.queried else self.loop.facts()

    def watched(self) -> tuple[int, ...]:
        return ()

    def ahead(self) -> int:
        return self.rounds.last - self.rounds.round if self.queried else 0

    def result(self) -> pa.Table:
        return self.rounds.facts_so_far() if self.queried else self.loop.states[self.name].full

    def reached(self, seconds: float, exceeded: CapacityExceeded) -> Reached[pa.Table]:
        """Where the evaluation stopped past its capacity (CapacityExceeded.reached)."""
        if not self.queried:
            return self.loop.reached(seconds, exceeded.facts, exceeded.expected)
        known, new, iterations = self.rounds.before(), self.rounds.of_round(), self.rounds.round
        return Reached({self.name: known}, {self.name: new}, iterations, seconds, exceeded.facts, exceeded.expected)


class Thinness:
    """Whether `loop` may hand its rounds over to one query: from iteration `settled_at` on, once a round is
    thin (at most THIN_ROUND new rows, and no more than the round before: a chain, a hierarchy, the tail of
    a search) and few facts are known (FEW_KNOWN: each round of a UNION's or a min()'s query compares its
    rows with them all); before, a query and a round trip per iteration cost less."""

    def __init__(self, loop: Fixpoint[pa.Table, str], settled_at: int):
        self.loop = loop
        self.settled_at = settled_at
        (self.name,) = loop.states
        self.last = 0
        self.thin = False

    def observe(self, new: int) -> int:
        self.thin, self.last = new <= min(THIN_ROUND, self.last or new), new
        return new

    def ready(self) -> bool:
        known = self.loop.states[self.name].full.num_rows
        return self.thin and known <= FEW_KNOWN and self.loop.iterations >= self.settled_at


class WideRounds:
    """The loop's iterations while its rounds are wide or the types still widen (fixpoint.Evaluation): an
    iteration of the loop costs a query and a round trip, worth it while each round derives many rows. Once
    the types have settled and the rounds are thin (Thinness), it hands over (`handing_over`,
    fixpoint.iterate's `until`), for one query to run the rest. `going_on`: whether the last iteration
    derived new facts."""

    def __init__(self, loop: Fixpoint[pa.Table, str], settled_at: int):
        self.loop = loop
        self.thinness = Thinness(loop, max(settled_at, 1))  # one iteration at least: whether the rounds grow
        self.going_on = False

    def start(self) -> int:
        return self.observe(self.loop.start())

    def step(self) -> int:
        return self.observe(self.loop.step())

    def handing_over(self) -> bool:
        return self.thinness.ready()

    def observe(self, new: int) -> int:
        self.going_on = new > 0
        return self.thinness.observe(new)

    def facts(self) -> dict[str, int]:
        return self.loop.facts()

    def watched(self) -> tuple[int, ...]:
        return ()

    def ahead(self) -> int:
        return 0
