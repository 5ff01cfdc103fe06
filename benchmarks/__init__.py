"""Benchmark runners: recsql side by side with the alternatives, in one process, as ratios of medians."""
