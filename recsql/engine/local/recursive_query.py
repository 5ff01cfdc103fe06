"""A recursive stratum run as DuckDB `WITH RECURSIVE` queries printed from its rules, where the planner found
DuckDB's recursion to mean what the semi-naive loop means (planner/single_query.py): DuckDB iterates inside
one query, with no Python and no round trip per iteration.

The rules are printed and cast to the types of Spark's evaluation as the loop prints and casts them, so the
values are the loop's; this needs the facts' types to be the same from the exit rules on (where Spark
widens them while iterating, the loop casts iteration by iteration). The loop's limits hold:

* UNION ALL: a column counts the rounds. The query runs in chunks of rounds, each chunk starting from the
  rows of the last round of the one before; between chunks the rounds' row counts go through the loop's
  own checks (fixpoint.iterate), so max_iterations, max_rows and a local capacity stop the evaluation with
  the loop's errors, and progress is reported round by round. Chunks grow while the rounds do not.
* UNION: DuckDB's own UNION keeps the rows not known yet, as the loop does, and is fast; it has no column
  counting the rounds (rows differing in it would all be kept), so the planner takes this form only where
  rows cannot grow without end. Its answer stands if it could not have passed a limit: no more rows than
  max_iterations (each iteration adds a row), max_rows and the capacity; otherwise the loop runs the
  stratum again to stop where it stops. Where the iterations are to be counted (EXPLAIN ANALYZE), the rows
  are keyed by their columns (`USING KEY`), carry their round, and each round keeps only the rows the
  recursion does not hold yet (an anti-join with `recurring`): the same rows, by rounds, checked as UNION
  ALL's are, at the cost of that join each round.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from recsql.engine.columns import column_names
from recsql.engine.fixpoint import CapacityExceeded, Limits, Reached, iterate
from recsql.engine.local.database import Database
from recsql.engine.progress import Progress, ProgressListener
from recsql.engine.relation_types import SETTLED, RelationTypes, ResultTypes
from recsql.engine.sql.printing import Printer
from recsql.engine.sql.rules import range_call, rule_query, table
from recsql.planner.plan import Stratum
from translator.ir import Atom, Condition, Iteration, Program, Rule, var

RECURSION = "__recursion"  # the common table expression of the stratum's relation
ROUND = "__round"  # the variable of the round that derived a row (UNION ALL)
BOUND = "__rounds_bound"  # the parameter bounding a chunk's rounds
SEEDS = "__round_seeds"  # the rows a chunk starts from
FROM = "__rounds_from"  # the parameter naming the round a chunk goes on from
FIRST_CHUNK = 8  # rounds in the first chunk: how far the rows may grow before the limits are first checked
LONGEST_CHUNK = 4096


def fits(stratum: Stratum, types: ResultTypes | None) -> bool:
    """Whether the stratum runs as recursive queries: the planner found the form fits, and the facts have
    the same types after the exit rules as after any iteration."""
    if stratum.single_query is None or not stratum.single_query.fits or not stratum.exit_rules:
        return False
    if types is None:
        return True
    start, settled = types(0), types(SETTLED)
    return all(start[name].full == settled[name].full == settled[name].delta for name in stratum.relations)


class RecursiveQuery:
    """One stratum of one relation, its rules printed for DuckDB reading the stratum's inputs as `inputs`
    names them (registered tables of `db`). `counted`: count a UNION's iterations too."""

    def __init__(
        self,
        db: Database,
        printer: Printer,
        program: Program,
        stratum: Stratum,
        inputs: Mapping[str, str],
        types: ResultTypes | None,
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
        self.bag = stratum.iteration is Iteration.BAG
        self.counted = counted or self.bag
        self.iterations: int | None = None  # once run: the iterations, where counted

    def run(self, limits: Limits, progress: ProgressListener | None) -> dict[str, pa.Table] | None:
        """The facts of the relation; None where a UNION's answer may have passed a limit (the loop then
        runs the stratum, to stop where it stops)."""
        if self.counted:
            rounds = Rounds(self, limits)
            started = time.monotonic()
            try:
                self.iterations = iterate(rounds, limits, progress)
            except CapacityExceeded as exceeded:
                known, new = rounds.before(), rounds.of_round()
                exceeded.reached = Reached(
                    {self.name: known},
                    {self.name: new},
                    rounds.round,
                    time.monotonic() - started,
                    exceeded.facts,
                    exceeded.expected,
                )
                raise
            return {self.name: rounds.facts_so_far()}
        started = time.monotonic()
        facts = self.db.query(self.query(self.exit_sql()))
        rows = facts.num_rows
        if rows > min(limits.max_iterations, limits.max_rows, limits.capacity or rows):
            return None
        if progress is not None:
            elapsed = time.monotonic() - started
            progress(Progress(self.stratum.relations, 0, rows, rows, elapsed, {self.name: rows}, whole=True))
        return {self.name: facts}

    # ------------------------------------------------------------------ printing

    def query(self, anchor: str) -> str:
        """The recursion from the rows of `anchor` (with their rounds where counted)."""
        quote = self.printer.quote
        names = self.names[: self.width + self.counted]
        recursive = self.printer.union_all([self.variant_sql(variant.rule) for variant in self.stratum.variants])
        union, key = "UNION ALL" if self.bag else "UNION", ""
        if self.counted and not self.bag:  # each round keeps the rows the recursion does not hold yet
            key = f" USING KEY ({', '.join(quote(name) for name in names[:-1])})"
            same = " AND ".join(f"n.{quote(name)} IS NOT DISTINCT FROM k.{quote(name)}" for name in names[:-1])
            recursive = f"SELECT n.* FROM ({recursive}) AS n ANTI JOIN recurring.{quote(RECURSION)} AS k ON {same}"
        return (
            f"WITH RECURSIVE {quote(RECURSION)}({', '.join(quote(name) for name in names)}){key} AS "
            f"(SELECT * FROM ({anchor}) AS anchor {union} ({recursive})) SELECT * FROM {quote(RECURSION)}"
        )

    def exit_sql(self) -> str:
        """The facts of the exit rules (with round 0 where rounds are counted)."""
        parts = [self.printer.sql(rule_query(rule, self.source)) for rule in self.stratum.exit_rules]
        sql = self.typed(self.printer.union_all(parts), self.start_types, self.width)
        if self.counted:
            sql = f"SELECT *, CAST(0 AS BIGINT) FROM ({sql}) AS facts"
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
        for schema in (types.candidates, types.delta):
            if schema is not None:
                if width > self.width:
                    schema = schema.append(pa.field(names[-1], pa.int64()))
                sql = self.db.cast(sql, names, schema)
        return sql


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

    def step(self) -> int:
        self.round += 1
        if self.round > self.last:
            self.next_chunk()
        return self.counts.get(self.round, 0)

    def next_chunk(self) -> None:
        """The rounds after the last one queried, from its rows: more of them while rounds do not grow."""
        first, last = self.counts.get(self.last - self.length + 1, 0), self.counts.get(self.last, 0)
        self.length = min(self.length * 4, LONGEST_CHUNK) if last <= first else 1
        if self.recursion.bag:
            previous = self.chunks[-1]
            seeds = previous.filter(pc.equal(previous.column(self.round_column), self.last))
        else:
            seeds = pa.concat_tables(self.chunks)
        self.query(self.sql, self.last, {SEEDS: seeds})

    def query(self, sql: str, from_round: int, tables: dict[str, pa.Table]) -> None:
        bound = min(from_round + self.length, self.max_iterations)
        facts = self.recursion.db.query(sql, params={FROM: from_round, BOUND: bound}, **tables)
        if self.chunks:
            facts = facts.filter(pc.greater(facts.column(self.round_column), from_round))
        self.chunks.append(facts)
        rounds = pc.value_counts(facts.column(self.round_column))
        self.counts.update(zip(rounds.field("values").to_pylist(), rounds.field("counts").to_pylist()))
        self.last = bound

    def facts(self) -> dict[str, int]:
        return {self.recursion.name: self.counts.get(self.round, 0)}

    def watched(self) -> tuple[int, ...]:
        return ()

    def facts_so_far(self) -> pa.Table:
        """The rows of every round, without the round's column."""
        return self.rows(None)

    def before(self) -> pa.Table:
        """The rows of the rounds before the one iterate() is at."""
        return self.rows(pc.less(self.all_rows().column(self.round_column), self.round))

    def of_round(self) -> pa.Table:
        """The rows of the round iterate() is at."""
        return self.rows(pc.equal(self.all_rows().column(self.round_column), self.round))

    def rows(self, where: pa.ChunkedArray | None) -> pa.Table:
        rows = self.all_rows()
        return (rows if where is None else rows.filter(where)).drop_columns([self.round_column])

    def all_rows(self) -> pa.Table:
        return pa.concat_tables(self.chunks) if len(self.chunks) > 1 else self.chunks[0]
