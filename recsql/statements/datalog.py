"""A Datalog program run as a statement (`Cursor.execute_datalog`, `recsql run prog.dl`): its `.input`s
made readable, then one answer per `.output`, each planned and run as a SQL query's program is.

`.input rel` reads the table `rel` (recsql's or Spark's); `.input rel(IO=table, name=t)` the table `t`;
`.input rel(IO=file, filename="edge.csv", delimiter=",", headers=true)` a CSV file (tab-separated
without headers by default, as Soufflé reads `.facts` files), `.input rel(IO=file,
filename="edge.parquet")` a Parquet file, typed by the relation's `.decl` and registered for the session
under the relation's name. `.output rel` is an answer; `.output rel(IO=table, name=t)` stores it as
table `t` (replacing it).
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from pyspark.sql.types import (
    CharType,
    DataType,
    DecimalType,
    IntegralType,
    NumericType,
    StringType,
    StructField,
    StructType,
    VarcharType,
)

from recsql import analysis
from recsql.engine.answer import Answer
from recsql.errors import ProgrammingError
from recsql.planner.plan import Plan
from recsql.services import Services
from recsql.statements.handler import Result
from recsql.statements.queries import answer, as_written, explained
from recsql.storage.writes import Rows
from translator.datalog.program import io_table
from translator.datalog.syntax import Declaration, InputOutput, ProgramSyntax
from translator.translate import translate_datalog

TYPES = {"number": pa.int32(), "unsigned": pa.int64(), "float": pa.float64(), "symbol": pa.string()}


def run_program(session: Services, syntax: ProgramSyntax, text: str) -> list[tuple[str, Result]]:
    """One result per `.output`, in order, with its relation's name. Every output is planned, then
    computed, before any table is written: a program that fails leaves the tables as they were. With
    EXPLAIN [ANALYZE] before it, each output's plan instead (ANALYZE computes the answers, stores none)."""
    if not syntax.outputs:
        raise ProgrammingError("the program has no .output: name the relation it answers (.output name)")
    declared = {declaration.relation: declaration for declaration in syntax.declarations}
    sources = {item.relation: source(session, item, declared.get(item.relation)) for item in syntax.inputs}
    check_declared_tables(session, syntax, declared, sources)
    plans = []
    for output in syntax.outputs:
        program = translate_datalog(syntax, output.relation, sources, session.catalog)
        analysis.stratify(program)
        plans.append((output, session.plan_program(program)))
    if syntax.explain is not None:
        analyze = syntax.explain == "EXPLAIN ANALYZE"
        return [
            (
                output.relation,
                Result.of(pa.table({"plan": explanation(session, text, output, plan, analyze)}), ["string"]),
            )
            for output, plan in plans
        ]
    answers = [(output, answer(session, plan)) for output, plan in plans]
    results = []
    for output, kept in answers:
        target = io_table(output)
        if target is None:
            results.append((output.relation, Result.of_answer(kept)))
            continue
        schema = StructType([StructField(name, kind) for name, kind in zip(kept.names, kept.types)])
        rows: Rows = kept.table.rename_columns(kept.names) if isinstance(kept, Answer) else kept.frame(session.spark)
        stored = session.catalog.create_table(target, schema, rows, True, text)
        results.append((output.relation, Result(rowcount=stored)))
    return results


KINDS: dict[str, tuple[type[DataType], ...]] = {  # the Spark types a table's column may have for a .decl type
    "number": (IntegralType,),
    "unsigned": (IntegralType,),
    "float": (NumericType,),
    "symbol": (StringType, VarcharType, CharType),
}


def check_declared_tables(
    session: Services, syntax: ProgramSyntax, declared: dict[str, Declaration], sources: dict[str, str]
) -> None:
    """A declared relation no rule derives reads a table: the table's columns must be as many as the
    `.decl` names, of the kinds it gives them (a whole number for number/unsigned, a number for float,
    a string for symbol)."""
    derived = {clause.head.relation for clause in syntax.clauses}
    for name, declaration in declared.items():
        table = sources.get(name, name)
        if name in derived or session.catalog.table_columns(table) is None:
            continue
        fields = session.catalog.schema(table).fields
        where = (declaration.place.line, declaration.place.column)
        if len(fields) != len(declaration.columns):
            raise ProgrammingError(
                f".decl {name} has {len(declaration.columns)} columns but table {table} {len(fields)}", *where
            )
        for (column, kind), field in zip(declaration.columns, fields):
            if kind not in KINDS:
                raise ProgrammingError(f".decl {name}: unknown type {kind} ({', '.join(KINDS)})", *where)
            if not fits(kind, field.dataType):
                raise ProgrammingError(
                    f".decl {name}: column {column} is a {kind} but column {field.name} of table {table} is "
                    f"{field.dataType.simpleString()}",
                    *where,
                )


def fits(kind: str, data_type: DataType) -> bool:
    """Whether a column of `data_type` holds values of the `.decl` type `kind` (DECIMAL(p, 0) whole numbers)."""
    whole_decimal = isinstance(data_type, DecimalType) and data_type.scale == 0
    return isinstance(data_type, KINDS[kind]) or (kind in ("number", "unsigned") and whole_decimal)


def explanation(session: Services, text: str, output: InputOutput, plan: Plan, analyze: bool) -> list[str]:
    written = as_written(re.sub(r"^\s*EXPLAIN(\s+ANALYZE)?\b", "", text, flags=re.IGNORECASE))
    return [*written[:-1], f"?- {output.relation}.", "", *explained(session, plan, analyze)]


def source(session: Services, item: InputOutput, declaration: Declaration | None) -> str:
    """The relation name an `.input` relation is read from."""
    if item.options.get("io") == "file":
        register_file(session, item, declaration)
        return item.relation
    name = io_table(item) or item.relation
    if session.catalog.table_columns(name) is None:
        raise ProgrammingError(f".input {item.relation}: no table '{name}'", item.place.line, item.place.column)
    return name


def register_file(session: Services, item: InputOutput, declaration: Declaration | None) -> None:
    """An `.input` file read into this process and registered for the session under the relation's name."""
    filename = item.options.get("filename") or f"{item.relation}.facts"
    path = Path(filename) if Path(filename).is_absolute() else session.base_dir / filename
    where = (item.place.line, item.place.column)
    if not path.exists():
        raise ProgrammingError(f".input {item.relation}: no file {path}", *where)
    schema = declared_schema(declaration)
    try:
        if path.suffix == ".parquet" or item.options.get("format") == "parquet":
            table = pq.read_table(path)
        else:
            table = read_delimited(path, item.options, schema)
        if schema is not None:
            table = table.rename_columns(schema.names).cast(schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError, ValueError) as problem:
        raise ProgrammingError(f".input {item.relation}: cannot read {path}: {problem}", *where) from None
    session.catalog.register(item.relation, None, table)


def declared_schema(declaration: Declaration | None) -> pa.Schema | None:
    """The Arrow schema a `.decl` gives its relation's columns."""
    if declaration is None:
        return None
    for _, kind in declaration.columns:
        if kind not in TYPES:
            place = declaration.place
            known = ", ".join(TYPES)
            raise ProgrammingError(
                f".decl {declaration.relation}: unknown type {kind} ({known})", place.line, place.column
            )
    return pa.schema([(name, TYPES[kind]) for name, kind in declaration.columns])


def read_delimited(path: Path, options: dict[str, str], schema: pa.Schema | None) -> pa.Table:
    """A delimited text file: tab-separated without a header line unless `delimiter` and `headers` say
    otherwise; columns named and typed by the `.decl` when there is one."""
    headers = options.get("headers", "false").lower() == "true"
    names = schema.names if schema is not None and not headers else None
    read = pacsv.ReadOptions(column_names=names, autogenerate_column_names=names is None and not headers)
    parse = pacsv.ParseOptions(delimiter=options.get("delimiter", "\t"))
    types = dict(zip(schema.names, schema.types)) if schema is not None and not headers else None
    return pacsv.read_csv(
        path, read_options=read, parse_options=parse, convert_options=pacsv.ConvertOptions(column_types=types)
    )
