"""The `recsql` command: script runner, interactive shell and output formats.

The top layer: it drives the DB-API connection (`recsql.connect`) as any program would."""
