"""A session executes statements: queries through the pipeline (translate → analyse → plan → execute),
DDL and DML against the catalog, SET against the settings."""

from __future__ import annotations

import contextlib
import datetime
import decimal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import DataType, StructField, StructType
from sqlglot import exp

from recsql import analysis, dml, planner
from recsql.cancellation import Cancellation
from recsql.catalog import Catalog, Rows, view_query_of
from recsql.engine.answer import Answer
from recsql.engine.executor import Executor
from recsql.engine.progress import Progress, ProgressListener
from recsql.engine.trace import Trace
from recsql.errors import DataError, NotSupportedError, ProgrammingError
from recsql.optimizer import optimize
from recsql.optimizer.join_search import CostModel
from recsql.parameters import bind
from recsql.settings import PREFIX, Settings
from recsql.spark_errors import spark_errors
from translator import dialect
from translator.dialect import Explain, Vacuum
from translator.errors import TranslationError, UnsupportedError
from translator.translate import translate

QUERY_TYPES = (exp.Query, exp.Values)
VACUUM_RETAIN_HOURS = 168  # Delta's default: a week of versions stays readable
EVALUATION = {
    True: "whole query in this process (DuckDB over Arrow), no Spark job",
    False: "on Spark (each recursive stratum as its strategy above says)",
}


@dataclass
class Result:
    """What a statement returns: rows (Arrow) with their column names and Spark types, or a row count."""

    names: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    table: pa.Table | None = None
    rowcount: int = -1


class Session:
    def __init__(self, spark: SparkSession, catalog: Catalog, settings: Settings):
        self.spark = spark
        self.catalog = catalog
        self.settings = settings
        self.base_dir = Path.cwd()
        self.progress: ProgressListener | None = None
        self.cancellation = Cancellation(spark)

    # -------------------------------------------------------------- entry points

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Result:
        statement = bind(parse_single(sql), params)
        with (self.cancellation.statement(sql), self.catalog.statement(), translation_errors(),
              spark_errors(changed_table(statement))):
            return self.dispatch(statement, sql)

    def report(self, event: Progress) -> None:
        """An iteration of a recursive evaluation: where a cancelled statement stops between Spark jobs,
        and an event for the progress listener."""
        self.cancellation.check()
        if self.progress is not None:
            self.progress(event)

    def executor(self, trace: Trace | None = None) -> Executor:
        return Executor(self.spark, self.catalog, self.settings, self.report, trace)

    def execute_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> Result:
        statement = parse_single(sql)
        values = statement.expression if isinstance(statement, exp.Insert) else None
        if isinstance(values, exp.Values) and all(
            isinstance(cell, exp.Placeholder) for row in values.expressions for cell in row.expressions
        ) and len(values.expressions) == 1:
            with self.catalog.statement(), spark_errors():
                return self.insert_rows(statement, [tuple(row) for row in rows], sql)
        total = 0
        for row in rows:
            total += max(self.execute(sql, row).rowcount, 0)
        return Result(rowcount=total)

    # -------------------------------------------------------------- statements

    def dispatch(self, statement: exp.Expression, sql: str) -> Result:
        if isinstance(statement, Explain):
            return self.explain(statement)
        if isinstance(statement, QUERY_TYPES):
            return self.query(statement)
        if isinstance(statement, exp.Create):
            return self.create(statement, sql)
        if isinstance(statement, exp.Drop):
            return self.drop(statement)
        if isinstance(statement, exp.Insert):
            return self.insert(statement, sql)
        if isinstance(statement, (exp.Delete, exp.Update, exp.Merge)):
            return self.change(statement, sql)
        if isinstance(statement, exp.Set):
            return self.set(statement)
        if isinstance(statement, exp.Analyze):
            return self.analyze(statement)
        if isinstance(statement, exp.Show):
            return self.show_tables()
        if isinstance(statement, Vacuum):
            return self.vacuum(statement)
        if isinstance(statement, exp.Describe) and (statement.args.get("style") or "").upper() == "HISTORY":
            return self.history(statement.this.name)
        if isinstance(statement, exp.Describe):
            return self.describe(statement.this.name)
        keyword = statement.sql(dialect="spark").split()[0].upper() if statement.sql() else "?"
        raise NotSupportedError(f"{keyword} statements are not supported")

    def plan(self, query: exp.Expression) -> planner.Plan:
        program = translate(query, self.catalog)
        analysis.stratify(program)  # errors name the query's own relations, before any rewriting
        optimized = optimize(program, self.catalog, self.settings, self.cost_model())
        components = analysis.stratify(optimized.program)
        return planner.plan(optimized, components, self.settings)

    def cost_model(self) -> CostModel:
        partitions = int(self.spark.conf.get("spark.sql.shuffle.partitions") or 4)
        return CostModel(parallelism=partitions)

    def rows(self, query: exp.Expression) -> tuple[StructType, Rows]:
        """A query's rows to write, with their schema: Arrow when the query runs in this process, else a
        Spark DataFrame (never collected: Spark writes it)."""
        result = self.executor().result(self.plan(query))
        if isinstance(result, Answer):
            fields = [StructField(name, data_type) for name, data_type in zip(result.names, result.types)]
            return StructType(fields), result.table
        return result.schema, result

    def answer(self, query: exp.Expression) -> Answer:
        return self.executor().fetch(self.plan(query))

    def count(self, query: exp.Query) -> int:
        return self.answer(query).table.column(0)[0].as_py()

    def query(self, query: exp.Expression) -> Result:
        answer = self.answer(query)
        types = [data_type.simpleString() for data_type in answer.types]
        return Result(answer.names, types, answer.table, answer.table.num_rows)

    def explain(self, statement: Explain) -> Result:
        query = statement.this
        if not isinstance(query, QUERY_TYPES):
            raise NotSupportedError("EXPLAIN takes a query")
        plan = self.plan(query)
        trace = Trace()
        executor = self.executor(trace)
        local = executor.local_program(plan) is not None and executor.arrow_inputs(plan) is not None
        lines = plan.explain().splitlines() + ["", "== Evaluation ==", EVALUATION[local]]
        if statement.args.get("analyze"):
            answer = executor.fetch(plan)
            lines += [""] + trace.report() + [f"answer rows: {answer.table.num_rows}"]
        return Result(["plan"], ["string"], pa.table({"plan": lines}), len(lines))

    def create(self, create: exp.Create, sql: str) -> Result:
        kind = (create.args.get("kind") or "").upper()
        target = create.this.this if isinstance(create.this, exp.Schema) else create.this
        name = target.name
        replace = bool(create.args.get("replace"))
        if create.args.get("exists") and (
            self.catalog.entry(name) is not None or self.catalog.table_columns(name) is not None
        ):
            return Result()
        if kind == "VIEW":
            query = create.expression
            if not isinstance(query, QUERY_TYPES):
                raise ProgrammingError("CREATE VIEW needs AS followed by a query")
            if query.find(exp.Placeholder):
                raise ProgrammingError("a view cannot hold query parameters (?)")
            self.plan(view_query_of(create))  # a view must compile now, not at its first use
            self.catalog.create_view(name, sql, replace)
            return Result()
        if kind != "TABLE":
            raise NotSupportedError(f"CREATE {kind} is not supported")
        properties = create.args.get("properties")
        file_format, options = table_properties(properties)
        schema = table_schema(create.this) if isinstance(create.this, exp.Schema) else None
        if create.expression is not None:
            if file_format:
                raise NotSupportedError("CREATE TABLE ... USING ... AS SELECT is not supported")
            schema, rows = self.rows(create.expression)
            return Result(rowcount=self.catalog.create_table(name, schema, rows, replace, sql))
        if file_format:
            if file_format not in ("csv", "parquet", "json", "orc"):
                raise NotSupportedError(f"USING {file_format} is not supported (csv, parquet, json, orc are)")
            if "path" not in options:
                raise ProgrammingError(f"CREATE TABLE {name} USING {file_format} needs OPTIONS (path '...')")
            path = Path(options.pop("path")).expanduser()
            path = path if path.is_absolute() else self.base_dir / path
            if file_format == "csv" and schema is None and options.get("header", "false").lower() != "true":
                raise ProgrammingError(f"CSV table {name} needs a column list or OPTIONS (header 'true')")
            self.catalog.create_external(name, file_format, str(path.resolve()), options, schema)
            return Result()
        if schema is None:
            raise ProgrammingError(f"CREATE TABLE {name} needs a column list, AS SELECT, or USING")
        self.catalog.create_table(name, schema, None, replace, sql)
        return Result()

    def drop(self, drop: exp.Drop) -> Result:
        kind = (drop.args.get("kind") or "").lower()
        if kind not in ("table", "view"):
            raise NotSupportedError(f"DROP {kind.upper()} is not supported")
        for table in drop.args.get("tables") or [drop.this]:
            self.catalog.drop(table.name, kind, bool(drop.args.get("exists")))
        return Result()

    def insert(self, insert: exp.Insert, sql: str) -> Result:
        target = insert.this
        if isinstance(target, exp.Schema):
            raise NotSupportedError("INSERT with a column list is not supported; give values for every column")
        source = insert.expression
        if isinstance(source, exp.Values):
            rows = [literal_row(row) for row in source.expressions]
            if all(row is not None for row in rows):
                return self.insert_rows(insert, rows, sql)
        self.catalog.insertable(target.name)
        _, rows = self.rows(source)
        return Result(rowcount=self.catalog.insert(target.name, rows, "INSERT", sql))

    def insert_rows(self, insert: exp.Insert, rows: list[tuple], sql: str) -> Result:
        """Rows of Python values straight into a Parquet file: no Spark job for INSERT ... VALUES."""
        name = insert.this.name
        fields = self.catalog.insert_schema(name).fields
        if set(map(len, rows)) - {len(fields)}:
            number, row = next((n, row) for n, row in enumerate(rows, start=1) if len(row) != len(fields))
            raise ProgrammingError(f"row {number} has {len(row)} values but table '{name}' has {len(fields)} columns")
        columns = []
        for values, spark_field in zip(zip(*rows) if rows else [()] * len(fields), fields):
            try:
                columns.append(column_of(values, spark_field.dataType))
            except (DataError, pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as error:
                raise DataError(f"column '{spark_field.name}' of '{name}': {error}") from None
        try:
            self.catalog.insert(name, pa.Table.from_arrays(columns, names=[f.name for f in fields]), "INSERT", sql)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as error:
            raise DataError(f"cannot store the values in '{name}': {error}") from None
        return Result(rowcount=len(rows))

    def change(self, statement: exp.Delete | exp.Update | exp.Merge, sql: str) -> Result:
        """DELETE, UPDATE, MERGE: the table's new rows computed from one snapshot, committed at once."""
        name, _ = dml.target_table(statement.this, statement.key.upper())
        self.catalog.insertable(name)
        snapshot = self.catalog.snapshot(name)
        columns = tuple(field.name.lower() for field in snapshot.schema.fields)
        if isinstance(statement, exp.Delete):
            rewrite = dml.delete(statement, columns)
        elif isinstance(statement, exp.Update):
            rewrite = dml.update(statement, columns)
        else:
            rewrite = dml.merge(statement, columns, self.merge_source_columns(statement.args["using"]))
        if rewrite.duplicates is not None and self.count(rewrite.duplicates) > snapshot.rows:
            raise DataError(f"MERGE INTO {name}: a row of '{name}' matches more than one source row")
        affected = self.count(rewrite.inserts) if rewrite.inserts is not None else 0
        if rewrite.changes is not None:  # (file, rows changed in it)
            changed = self.answer(rewrite.changes).table
            affected += pc.sum(changed.column(1)).as_py() or 0
        operation = statement.key.upper()
        added = [self.rows(rewrite.added)[1]] if rewrite.added is not None else []
        if rewrite.kept is None and added:  # MERGE that only inserts: an append
            self.catalog.insert(name, added[0], operation, sql)
        elif rewrite.kept is not None:
            removed = snapshot.files
            if not rewrite.whole:
                removed = self.catalog.files_of(name, changed.column(0).to_pylist())
                self.catalog.restrict(name, removed)  # the kept rows are read from those files alone
            self.catalog.rewrite(name, snapshot, removed, [self.rows(rewrite.kept)[1], *added], operation, sql)
        return Result(rowcount=affected)

    def merge_source_columns(self, using: exp.Expression) -> tuple[str, ...]:
        if isinstance(using, exp.Subquery):
            return tuple(c.lower() for c in translate(using.this, self.catalog).output_columns)
        columns = self.columns(using.name)
        if not columns:
            raise ProgrammingError(f"table or view '{using.name}' not found")
        return tuple(c.lower() for c in columns)

    def history(self, name: str) -> Result:
        """DESCRIBE HISTORY t: the table's versions, newest first."""
        commits = self.catalog.history(name)
        data = pa.table({
            "version": pa.array([c.version for c in commits], pa.int64()),
            "timestamp": pa.array([c.timestamp for c in commits], pa.timestamp("us")),
            "operation": [c.operation for c in commits],
            "statement": [c.statement for c in commits],
        })
        return Result(["version", "timestamp", "operation", "statement"],
                      ["bigint", "timestamp", "string", "string"], data, data.num_rows)

    def vacuum(self, statement: Vacuum) -> Result:
        """VACUUM t [RETAIN n HOURS]: remove the files no version of the last n hours (default 168) reads,
        and files that writers left without committing them; the rowcount is the files removed."""
        hours = statement.args.get("hours")
        retain = int(hours.name) if hours is not None else VACUUM_RETAIN_HOURS
        return Result(rowcount=self.catalog.vacuum(statement.this.name, retain))

    def analyze(self, statement: exp.Analyze) -> Result:
        """ANALYZE TABLE t [COMPUTE STATISTICS]: gather the optimizer's statistics now; returns them."""
        if (statement.args.get("kind") or "").upper() != "TABLE" or not statement.args.get("tables"):
            raise NotSupportedError("ANALYZE takes TABLE name")
        names, rows, distinct = [], [], []
        for table in statement.args["tables"]:
            gathered = self.catalog.analyze(table.name)
            columns = self.catalog.table_columns(table.name) or ()
            for column, column_statistics in zip(columns, gathered.columns):
                names.append(f"{table.name.lower()}.{column}")
                rows.append(gathered.rows)
                distinct.append(column_statistics.distinct)
        data = pa.table({"column": names, "rows": pa.array(rows, pa.int64()), "distinct": pa.array(distinct, pa.int64())})
        return Result(["column", "rows", "distinct"], ["string", "bigint", "bigint"], data, data.num_rows)

    def show_tables(self) -> Result:
        """SHOW TABLES: every table and view with its kind and column names."""
        names = self.catalog.names()
        columns = [list(self.columns(name)) for name in names]
        data = pa.table({"name": list(names), "kind": list(names.values()),
                         "columns": pa.array(columns, pa.list_(pa.string()))})
        return Result(["name", "kind", "columns"], ["string", "string", "array<string>"], data, data.num_rows)

    def describe(self, name: str) -> Result:
        """DESCRIBE name: the columns of a table or view and their types (a view's types are derived from
        its plan; only when they cannot be is its recursion computed)."""
        view = self.catalog.view_query(name)
        if view is not None:
            plan = self.plan(view)
            names: Sequence[str] = plan.program.output_columns
            types = self.executor().output_types(plan)
        else:
            fields = self.catalog.schema(name).fields
            names, types = [field.name for field in fields], [field.dataType for field in fields]
        data = pa.table({"column": list(names), "type": [data_type.simpleString() for data_type in types]})
        return Result(["column", "type"], ["string", "string"], data, data.num_rows)

    def columns(self, name: str) -> tuple[str, ...]:
        """The column names of a table or view (a view's from translating its query, without running it)."""
        view = self.catalog.view_query(name)
        if view is None:
            return self.catalog.table_columns(name) or ()
        try:
            return translate(view, self.catalog).output_columns
        except TranslationError:  # a view whose tables were dropped since: no columns to show
            return ()

    def set(self, statement: exp.Set) -> Result:
        items = statement.expressions
        if not items:
            pairs = self.settings.items()
            return Result(["key", "value"], ["string", "string"],
                          pa.table({"key": [k for k, _ in pairs], "value": [v for _, v in pairs]}), len(pairs))
        for item in items:
            assignment = item.this
            if not isinstance(assignment, exp.EQ):
                raise ProgrammingError("SET takes key = value")
            key = assignment.this.sql(dialect="spark").replace("`", "")
            value = assignment.expression
            text = value.name if isinstance(value, exp.Literal) else value.sql(dialect="spark")
            if key.startswith(PREFIX):
                self.settings.set(key, text)
            else:
                self.spark.conf.set(key, text)
        return Result()


# ------------------------------------------------------------------ helpers


CHANGES = {exp.Insert: "INSERT INTO", exp.Delete: "DELETE FROM", exp.Update: "UPDATE", exp.Merge: "MERGE INTO",
           exp.Create: "CREATE TABLE"}


def changed_table(statement: exp.Expression) -> str:
    """`INSERT INTO t`, for a statement that changes table t (errors say where they happened); else ''."""
    verb = CHANGES.get(type(statement))
    target = statement.this.this if isinstance(statement.this, exp.Schema) else statement.this
    if verb is None or not isinstance(target, exp.Table):
        return ""
    return f"{verb} {target.name.lower()}"


def parse_single(sql: str) -> exp.Expression:
    with translation_errors():
        statements = dialect.parse(sql)
    if len(statements) != 1:
        raise ProgrammingError(f"execute() takes one SQL statement, got {len(statements)}")
    return statements[0]


@contextlib.contextmanager
def translation_errors() -> Iterator[None]:
    """Translator errors as PEP 249 errors, with their position; analysis errors likewise."""
    try:
        yield
    except UnsupportedError as error:
        raise NotSupportedError(error.message, error.line, error.column) from None
    except TranslationError as error:
        raise ProgrammingError(error.message, error.line, error.column) from None
    except analysis.UnsupportedProgram as error:
        raise NotSupportedError(str(error)) from None
    except analysis.AnalysisError as error:
        raise ProgrammingError(str(error)) from None


def table_properties(properties: exp.Properties | None) -> tuple[str | None, dict[str, str]]:
    file_format, options = None, {}
    for prop in properties.expressions if properties else []:
        if isinstance(prop, exp.FileFormatProperty):
            file_format = prop.name.lower()
        elif isinstance(prop, exp.OptionsProperty):
            for option in prop.expressions:
                options[option.name.lower()] = option.args["value"].name
    return file_format, options


def table_schema(schema: exp.Schema) -> StructType:
    ddl = ", ".join(f"`{c.name}` {c.args['kind'].sql(dialect='spark')}" for c in schema.expressions)
    try:
        return DataType.fromDDL(ddl)
    except Exception as error:  # noqa: BLE001 - Spark's parser reports the bad type
        raise ProgrammingError(f"bad column list ({ddl}): {error}") from None


def literal_row(row: exp.Expression) -> tuple | None:
    """A VALUES row as Python values, or None when it holds more than constants."""
    cells = row.expressions if isinstance(row, exp.Tuple) else [row]
    values = []
    for cell in cells:
        negative = isinstance(cell, exp.Neg)
        inner = cell.this if negative else cell
        if isinstance(inner, exp.Cast) and isinstance(inner.this, exp.Literal) and inner.this.is_string:
            values.append(inner.this.name)
        elif isinstance(inner, (exp.Literal, exp.Null, exp.Boolean)):
            value = inner.to_py()
            values.append(-value if negative else value)
        else:
            return None
    return tuple(values)


def column_of(values: Sequence[Any], data_type: DataType) -> pa.Array:
    """Python values as an Arrow column for a column of `data_type`: converted by Arrow when they are
    already of the column's kind (a timestamp without a time zone, to be read in the session's), one by
    one through `coerce` otherwise (a date given as text, a number for a string column)."""
    arrow_type = to_arrow_type(data_type, timezone="UTC")
    if pa.types.is_timestamp(arrow_type):
        arrow_type = pa.timestamp(arrow_type.unit)
    try:
        return pa.array(values, type=arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return pa.array([coerce(value, data_type) for value in values])


def coerce(value: Any, data_type: DataType) -> Any:
    """A Python value in the form Arrow wants for a column of `data_type`."""
    if value is None:
        return None
    kind = data_type.typeName()
    try:
        if kind in ("integer", "long", "short", "byte"):
            return int(value)
        if kind in ("double", "float"):
            return float(value)
        if kind == "decimal":
            return decimal.Decimal(str(value))
        if kind == "string":
            return str(value)
        if kind == "boolean":
            return value if isinstance(value, bool) else str(value).lower() in ("true", "1", "t")
        if kind == "date" and isinstance(value, str):
            return datetime.date.fromisoformat(value)
        if kind == "timestamp" and isinstance(value, str):
            return datetime.datetime.fromisoformat(value)
    except (TypeError, ValueError, decimal.InvalidOperation):
        raise DataError(f"value {value!r} does not fit a {data_type.simpleString()} column") from None
    return value


__all__ = ["Session", "Result"]
