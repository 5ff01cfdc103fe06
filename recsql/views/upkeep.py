"""When a materialized view is computed or brought up to date: at CREATE and REFRESH, after a statement
changes one of its base tables (in that statement), and before a statement reads it when its base
tables were changed by another process (or a maintenance failed): a view is never read stale."""

from __future__ import annotations

import functools
import shutil
import uuid
import weakref
from collections.abc import Iterator

from sqlglot import exp

from recsql import analysis
from recsql.errors import NotSupportedError, ProgrammingError
from recsql.services import Services
from recsql.storage.entries import Entry, Kind, view_query_of
from recsql.storage.names import split_version, state_name
from recsql.views.maintenance import Maintenance, MaintenanceTrace, alias_source
from recsql.views.stored import Reflected, maintaining
from translator import dialect
from translator.ir import Program
from translator.translate import translate

MAINTAINABLE = (Kind.TABLE, Kind.MATERIALIZED)


PROGRAMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # catalog -> {(sql, what it reads): program}


def stored_program(session: Services, sql: str) -> Program:
    """The program of a stored view's statement, translated again only when what it reads changed (a
    table's columns, a plain view's query): maintenance runs at every write of its tables."""
    catalog = session.catalog
    key = (sql, read_signature(session, view_query_of(parsed(sql))))
    programs = PROGRAMS.setdefault(catalog, {})
    if key not in programs:
        if len(programs) > KEPT_PROGRAMS:
            programs.clear()
        programs[key] = view_program(session, parsed(sql))
    return programs[key]


KEPT_PROGRAMS = 64


@functools.lru_cache(maxsize=KEPT_PROGRAMS)
def parsed_once(sql: str) -> exp.Expression:
    return dialect.parse_one(sql)


def parsed(sql: str) -> exp.Expression:
    return parsed_once(sql).copy()


def read_signature(session: Services, statement: exp.Expression) -> tuple:
    """What translating a statement depends on: each name it reads (through plain views too) with the
    columns of a table or the query of a view."""
    catalog = session.catalog
    signature = []
    for name, entry in names_read(session, statement):
        if entry is None:
            signature.append((name, name in catalog.registered))
        else:
            signature.append((name, entry.sql if entry.kind == Kind.VIEW else catalog.schema(name).json()))
    return tuple(sorted(signature, key=str))


def view_program(session: Services, create: exp.Create) -> Program:
    """The program of a materialized view's query (its rows have no order: ORDER BY is dropped)."""
    query = view_query_of(create)
    if query.args.get("limit") or query.args.get("offset"):
        raise NotSupportedError("a materialized view cannot have LIMIT or OFFSET")
    query = query.copy()
    query.set("order", None)
    program = translate(query, session.catalog)
    analysis.stratify(program)
    opaque = next((relation.opaque for relation in program.relations.values() if relation.opaque), None)
    if opaque is not None:
        raise NotSupportedError(
            f"a materialized view is maintained through its rules, and {opaque.construct} runs as Spark SQL: "
            "store the query with CREATE TABLE ... AS, or read it through a CREATE VIEW"
        )
    if any(relation.key is not None for relation in program.relations.values()):
        raise NotSupportedError(
            "a materialized view is maintained from what its rules derive, and USING KEY rounds replace rows: "
            "store the query with CREATE TABLE ... AS"
        )
    return program


def base_tables(session: Services, program: Program) -> dict[str, list]:
    """The tables the program reads and their current versions ([directory, version]); a fixed version
    (`t VERSION AS OF 3`) never changes, and is left out."""
    catalog = session.catalog
    bases = {}
    for rule in program.rules:
        for atom in rule.atoms:
            name = atom.relation
            if atom.call_args or name in program.relations or name in bases or split_version(name)[1] is not None:
                continue
            entry = catalog.entry_of(name) if catalog.session_data(name) is None else None
            if entry is None or entry.kind not in MAINTAINABLE:
                kind = "data of this session or of Spark" if entry is None else f"a {entry.kind} table"
                raise NotSupportedError(
                    f"a materialized view reads recsql's own tables and materialized views; '{name}' is {kind}"
                )
            bases[name] = current_version(session, name)
    return bases


def current_version(session: Services, name: str) -> list:
    """[directory, version] of a table as it is now (of a materialized view: the version it is current at,
    after bringing it up to date)."""
    catalog = session.catalog
    entry = catalog.entry(name)
    if entry is None:
        raise ProgrammingError(f"table '{name}' not found")
    if entry.kind == Kind.MATERIALIZED:
        up_to_date(session, name)
        entry = catalog.entry(name)
        reflected = Reflected.of(entry)
        return [str(catalog.warehouse / entry.path / reflected.output), reflected.versions[reflected.output]]
    table = catalog.managed(name)
    return [str(table.root), table.current().version]


def create(session: Services, name: str, create: exp.Create, sql: str, replace: bool) -> MaintenanceTrace:
    """Compute a new view's relations and publish its entry (replacing an old one's at once)."""
    catalog = session.catalog
    existing = catalog.entries.absent_unless(name, replace)
    program = view_program(session, create)
    bases = base_tables(session, program)
    parts = stored_parts(program)
    trace = MaintenanceTrace(name)
    with catalog.new_data(name, existing) as relative:
        reflected = Maintenance(
            session, name, catalog.warehouse / relative, program, list(program.output_columns), None, trace
        ).run(bases, parts, sql)
        entry = Entry(name, Kind.MATERIALIZED, path=relative.as_posix(), sql=sql, reflects=reflected.as_json())
        catalog.entries.publish(entry, replace=existing is not None)
    return trace


def stored_parts(program: Program) -> dict[str, str]:
    """The part (table directory) storing each relation: its own, or its source's for a copy."""
    parts: dict[str, str] = {}
    for component in analysis.stratify(program):
        source = alias_source(program, component)
        for name in component.relations:
            parts[name] = parts[source] if source is not None else f"r{len(set(parts.values()))}"
    return parts


def up_to_date(session: Services, name: str, refresh: bool = False) -> MaintenanceTrace | None:
    """Bring a materialized view to its base tables' current versions (REFRESH: compute it again);
    what maintaining it did, or None when it was current."""
    catalog = session.catalog
    with maintaining(catalog.metadata, name):
        entry = catalog.entry(name)
        if entry is None or entry.kind != Kind.MATERIALIZED:
            raise ProgrammingError(f"materialized view '{name}' not found")
        reflected = Reflected.of(entry)
        replaced = set(reflected.parts.values())
        program = stored_program(session, entry.sql)
        bases = base_tables(session, program)
        same_tables = directories(bases) == directories(reflected.bases)  # none dropped and made anew
        current = program.to_datalog() == reflected.program and same_tables
        if current and bases == reflected.bases and not refresh:
            return None
        if not current or refresh:
            reflected = None
        trace = MaintenanceTrace(name)
        root = catalog.warehouse / entry.path
        parts = Reflected.of(entry).parts if reflected is not None else fresh_parts(stored_parts(program))
        maintained = Maintenance(session, name, root, program, list(program.output_columns), reflected, trace).run(
            bases, parts, entry.sql
        )
        entry.reflects = maintained.as_json()
        catalog.entries.publish(entry, replace=True)
        for part in replaced - set(parts.values()):  # a view computed again: its former tables
            shutil.rmtree(root / part, ignore_errors=True)
        return trace


def vacuum(session: Services, name: str, retain_hours: int) -> int:
    """VACUUM of a materialized view: each of its tables, while no maintenance changes them (a file a
    maintenance has written but not yet committed is no leftover); the files removed."""
    catalog = session.catalog
    with maintaining(catalog.metadata, name):
        parts = set(Reflected.of(catalog.entry(name)).parts.values())
        return sum(catalog.managed(state_name(name, part)).vacuum(retain_hours) for part in sorted(parts))


def directories(bases: dict[str, list]) -> dict[str, str]:
    return {table: directory for table, (directory, _) in bases.items()}


def fresh_parts(parts: dict[str, str]) -> dict[str, str]:
    """Parts for computing a view again beside its current tables (which stay readable until the entry
    names the new ones)."""
    prefix = f"g{uuid.uuid4().hex[:6]}_"
    return {relation: prefix + part for relation, part in parts.items()}


def dependents(session: Services, table: str) -> list[str]:
    """The materialized views that read `table`."""
    return [
        entry.name
        for entry in session.catalog.entries.all()
        if entry.kind == Kind.MATERIALIZED and table in (entry.reflects or {}).get("bases", {})
    ]


def maintain_dependents(session: Services, table: str, traces: list[MaintenanceTrace] | None = None) -> None:
    """After `table` changed: every view reading it (and the views reading those) brought up to date."""
    for view in dependents(session, table):
        trace = up_to_date(session, view)
        if trace is not None and traces is not None:
            traces.append(trace)
        maintain_dependents(session, view, traces)


def read_views(session: Services, statement: exp.Expression) -> None:
    """Bring up to date the materialized views a statement reads (through views too)."""
    for name, entry in names_read(session, statement):
        if entry is not None and entry.kind == Kind.MATERIALIZED:
            up_to_date(session, name)


def names_read(session: Services, statement: exp.Expression) -> Iterator[tuple[str, Entry | None]]:
    """Each name a statement reads, through the queries of plain views, with its entry (None: registered
    data, or a name recsql does not keep). Only recsql's own entries are looked at: a name they do not
    hold (a CTE, Spark's) costs a missing file, never Spark."""
    catalog = session.catalog
    seen: set[str] = set()
    pending = table_names(statement)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        entry = None if name in catalog.registered else catalog.entry(name)
        if entry is not None and entry.kind == Kind.VIEW:
            pending += table_names(view_query_of(parsed_once(entry.sql)))
        yield name, entry


def table_names(statement: exp.Expression) -> list[str]:
    """The one-part table names a statement reads or writes (not table functions such as range(10))."""
    return [
        table.name.lower()
        for table in statement.find_all(exp.Table)
        if isinstance(table.this, exp.Identifier) and table.name and not table.args.get("db")
    ]
