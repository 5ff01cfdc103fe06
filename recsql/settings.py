"""Session settings (`SET recsql.key = value`)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from recsql.errors import ProgrammingError

PREFIX = "recsql."


@dataclass
class Settings:
    max_iterations: int = 10_000  # iterations of one recursive component
    max_rows: int = 100_000_000  # facts derived by one recursive component

    def set(self, key: str, value: str) -> None:
        name = key[len(PREFIX):] if key.startswith(PREFIX) else key
        known = {f.name: f for f in fields(self)}
        if name not in known:
            raise ProgrammingError(f"unknown setting '{key}'; known: {', '.join(PREFIX + k for k in known)}")
        try:
            number = int(str(value).strip("'\""))
        except ValueError:
            raise ProgrammingError(f"setting '{key}' takes a positive integer, not {value!r}") from None
        if number <= 0:
            raise ProgrammingError(f"setting '{key}' takes a positive integer, not {number}")
        setattr(self, name, number)

    def items(self) -> list[tuple[str, str]]:
        return [(PREFIX + f.name, str(getattr(self, f.name))) for f in fields(self)]
