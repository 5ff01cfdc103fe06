"""Materialized views, recursive ones included: a view's program evaluated once and its relations stored
(stored.py), then kept current by the statements that change its base tables, from the facts they add
and remove (maintenance.py, with the delta rules of delta_rules.py)."""
