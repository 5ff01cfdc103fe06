"""What every statement handler shares: the result it returns, and its signature (it takes the services of
the session running it, `recsql.services.Services`, so that handlers need not import the session)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from recsql.services import Services


@dataclass
class Result:
    """What a statement returns: rows (Arrow) with their column names and Spark types, or a row count."""

    names: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    table: pa.Table | None = None
    rowcount: int = -1

    @classmethod
    def of(cls, data: pa.Table, types: list[str]) -> Result:
        """The rows of a table the statement built itself (its columns named as the result's)."""
        return cls(data.column_names, types, data, data.num_rows)


# (session, statement, its SQL text) → result; the statement is of the node class its line of the
# dispatch table names
Handler = Callable[[Services, Any, str], Result]
