"""Materialized views, recursive ones included: a view's program evaluated once and its relations stored
(stored.py: what its entry records), then kept current by the statements that change its base tables, from
the facts they add and remove (upkeep.py: when a view is computed or maintained). maintenance.py walks the
strata with the delta rules of delta_rules.py (group_rules.py for aggregates in recursion), closures kept as
arrays in this process (closure_arrays.py, closure_memory.py) and set differences of facts (fact_sets.py);
results.py holds the methods and changed relations it reports; relation_commits.py commits what changed.

May import: the engine, the catalog and the warehouse (`recsql.storage`), and the session's services through
`recsql.services` only: never the statements that maintain views, nor the session."""
