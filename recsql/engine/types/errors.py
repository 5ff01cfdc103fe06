"""What the Python type derivation raises where only Spark can derive a type."""


class NotInferred(Exception):
    """The expression is outside what the type derivation covers (its type, or its meaning in DuckDB)."""
