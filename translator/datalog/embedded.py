"""`DATALOG $$ program $$` in a SQL statement: the program's rules joined to the statement's program.

The program's answer is its last `.output`; its atoms read the statement's tables and views by name (a
view through its own translation), `.input rel(IO=table, name=t)` the table t. Its relations take other
names where the statement's own would clash. It reads tables only: files (`.input ... IO=file`) and
stored outputs (`.output ... IO=table`) belong to programs run as programs (`cursor.execute_datalog`).
"""

from __future__ import annotations

from translator.core import TranslatorCore
from translator.datalog.program import Tables, atoms_of, io_table, program_of
from translator.datalog.syntax import ProgramSyntax, parse
from translator.dialect import DatalogQuery
from translator.errors import TranslationError, UnsupportedError


class DatalogMixin(TranslatorCore):
    """A DATALOG query as a relation of the statement's program."""

    def translate_datalog(self, query: DatalogQuery) -> str:
        try:
            syntax = parse(query.source)
            sources = sources_of(syntax)
            return self.datalog_relation(syntax, syntax.outputs[-1].relation, sources)
        except TranslationError as error:
            where = f" (line {error.line}, column {error.column} of the program)" if error.line else ""
            raise type(error).at_node(f"in the DATALOG program: {error.message}{where}", query) from None

    def datalog_relation(self, syntax: ProgramSyntax, output: str, sources: dict[str, str]) -> str:
        """The relation of the program's `output`, its rules added to the statement's program."""
        derived = {clause.head.relation for clause in syntax.clauses}
        for clause in syntax.clauses:  # the tables it reads: no relation of a view it reads takes their names
            read = {atom.relation for atom in atoms_of(clause)} - derived
            self.table_names.update(sources.get(name, name) for name in read)
        program = program_of(syntax, output, self.datalog_tables(sources), lambda name: self.new_relation(name, ()))
        self.program.relations.update(program.relations)
        self.program.rules.extend(program.rules)
        return program.output

    def datalog_tables(self, sources: dict[str, str]) -> Tables:
        """What a program's atom reads by name: a table, or a view translated into the statement."""

        def found(name: str) -> tuple[str, tuple[str, ...]] | None:
            table = sources.get(name, name)
            columns = self.catalog.table_columns(table)
            if columns is not None:
                return table, tuple(columns)
            view = self.view_query(table)
            if view is None:
                return None
            relation = self.translate_view(table, view, view)
            return relation, self.program.relations[relation].columns

        return found


def sources_of(syntax: ProgramSyntax) -> dict[str, str]:
    """The table each `.input` relation reads; refuses what a statement's program cannot do."""
    if not syntax.outputs:
        raise TranslationError("the program has no .output: name the relation it answers (.output name)")
    for item in syntax.outputs:
        if io_table(item) is not None:
            raise UnsupportedError(
                f".output {item.relation}(IO=table) stores a table: run the program with execute_datalog or "
                "recsql run to store it",
                item.place.line,
                item.place.column,
            )
    sources = {}
    for item in syntax.inputs:
        if item.options.get("io") == "file":
            raise UnsupportedError(
                f".input {item.relation}(IO=file) in a SQL statement: read the file into a table, or run the "
                "program with execute_datalog or recsql run",
                item.place.line,
                item.place.column,
            )
        sources[item.relation] = io_table(item) or item.relation
    return sources
