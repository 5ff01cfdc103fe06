"""The `recsql` command: script runner, interactive shell and output formats."""
