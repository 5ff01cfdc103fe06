"""recsql: recursive SQL on Apache Spark, through a DB-API 2.0 interface.

The connection and cursor classes are imported on first use: importing recsql (or one of its modules, such
as the local evaluator) does not import Spark."""

from typing import Any

from recsql.engine.progress import Progress
from recsql.errors import (
    DatabaseError,
    DataError,
    Error,
    IntegrityError,
    InterfaceError,
    InternalError,
    MaintenanceDeferred,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    QueryCancelled,
    WarehouseUpgraded,
    Warning,
)

apilevel = "2.0"
threadsafety = 1
paramstyle = "qmark"

__all__ = [
    "Connection",
    "Cursor",
    "DataError",
    "DatabaseError",
    "Error",
    "IntegrityError",
    "InterfaceError",
    "InternalError",
    "MaintenanceDeferred",
    "NotSupportedError",
    "OperationalError",
    "ProgrammingError",
    "Progress",
    "QueryCancelled",
    "WarehouseUpgraded",
    "Warning",
    "apilevel",
    "connect",
    "paramstyle",
    "sql",
    "threadsafety",
]

LAZY = {
    "connect": "recsql.connection",
    "Connection": "recsql.connection",
    "Cursor": "recsql.cursor",
    "sql": "recsql.frames",
}


def __getattr__(name: str) -> Any:
    if name in LAZY:
        import importlib

        return getattr(importlib.import_module(LAZY[name]), name)
    raise AttributeError(f"module 'recsql' has no attribute {name!r}")
