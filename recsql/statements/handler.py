"""What every statement handler shares: the result it returns, and its signature (it takes the services of
the session running it, `recsql.services.Services`, so that handlers need not import the session)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from recsql.engine.answer import Answer, StoredAnswer
from recsql.services import Services


@dataclass
class Result:
    """What a statement returns: rows with their column names and Spark types, or a row count. The rows
    are a table the statement built, or a query's answer, which may still be on Spark's executors."""

    names: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    table: pa.Table | None = None
    rowcount: int = -1
    answer: Answer | StoredAnswer | None = None

    @classmethod
    def of_answer(cls, answer: Answer | StoredAnswer) -> Result:
        return cls(answer.names, [data_type.simpleString() for data_type in answer.types], answer=answer)

    @property
    def has_rows(self) -> bool:
        return self.table is not None or self.answer is not None

    def rows_table(self) -> pa.Table:
        """The rows as Arrow (columns c0 .. cN for an answer); an answer kept on Spark is collected now."""
        if self.answer is not None:
            return self.answer.table
        assert self.table is not None
        return self.table

    def head(self, rows: int) -> pa.Table:
        """The first rows (an answer kept on Spark sends only those)."""
        return self.answer.head(rows) if self.answer is not None else self.rows_table().slice(0, rows)

    @classmethod
    def of(cls, data: pa.Table, types: list[str]) -> Result:
        """The rows of a table the statement built itself (its columns named as the result's)."""
        return cls(data.column_names, types, data, data.num_rows)


# (session, statement, its SQL text) → result; the statement is of the node class its line of the
# dispatch table names
Handler = Callable[[Services, Any, str], Result]
