"""Evaluation of a plan, each meaning defined once: what is computed (`sql/`: rules and merges as query trees,
printed for Spark or DuckDB), the semi-naive loop written once over an engine (`states`, `fixpoint`), the column
types Spark gives every relation derived in Python (`types/`), the local evaluator (`local/`, DuckDB over Arrow,
which knows nothing of Spark), the Spark evaluator (`spark/`), the strategies that run a recursive stratum
(`strategies/`) and the executor that chooses between a run here and one on Spark (`executor`).

May import: `translator`, `recsql.planner`, `recsql.optimizer` (a stratum's decomposition), `recsql.settings`,
`recsql.spark` (the session), `recsql.cancellation`, `recsql.errors`. The layers inside are listed in
tests/test_architecture.py.
"""
