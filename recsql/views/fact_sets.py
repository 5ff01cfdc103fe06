"""Facts compared as sets, NULL equal to NULL as in SQL's set operations: what one relation has that another
has not (`difference`, both ways at once: `differences`), and the facts of some groups (`matching`). The
queries are trees of the engine's builders, printed for DuckDB by its printer and run by its Database, so
that one place knows how to talk to DuckDB."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from recsql.engine.local.database import Database
from recsql.engine.sql.printing import Dialect, Printer
from recsql.engine.sql.queries import absent_from, everything, same_rows, union_all
from recsql.engine.sql.rules import aliased, nested, select, table

LARGER = 4  # a set difference against a table this many times larger reads only its matching rows
LEFT_SIDE = "left_side"  # the column of `differences` telling its two parts apart
DUCKDB = Printer(Dialect.DUCKDB)


class FactSets:
    """Set operations on Arrow tables of positional columns; `timezone()`: the session's time zone."""

    def __init__(self, timezone: Callable[[], str]):
        self.timezone = timezone

    def difference(self, facts: pa.Table, other: pa.Table, distinct: bool = False) -> pa.Table:
        """The distinct facts of `facts` not in `other` (NULL equal to NULL, as EXCEPT). Against a much
        larger `other` (the old facts of a relation), only the rows of it matching some fact are
        taken; from a much larger set (`distinct`: no fact twice), the facts matching none of a small
        `other` are: a pass over the large side either way, not a hash table of it."""
        facts = positional(facts)
        other = positional(other).cast(facts.schema)
        names = facts.column_names
        if other.num_rows > LARGER * facts.num_rows:
            tree = except_(everything("facts"), everything("other", "r").where(present_in("facts", "r", names)))
        elif distinct and facts.num_rows > LARGER * other.num_rows:
            tree = everything("facts", "r").where(absent_from("other", "r", names))
        else:
            tree = except_(everything("facts"), everything("other"))
        return self.run(tree, facts=facts, other=other)

    def differences(self, facts: pa.Table, other: pa.Table) -> tuple[pa.Table, pa.Table]:
        """`facts` less `other` and `other` less `facts` (as EXCEPT), in one pass over both."""
        other = other.cast(facts.schema)
        sides = [
            select([aliased(side, LEFT_SIDE), exp.Star()], nested(except_(everything(left), everything(right)), "d"))
            for side, left, right in ((exp.true(), "facts", "other"), (exp.false(), "other", "facts"))
        ]
        both = self.run(union_all(sides), facts=facts, other=other)
        side = both.column(LEFT_SIDE)
        return tuple(both.filter(mask).drop_columns([LEFT_SIDE]) for mask in (side, pc.invert(side)))

    def matching(self, facts: pa.Table, groups: pa.Table, keys: list[str]) -> pa.Table:
        """The facts of `facts` whose group (the columns `keys`) is one of `groups`' (NULL equal to NULL)."""
        return self.run(everything("facts", "r").where(present_in("groups", "r", keys)), facts=facts, groups=groups)

    def run(self, tree: exp.Query, **tables: pa.Table) -> pa.Table:
        with contextlib.closing(Database(self.timezone())) as db:  # the thread's idle connection
            return db.query(DUCKDB.sql(tree), **tables)


def except_(left: exp.Query, right: exp.Query) -> exp.Except:
    """The distinct rows of `left` not in `right`."""
    return exp.Except(this=left, expression=right, distinct=True)


def present_in(source: str, alias: str, names: Sequence[str]) -> exp.Exists:
    """EXISTS a row of `source` equal to the current row (`alias`) on `names` (a semi-join)."""
    return exp.Exists(this=select([exp.Literal.number(1)], table(source, "o"), same_rows("o", alias, names)))


def positional(facts: pa.Table) -> pa.Table:
    return facts.rename_columns([f"c{i}" for i in range(facts.num_columns)])
