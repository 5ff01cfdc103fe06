"""Execution: Spark DataFrames built from rules, and fixpoint drivers for recursive components."""
