"""The Spark evaluator: rules as Spark DataFrames, a fixpoint as Spark jobs, and the context a stratum runs in
on Spark (checkpoints, broadcasts, the types Spark gives each relation)."""
