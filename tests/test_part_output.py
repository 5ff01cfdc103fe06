"""How a one-job strategy's task hands back its part (recsql/engine/strategies/part_output.py): its facts in
a file of the directory given, or, where that directory cannot be written (a cluster whose executors do
not see the warehouse), a failure that reaches the user as an OperationalError naming the directory."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from recsql.engine.strategies.part_output import FACTS, FAILURE, HISTORY, PartOutput, parts_balance, raise_failure
from recsql.errors import OperationalError

FACTS_TABLE = pa.table({"c0": pa.array([1, 2, 3], pa.int64())})


def test_a_part_writes_its_facts_and_reports_their_number(tmp_path):
    (statistics,) = PartOutput(FACTS_TABLE.schema, str(tmp_path)).batches(FACTS_TABLE, 2, 0)
    assert statistics.column(FACTS).to_pylist() == [3] and statistics.column(FAILURE).to_pylist() == [None]
    assert pq.read_table(tmp_path / "part-00000.parquet").column("c0").to_pylist() == [1, 2, 3]


def test_a_part_that_cannot_write_its_facts_fails_with_where(tmp_path):
    missing = str(tmp_path / "not-seen-here")
    (statistics,) = PartOutput(FACTS_TABLE.schema, missing).batches(FACTS_TABLE, 2, 0)
    with pytest.raises(OperationalError, match="could not write its facts in .*not-seen-here.*every executor"):
        raise_failure(statistics.column(FAILURE).to_pylist())


def test_the_balance_of_parts_names_the_largest_and_the_longest_against_the_mean():
    def part(facts: int, seconds: float) -> dict:
        return {FACTS: facts, HISTORY: [{"iteration": 0, "facts": facts, "elapsed": seconds}]}

    line = parts_balance(("tc",), [part(300, 3.0), part(100, 1.0)])
    assert line == (
        "tc: 2 parts, facts per part: largest 300, mean 200; time per part: longest 3.000 s, mean 2.000 s (1.50x)"
    )
    assert parts_balance(("tc",), [part(300, 3.0)]) is None
    untimed = {FACTS: 5, HISTORY: None}  # an exchanging task other than the first keeps no history
    assert parts_balance(("tc",), [part(300, 3.0), untimed]) == "tc: 2 parts, facts per part: largest 300, mean 152"
