"""recsql: recursive SQL on Apache Spark, through a DB-API 2.0 interface."""

from recsql.connection import Connection, connect
from recsql.cursor import Cursor
from recsql.engine.semi_naive import Progress
from recsql.errors import (
    DatabaseError,
    DataError,
    Error,
    IntegrityError,
    InterfaceError,
    InternalError,
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
    "connect", "Connection", "Cursor", "Progress", "Error", "Warning", "InterfaceError", "DatabaseError",
    "DataError", "OperationalError", "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError",
    "QueryCancelled", "WarehouseUpgraded", "apilevel", "threadsafety", "paramstyle",
]
