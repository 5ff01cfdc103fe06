"""Name resolution: which IR variable a SQL column reference stands for."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from translator.errors import TranslationError

# columns recsql adds to a relation for its own use (such as the file of each row): never offered to users
INTERNAL_COLUMN_PREFIX = "__recsql_"


@dataclass
class Source:
    """One item of a FROM clause: its alias, its columns, the IR variable bound to each column, and the
    relation its rows come from (with a table function's arguments)."""

    alias: str
    columns: tuple[str, ...]
    variables: list[str]
    relation: str = ""
    call_args: tuple[exp.Expr, ...] = ()


@dataclass
class Scope:
    sources: list[Source] = field(default_factory=list)
    parent: Scope | None = None
    # the columns `*` lists and unqualified names find, in order, as (source, position): a column a JOIN's
    # USING names appears once, first, as its left side's
    columns: list[tuple[Source, int]] = field(default_factory=list)

    def add(self, source: Source, node: exp.Expr | None = None) -> None:
        if any(existing.alias == source.alias for existing in self.sources):
            raise TranslationError.at_node(f"table alias '{source.alias}' is used twice in one FROM clause", node)
        self.sources.append(source)
        self.columns.extend((source, i) for i in range(len(source.columns)))

    def join_using(self, names: list[exp.Identifier]) -> list[exp.EQ]:
        """JOIN ... USING (names) of the last source added: the equality of each named column of the left
        side with the last source's. From then on the left side's column stands for both, as in an inner or
        left join their value is the left side's."""
        right = self.sources[-1]
        left = [entry for entry in self.columns if entry[0] is not right]
        shared: list[tuple[Source, int]] = []
        equalities = []
        for identifier in names:
            entry = self._using_column(identifier, left, right)
            if entry in shared:
                raise TranslationError.at_node(f"USING names column '{identifier.name}' twice", identifier)
            shared.append(entry)
            source, position = entry
            name = source.columns[position]
            equalities.append(
                exp.EQ(
                    this=exp.column(name, table=source.alias, quoted=True),
                    expression=exp.column(name, table=right.alias, quoted=True),
                )
            )
        merged = {identifier.name.lower() for identifier in names}
        self.columns = (
            shared
            + [entry for entry in left if entry not in shared]
            + [(right, i) for i, name in enumerate(right.columns) if name.lower() not in merged]
        )
        return equalities

    @staticmethod
    def _using_column(identifier: exp.Identifier, left: list[tuple[Source, int]], right: Source) -> tuple[Source, int]:
        """The one column of the left side that a USING name names, checked to be a column of `right` too."""
        name = identifier.name.lower()
        found = [(source, i) for source, i in left if source.columns[i].lower() == name]
        if len(found) != 1:
            where = "is ambiguous on the left of the join" if found else "not found on the left of the join"
            raise TranslationError.at_node(f"USING column '{identifier.name}' {where}", identifier)
        if name not in (column.lower() for column in right.columns):
            raise TranslationError.at_node(f"USING column '{identifier.name}' not found in '{right.alias}'", identifier)
        return found[0]

    def resolve(self, column: exp.Column) -> tuple[str, int]:
        """(variable, depth): depth 0 is this scope, 1 its parent (a correlated reference), and so on."""
        scope: Scope | None = self
        depth = 0
        while scope is not None:
            found = scope._lookup(column)
            if found is not None:
                return found, depth
            scope = scope.parent
            depth += 1
        raise TranslationError.at_node(self._not_found_message(column), column)

    def _lookup(self, column: exp.Column) -> str | None:
        found = self._entry(column)
        return found[0].variables[found[1]] if found is not None else None

    def _entry(self, column: exp.Column) -> tuple[Source, int] | None:
        """The (source, position) of this scope's sources that `column` names, if one does."""
        name = column.name.lower()
        if column.table:
            qualifier = column.table.lower()
            entries = [
                (source, i) for source in self.sources if source.alias == qualifier for i in range(len(source.columns))
            ]
        else:
            entries = self.columns
        matches = [(source, i) for source, i in entries if source.columns[i].lower() == name]
        if len(matches) > 1:
            raise TranslationError.at_node(f"column reference '{column.sql()}' is ambiguous", column)
        return matches[0] if matches else None

    def owner(self, column: exp.Column) -> Source | None:
        """The FROM item, of this scope or the nearest enclosing one that knows the column, that `column`
        names (None: none does)."""
        scope: Scope | None = self
        while scope is not None:
            found = scope._entry(column)
            if found is not None:
                return found[0]
            scope = scope.parent
        return None

    def _not_found_message(self, column: exp.Column) -> str:
        qualifier = column.table.lower() if column.table else None
        if qualifier is not None and not self.has_alias(qualifier):
            return f"unknown table or alias '{column.table}' in '{column.sql()}'"
        candidates = [
            f"{source.alias}.{name}"
            for source in self.sources
            if qualifier is None or source.alias == qualifier
            for name in source.columns
            if not name.startswith(INTERNAL_COLUMN_PREFIX)
        ]
        hint = f"; available: {', '.join(candidates)}" if candidates else ""
        return f"column '{column.sql()}' not found{hint}"

    def source(self, alias: str) -> Source | None:
        """The FROM item of this scope or an enclosing one that `alias` names, the nearest."""
        scope: Scope | None = self
        while scope is not None:
            found = next((source for source in scope.sources if source.alias == alias), None)
            if found is not None:
                return found
            scope = scope.parent
        return None

    def named(self, alias: str) -> Source:
        """The FROM item `alias` names, which this scope or an enclosing one has (`alias` was found in it)."""
        found = self.source(alias)
        assert found is not None, alias
        return found

    def has_alias(self, alias: str) -> bool:
        """Whether `alias` names a FROM item of this scope or an enclosing one."""
        return self.source(alias) is not None

    def star(self, qualifier: str | None, node: exp.Expr) -> list[tuple[str, str]]:
        """(source alias, column name) pairs a `*` or `alias.*` expands to."""
        if qualifier is None:
            return [(source.alias, source.columns[i]) for source, i in self.columns]
        chosen = [s for s in self.sources if s.alias == qualifier.lower()]
        if not chosen:
            raise TranslationError.at_node(f"unknown table or alias '{qualifier}' in '{qualifier}.*'", node)
        return [(source.alias, name) for source in chosen for name in source.columns]
