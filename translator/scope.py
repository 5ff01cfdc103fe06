"""Name resolution: which IR variable a SQL column reference stands for."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from translator.errors import TranslationError

# columns recsql adds to a relation for its own use (such as the file of each row): never offered to users
INTERNAL_COLUMN_PREFIX = "__recsql_"


@dataclass
class Source:
    """One item of a FROM clause: its alias, its columns, and the IR variable bound to each column."""

    alias: str
    columns: tuple[str, ...]
    variables: list[str]


@dataclass
class Scope:
    sources: list[Source] = field(default_factory=list)
    parent: "Scope | None" = None

    def add(self, source: Source, node: exp.Expression | None = None) -> None:
        if any(existing.alias == source.alias for existing in self.sources):
            raise TranslationError.at_node(f"table alias '{source.alias}' is used twice in one FROM clause", node)
        self.sources.append(source)

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
        name = column.name.lower()
        qualifier = column.table.lower() if column.table else None
        matches = []
        for source in self.sources:
            if qualifier is not None and source.alias != qualifier:
                continue
            matches.extend(
                source.variables[i] for i, candidate in enumerate(source.columns) if candidate.lower() == name
            )
        if len(matches) > 1:
            raise TranslationError.at_node(f"column reference '{column.sql()}' is ambiguous", column)
        return matches[0] if matches else None

    def _not_found_message(self, column: exp.Column) -> str:
        qualifier = column.table.lower() if column.table else None
        if qualifier is not None and not self._has_alias(qualifier):
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

    def _has_alias(self, alias: str) -> bool:
        scope: Scope | None = self
        while scope is not None:
            if any(source.alias == alias for source in scope.sources):
                return True
            scope = scope.parent
        return False

    def star(self, qualifier: str | None, node: exp.Expression) -> list[tuple[str, str]]:
        """(source alias, column name) pairs a `*` or `alias.*` expands to."""
        chosen = [s for s in self.sources if qualifier is None or s.alias == qualifier.lower()]
        if qualifier is not None and not chosen:
            raise TranslationError.at_node(f"unknown table or alias '{qualifier}' in '{qualifier}.*'", node)
        return [(source.alias, name) for source in chosen for name in source.columns]
