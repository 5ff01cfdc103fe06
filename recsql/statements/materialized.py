"""CREATE, REFRESH and DROP MATERIALIZED VIEW (the views themselves: recsql/views/)."""

from __future__ import annotations

from sqlglot import exp

from recsql.errors import ProgrammingError
from recsql.services import Services
from recsql.statements.handler import Result
from recsql.views import upkeep
from translator.core import table_name


def is_materialized(create: exp.Create) -> bool:
    properties = create.args.get("properties")
    return properties is not None and any(isinstance(p, exp.MaterializedProperty) for p in properties.expressions)


def create(session: Services, create: exp.Create, name: str, replace: bool, sql: str) -> Result:
    """CREATE [OR REPLACE] MATERIALIZED VIEW v AS query: the view computed and stored."""
    if "." in name:
        raise ProgrammingError(f"CREATE MATERIALIZED VIEW {name}: recsql's views have one-part names")
    if create.expression is None or create.expression.find(exp.Placeholder):
        raise ProgrammingError("CREATE MATERIALIZED VIEW needs AS followed by a query without parameters (?)")
    session.record_maintenance(upkeep.create(session, name, create, sql, replace))
    return Result()


def refresh(session: Services, refresh: exp.Refresh, sql: str) -> Result:
    """REFRESH MATERIALIZED VIEW v: computed again from its base tables."""
    name = table_name(refresh.this, session.catalog)
    session.record_maintenance(upkeep.up_to_date(session, name, refresh=True))
    return Result()
