"""Datalog programs as input: their text parsed (syntax.py) and made the IR (program.py)."""
