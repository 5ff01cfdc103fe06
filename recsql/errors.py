"""PEP 249 exception hierarchy.

Every error a user can cause reaches them as one of these classes. SQL errors carry the position
(1-based line and column within the statement text) when one is known, so the shell and the script
runner can point at it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


class Warning(Exception):
    """Important warnings (PEP 249)."""


class WarehouseUpgraded(UserWarning):
    """A warehouse of an earlier layout was upgraded when opened (a Python warning, not an exception)."""


class MaintenanceDeferred(UserWarning):
    """A statement's change is committed, but bringing a materialized view reading the table up to date
    failed: the view is brought up to date when next read (where the failure, if it lasts, is raised)."""


class Error(Exception):
    """Base class of every recsql error."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.message} (line {self.line}, column {self.column})"
        return self.message


class InterfaceError(Error):
    """Misuse of the DB-API objects themselves (a closed cursor, fetch before execute)."""


class DatabaseError(Error):
    """Errors related to the database."""


class DataError(DatabaseError):
    """Problems with the processed data (bad values, overflow)."""


class OperationalError(DatabaseError):
    """Limits exceeded, Spark failures, cancelled queries."""


class QueryCancelled(OperationalError):
    """The statement was cancelled (`Connection.cancel()`, Ctrl-C in the shell) before it finished."""


class IntegrityError(DatabaseError):
    """Relational integrity violations."""


class InternalError(DatabaseError):
    """A bug in recsql: the query is valid but the engine failed. `statement` is the one that failed."""

    statement: str = ""


class ProgrammingError(DatabaseError):
    """SQL the user got wrong: syntax, unknown names, unstratifiable or non-monotone programs."""


class NotSupportedError(DatabaseError):
    """Valid SQL that recsql does not implement."""


def error_class(name: str) -> type[Error]:
    """The recsql exception class called `name` (an error reported as text by a Spark task);
    OperationalError for a name that is none."""
    found = globals().get(name)
    return found if isinstance(found, type) and issubclass(found, Error) else OperationalError


@contextlib.contextmanager
def internal_errors(statement: str) -> Iterator[None]:
    """The boundary of recsql's API: an exception that is not a recsql error is a bug of recsql, and
    reaches the caller as an InternalError naming the statement (the exception chained as its cause)."""
    try:
        yield
    except Error:
        raise
    except Exception as error:
        internal = InternalError(
            f"internal error of recsql ({type(error).__name__}: {error}) in the statement: {statement}"
        )
        internal.statement = statement
        raise internal from error
