"""A recursive stratum run as DuckDB `WITH RECURSIVE` queries printed from its rules, where the planner
found DuckDB's recursion to mean what the semi-naive loop means (planner/single_query.py): DuckDB iterates
inside one query, with no Python and no round trip per iteration (rounds.py runs the queries).

The rules are printed and cast to the types of Spark's evaluation as the loop prints and casts them, so the
values are the loop's. Where Spark widens the facts' types while iterating (a literal anchor of INT beside a
BIGINT table), the loop runs the iterations whose types differ, casting iteration by iteration, and the
queries go on from its facts once the types have settled. The loop's limits hold:

* UNION ALL: a column counts the rounds. The query runs in chunks of rounds, each chunk starting from the
  rows of the last round of the one before; between chunks the rounds' row counts go through the loop's
  own checks (fixpoint.iterate), so max_iterations, max_rows and a local capacity stop the evaluation with
  the loop's errors, and progress is reported round by round. Chunks grow while the rounds do not. Where
  every round is one row at most (a narrowing recursion from one row: a counter, a date series), the rows
  are the rounds, in order: a LIMIT bounds the chunk instead of the column, which costs a third of a thin
  recursion's time (DuckDB's recursion ends once its LIMIT has its rows).
* UNION: DuckDB's own UNION keeps the rows not known yet, as the loop does, and keeps them in a hash table
  that grows with them (the loop's anti-join reads every fact known in every iteration). No column can count
  its rounds (rows differing in it would all be kept): the query calls a function of this process with each
  round's rows instead (CountedRounds, through Database.query_by_rounds), which checks the loop's limits
  and reports progress as the loop does after each iteration; a limit stops the query where it stops the
  loop. Past the local capacity, the loop goes on from where the query started, to stop where it stops
  with its facts (to move them to Spark).
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
from sqlglot import exp

from recsql.engine.columns import column_names
from recsql.engine.fixpoint import CapacityExceeded, Fixpoint, Limits, iterate
from recsql.engine.local.database import LIMIT_ERROR, ROUND_FUNCTION, Database, kept_exit_facts
from recsql.engine.local.rounds import (
    BOUND,
    FROM,
    LONGEST_NARROWING,
    ROWS,
    SEEDS,
    CountedRounds,
    LoopThenRounds,
    Rounds,
    between_rounds,
)
from recsql.engine.progress import ProgressListener
from recsql.engine.relation_types import SETTLED, RelationTypes, ResultTypes
from recsql.engine.sql.printing import Printer
from recsql.engine.sql.queries import improves
from recsql.engine.sql.rules import identifier, range_call, rule_query, table
from recsql.planner.plan import Stratum
from translator.ir import Atom, Condition, Iteration, Program, Rule, var

RECURSION = "__recursion"  # the common table expression of the stratum's relation
ROUND = "__round"  # the variable of the round that derived a row (UNION ALL)
SETTLING = 3  # iterations the loop may run while the types widen, before the queries go on


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
    names them (registered tables of `db`), from iteration `settled_at` on (the loop's before)."""

    def __init__(
        self,
        db: Database,
        printer: Printer,
        program: Program,
        stratum: Stratum,
        inputs: Mapping[str, str],
        types: ResultTypes | None,
        settled_at: int,
        exit_filter: str | None = None,
    ):
        """`exit_filter`: the condition (over columns c0 .. cN) of the exit facts the query starts from."""
        self.db = db
        self.exit_filter = exit_filter
        self.printer = printer
        self.program = program
        self.stratum = stratum
        self.inputs = inputs
        (self.name,) = stratum.relations
        self.width = len(program.relations[self.name].columns)
        self.names = column_names(self.width + 1)  # the relation's columns, then the round's
        self.round_column = self.names[self.width]
        self.start_types = types(0)[self.name] if types is not None else None
        self.round_types = types(SETTLED)[self.name] if types is not None else None
        self.settled_at = settled_at
        self.bag = stratum.iteration is Iteration.BAG
        self.aggregate = program.relations[self.name].aggregate  # min() / max(): rounds keep improvements
        self.keys = [self.names[i] for i in program.relations[self.name].group_key]
        self.counted = self.bag or self.aggregate is not None  # rounds counted
        self.narrowing = narrowing(stratum)
        self.iterations: int | None = None  # once run

    def run(
        self, loop: Fixpoint[pa.Table, str], limits: Limits, progress: ProgressListener | None
    ) -> dict[str, pa.Table]:
        """The facts of the relation. `loop`: the loop, not started, for the iterations before the types
        settle, and where the query stops past the local capacity (and, with min() / max(), while the
        rounds are wide)."""
        started = time.monotonic()
        if not self.counted:
            return self.run_union(loop, limits, progress, started)
        evaluation = LoopThenRounds(loop, self.settled_at, Rounds(self, limits), while_wide=not self.bag)
        try:
            self.iterations = iterate(evaluation, limits, progress)
        except CapacityExceeded as exceeded:
            exceeded.reached = evaluation.reached(time.monotonic() - started, exceeded)
            raise
        return {self.name: evaluation.result()}

    def run_union(
        self, loop: Fixpoint[pa.Table, str], limits: Limits, progress: ProgressListener | None, started: float
    ) -> dict[str, pa.Table]:
        """A UNION's facts: the loop's iterations until the types settle, then one query (CountedRounds)."""
        anchor, seeds, after = self.exit_sql(), {}, (0, 0, 0)
        if self.settled_at:
            try:
                iterate(loop, limits, progress, until=lambda: loop.iterations >= self.settled_at)
            except CapacityExceeded as exceeded:
                exceeded.reached = loop.reached(time.monotonic() - started, exceeded.facts, exceeded.expected)
                raise
            state = loop.states[self.name]
            if not state.new_facts:  # ended before they settled
                self.iterations = loop.iterations
                return {self.name: state.full}
            anchor, seeds = f"SELECT * FROM {self.printer.quote(SEEDS)}", {SEEDS: state.full}
            after = (loop.iterations, state.full.num_rows, state.new_facts)
        rounds = CountedRounds(limits, progress, started, *after)
        try:
            facts = self.db.query_by_rounds(self.query(anchor), rounds, **seeds)
        except CapacityExceeded:  # the loop goes on from where the query started, to stop with its facts
            resumed = Fixpoint(loop.engine, self.program, self.stratum, reached=loop.reached(0.0)) if seeds else loop
            answer = resumed.run(limits, progress)
            self.iterations = resumed.iterations
            return answer
        rounds.end()
        self.iterations = rounds.iterations
        return {self.name: facts}

    def checked(self, limits: Limits) -> str | None:
        """The whole recursion as one query that another reads (printed into it), where its rounds are one row
        each (single_row) and few enough to need no progress between them (LONGEST_NARROWING): a LIMIT of
        one row past max_iterations ends it, and the query fails with the loop's error where that row is
        there (its rows within max_rows and the capacity then); none elsewhere."""
        most = limits.max_iterations
        if not self.single_row or self.settled_at or most > LONGEST_NARROWING or most + 2 > limits.row_bound():
            return None
        quote, rounds = self.printer.quote, self.printer.quote(RECURSION + "_rounds")
        error = exp.Literal.string(LIMIT_ERROR + limits.iteration_message()).sql(dialect="duckdb")
        return (
            f"WITH {rounds} AS MATERIALIZED ({between_rounds(self.query(self.exit_sql()), 0, most)}) "
            f"SELECT {', '.join(quote(name) for name in self.names[: self.width])} FROM {rounds} "
            f"WHERE (SELECT count(*) FROM {rounds}) <= {most} OR error({error})"
        )

    # ------------------------------------------------------------------ printing

    @functools.cached_property
    def single_row(self) -> bool:
        """Whether every round is one row at most: a narrowing recursion whose exit rules give one row at most
        (its rows are its rounds, in order, without a column counting them)."""
        return self.bag and self.narrowing and self.exit_rows_bound() in (0, 1)

    @property
    def round_in_rows(self) -> bool:
        """Whether the rows carry their round (a column counting them)."""
        return self.counted and not self.single_row

    def query(self, anchor: str) -> str:
        """The recursion from the rows of `anchor` (with their rounds where they carry them)."""
        quote = self.printer.quote
        names = self.names[: self.width + self.round_in_rows]
        recursive = self.recursive_sql()
        union, key = "UNION ALL" if self.bag else "UNION", ""
        if self.aggregate is not None:
            key = f" USING KEY ({', '.join(quote(name) for name in (*self.keys, names[-1]))})"
            recursive = self.improvements(self.best(recursive))
        elif not self.bag:  # each round's rows counted (CountedRounds) before the next round is derived
            rounds = f"(SELECT {ROUND_FUNCTION}(count(*)) FROM {quote(RECURSION)})"
            recursive = f"SELECT * FROM ({recursive}) AS n WHERE {rounds}"
        return (
            f"WITH RECURSIVE {quote(RECURSION)}({', '.join(quote(name) for name in names)}){key} AS "
            f"(SELECT * FROM ({anchor}) AS anchor {union} ({recursive})) SELECT * FROM {quote(RECURSION)}"
            + (f" LIMIT ${ROWS}" if self.single_row else "")
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
        """The facts of the exit rules (with round 0 where the rows carry their round)."""
        parts = [self.printer.sql(rule_query(rule, self.source)) for rule in self.stratum.exit_rules]
        sql = kept_exit_facts(self.typed(self.printer.union_all(parts), self.start_types, self.width), self.exit_filter)
        if self.round_in_rows:
            sql = f"SELECT *, CAST(0 AS BIGINT) AS {self.printer.quote(self.names[self.width])} FROM ({sql}) AS facts"
        if self.aggregate is not None:
            sql = self.best(sql)
        return sql

    def exit_rows_bound(self) -> int | None:
        """At most how many rows the exit rules derive: per rule, the product of the rows of the tables its
        atoms join (one row without any); None where one reads a table-valued function."""
        bound = 0
        for rule in self.stratum.exit_rules:
            rows = 1
            for atom in rule.atoms:
                if atom.call_args:
                    return None
                if not atom.filters:  # a left join keeps each row without a match
                    rows *= max(self.db.registered[self.inputs[atom.relation]].num_rows, int(atom.optional))
            bound += rows
        return bound

    def variant_sql(self, rule: Rule) -> str:
        """A recursive rule over the last round's rows (where they carry their round, the rows of rounds from the FROM
        parameter below the BOUND parameter, deriving the next round's)."""
        extra: tuple[exp.Expr, ...] = ()
        if self.round_in_rows:
            rule = counting(rule, self.name)
            extra = (exp.Add(this=var(ROUND), expression=exp.Literal.number(1)),)
        sql = self.printer.sql(rule_query(rule, self.source, extra))
        return self.typed(sql, self.round_types, self.width + len(extra))

    def source(self, position: int, atom: Atom) -> exp.Expr:
        if atom.call_args:
            return range_call(atom)
        return table(RECURSION if atom.relation == self.name else self.db.as_table(self.inputs[atom.relation]))

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


def narrowing(stratum: Stratum) -> bool:
    """Whether no round of the stratum can derive more rows than the round before: one recursive rule,
    each row of its recursive atom giving at most one row (the other atoms only keep or drop rows), as a
    counter, a date series or a running sum over a value do."""
    if len(stratum.variants) != 1:
        return False
    joined = [atom for atom in stratum.variants[0].rule.atoms if atom.call_args or atom.optional or not atom.filters]
    return len(joined) == 1 and joined[0].relation in stratum.relations and not joined[0].call_args


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
