"""INSERT, DELETE, UPDATE and MERGE: each statement's rows are computed first, then committed to the
table at once (`recsql.statements.dml` says how a change becomes queries)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F
from pyspark.sql.types import StructField
from sqlglot import exp

from recsql.errors import DataError, Error, MaintenanceDeferred, NotSupportedError, ProgrammingError
from recsql.services import Services
from recsql.statements import dml
from recsql.statements.handler import Result
from recsql.statements.queries import answer_of, count_of, rows_of
from recsql.statements.values import arrow_columns, arrow_type_of, literal_row
from recsql.storage.writes import Rows, row_count
from recsql.views import upkeep
from translator.core import table_name
from translator.translate import translate

# the parts of each write its handler takes; sqlglot parses more (RETURNING, ON CONFLICT, INSERT OVERWRITE,
# DELETE ... USING, LIMIT), which are refused rather than ignored
HANDLED_CLAUSES = {
    exp.Insert: {"this", "expression", "with_"},
    exp.Delete: {"this", "where", "with_"},
    exp.Update: {"this", "expressions", "where", "with_", "from_"},  # dml.update refuses FROM
    exp.Merge: {"this", "using", "on", "whens", "with_"},
}
CLAUSE_NAMES = {
    "overwrite": "OVERWRITE",
    "conflict": "ON CONFLICT",
    "by_name": "BY NAME",
    "where": "REPLACE WHERE",
    "alternative": "OR REPLACE / OR IGNORE",
    "exists": "IF NOT EXISTS",
    "order": "ORDER BY",
    "using_cond": "USING ... ON",
    "is_function": "FUNCTION",
    "hint": "hints",
}
WHOLE_DELETE_ROWS = 1_000_000  # a DELETE rewrites a table of up to this many rows whole, not file by file


def refuse_other_clauses(statement: exp.Insert | exp.Delete | exp.Update | exp.Merge) -> None:
    """A NotSupportedError naming the first clause of a write that its handler does not take."""
    handled = HANDLED_CLAUSES[type(statement)]
    for key, value in statement.args.items():
        if value and key not in handled:
            clause = CLAUSE_NAMES.get(key, key.upper())
            raise NotSupportedError(f"{clause} in {statement.key.upper()} is not supported")


def insert(session: Services, insert: exp.Insert, sql: str) -> Result:
    """INSERT INTO t VALUES (constants) straight from Python values; INSERT INTO t query through it
    (reading the queries of a WITH before INSERT as well as of one before the query)."""
    refuse_other_clauses(insert)
    source = dml.with_ctes(insert.expression, insert.args.get("with_"))
    if isinstance(source, exp.Values):
        rows = [literal_row(row) for row in source.expressions]
        if all(row is not None for row in rows):
            return insert_rows(session, insert, rows, sql)
    name = table_name(target_of(insert), session.catalog)
    spark_table = session.catalog.is_spark_table(name)
    if not spark_table:
        session.catalog.insertable(name)
    _, rows = rows_of(session, source)
    listed = ListedColumns.of(insert, name, table_fields(session, name))
    if listed is not None:
        rows = listed.arrange(rows)
    if spark_table:
        return Result(rowcount=session.catalog.spark_tables.insert(name, rows))
    inserted = session.catalog.insert(name, rows, "INSERT", sql)
    maintain_views(session, name)
    return Result(rowcount=inserted)


def one_row_of_parameters(statement: exp.Expression) -> bool:
    """Whether a statement is INSERT INTO t VALUES (?, ...): `executemany` inserts all its rows at once."""
    values = statement.expression if isinstance(statement, exp.Insert) else None
    return (
        isinstance(values, exp.Values)
        and all(isinstance(cell, exp.Placeholder) for row in values.expressions for cell in row.expressions)
        and len(values.expressions) == 1
    )


def insert_rows(session: Services, insert: exp.Insert, rows: list[tuple], sql: str) -> Result:
    """Rows of Python values straight into a Parquet file: no Spark job for INSERT ... VALUES (also the
    way of `executemany`, which comes here without `insert`)."""
    refuse_other_clauses(insert)
    catalog = session.catalog
    name = table_name(target_of(insert), catalog)
    spark_table = catalog.is_spark_table(name)
    fields = table_fields(session, name)
    listed = ListedColumns.of(insert, name, fields)
    columns = arrow_columns(name, rows if listed is None else listed.arrange_values(rows), fields)
    table = pa.Table.from_arrays(columns, names=[f.name for f in fields])
    try:
        if spark_table:
            catalog.spark_tables.insert(name, table)
        else:
            catalog.insert(name, table, "INSERT", sql)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as error:
        raise DataError(f"cannot store the values in '{name}': {error}") from None
    if not spark_table:
        maintain_views(session, name)
    return Result(rowcount=len(rows))


def target_of(insert: exp.Insert) -> exp.Expression:
    """The table an INSERT writes (without its column list)."""
    return insert.this.this if isinstance(insert.this, exp.Schema) else insert.this


def table_fields(session: Services, name: str) -> list[StructField]:
    catalog = session.catalog
    return (catalog.schema(name) if catalog.is_spark_table(name) else catalog.insert_schema(name)).fields


@dataclass(frozen=True)
class ListedColumns:
    """INSERT INTO t (b, a) ...: the values come for the columns listed, in their order; a column not
    listed gets NULL."""

    name: str
    fields: list[StructField]
    positions: list[int | None]  # per column of the table: its place in the list, None when not listed
    width: int  # columns listed

    @classmethod
    def of(cls, insert: exp.Insert, name: str, fields: list[StructField]) -> ListedColumns | None:
        if not isinstance(insert.this, exp.Schema):
            return None
        listed = [column.name.lower() for column in insert.this.expressions]
        known = [field.name.lower() for field in fields]
        for column in listed:
            if column not in known:
                raise ProgrammingError(f"INSERT INTO {name} lists column '{column}', which the table does not have")
            if listed.count(column) > 1:
                raise ProgrammingError(f"INSERT INTO {name} lists column '{column}' twice")
        positions = [listed.index(column) if column in listed else None for column in known]
        return cls(name, fields, positions, len(listed))

    def arrange_values(self, rows: list[tuple]) -> list[tuple]:
        """Rows of Python values for the listed columns as rows of the table's."""
        for number, row in enumerate(rows, start=1):
            self.check(len(row), f"row {number} has")
        return [tuple(None if at is None else row[at] for at in self.positions) for row in rows]

    def arrange(self, rows: Rows) -> Rows:
        """A query's rows for the listed columns as rows of the table's (Arrow, or a Spark DataFrame)."""
        if isinstance(rows, pa.Table):
            self.check(rows.num_columns, "the query gives")
            columns = [
                rows.column(at) if at is not None else pa.nulls(rows.num_rows, arrow_type_of(field.dataType))
                for at, field in zip(self.positions, self.fields)
            ]
            return pa.Table.from_arrays(columns, names=[field.name for field in self.fields])
        self.check(len(rows.columns), "the query gives")
        names = rows.columns
        return rows.select(
            [
                F.col(f"`{names[at]}`") if at is not None else F.lit(None).cast(field.dataType)
                for at, field in zip(self.positions, self.fields)
            ]
        ).toDF(*[field.name for field in self.fields])

    def check(self, width: int, what: str) -> None:
        if width != self.width:
            raise ProgrammingError(f"{what} {width} values but INSERT INTO {self.name} lists {self.width} columns")


def change(session: Services, statement: exp.Delete | exp.Update | exp.Merge, sql: str) -> Result:
    """DELETE, UPDATE, MERGE: the table's new rows computed from one snapshot, committed at once."""
    refuse_other_clauses(statement)
    catalog = session.catalog
    name, _ = dml.target_table(statement.this, statement.key.upper())
    ctes = dml.statement_ctes(statement, name)
    catalog.insertable(name)
    snapshot = catalog.snapshot(name)
    columns = tuple(field.name.lower() for field in snapshot.schema.fields)
    if isinstance(statement, exp.Delete):
        rewrite = dml.delete(statement, columns)
    elif isinstance(statement, exp.Update):
        rewrite = dml.update(statement, columns)
    else:
        rewrite = dml.merge(statement, columns, merge_source_columns(session, statement.args["using"], ctes))
    rewrite = rewrite.within(ctes)
    if rewrite.duplicates is not None and count_of(session, rewrite.duplicates) > snapshot.rows:
        raise DataError(f"MERGE INTO {name}: a row of '{name}' matches more than one source row")
    affected = count_of(session, rewrite.inserts) if rewrite.inserts is not None else 0
    # a DELETE from one file rewrites it whatever it deletes, and one from a small table rewrites it whole
    # (into one file): the rows it keeps tell how many it deleted, with no count per file first
    counted_by_kept = (
        isinstance(statement, exp.Delete)
        and all(file.rows >= 0 for file in snapshot.files)
        and (len(snapshot.files) == 1 or snapshot.rows <= WHOLE_DELETE_ROWS)
    )
    changed = None
    if rewrite.changes is not None and not counted_by_kept:  # (file, rows changed in it)
        changed = answer_of(session, rewrite.changes).table
        affected += pc.sum(changed.column(1)).as_py() or 0
    operation = statement.key.upper()
    added = [rows_of(session, rewrite.added)[1]] if rewrite.added is not None else []
    if rewrite.kept is None and added:  # MERGE that only inserts: an append
        catalog.insert(name, added[0], operation, sql)
    elif rewrite.kept is not None:
        removed = snapshot.files
        if changed is not None and not rewrite.whole:
            removed = catalog.files_of(name, changed.column(0).to_pylist())
            catalog.restrict(name, removed)  # the kept rows are read from those files alone
        parts = [rows_of(session, rewrite.kept)[1], *added]
        if counted_by_kept:
            deleted = snapshot.rows - row_count(parts[0])
            affected += deleted
            if not deleted:  # no file replaced
                removed, parts = (), []
        catalog.rewrite(name, snapshot, removed, parts, operation, sql)
    maintain_views(session, name)
    return Result(rowcount=affected)


def maintain_views(session: Services, table: str) -> None:
    """The materialized views reading a table just changed, brought up to date in the same statement
    (should that fail, the change stays committed and the views are brought up to date when next read)."""
    traces: list = []
    try:
        upkeep.maintain_dependents(session, table, traces)
    except Error as error:
        warnings.warn(
            f"{table} changed, but a materialized view reading it is brought up to date only when next read: {error}",
            MaintenanceDeferred,
            stacklevel=2,
        )
    for trace in traces:
        session.record_maintenance(trace)


def merge_source_columns(session: Services, using: exp.Expression, ctes: exp.With | None) -> tuple[str, ...]:
    """The column names of MERGE's source (a table, view, query of its WITH clause or subquery), lower-case."""
    source = dml.with_ctes(exp.select(exp.Star()).from_(using.copy()), ctes)
    return tuple(c.lower() for c in translate(source, session.catalog).output_columns)


def multitable_insert(session: Services, statement: exp.MultitableInserts, sql: str) -> Result:
    """Spark's FROM source INSERT INTO t1 SELECT ... INSERT INTO t2 SELECT ...: refused, as recsql commits
    the rows of one table per statement."""
    raise NotSupportedError(
        "FROM ... INSERT INTO ... INSERT INTO ... (a multi-table insert) is not supported: "
        "write one INSERT INTO t SELECT ... FROM ... per table"
    )
