"""The 22 TPC-H queries with the specification's validation parameters (queries/qNN.sql)."""

from __future__ import annotations

from pathlib import Path

DIRECTORY = Path(__file__).with_name("queries")


def query(number: int) -> str:
    return (DIRECTORY / f"q{number:02d}.sql").read_text()


def queries() -> dict[int, str]:
    return {number: query(number) for number in range(1, 23)}
