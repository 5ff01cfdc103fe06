"""A Datalog program and its SQL twin plan alike and answer alike: every benchmark workload with a twin
(benchmarks/workloads.py, DATALOG_TWINS), on its small graph, under every strategy forced. "Alike" is
recsql.planner.shape: the same strata, strategies, rules, join orders and delta variants, whatever the
names. The timing side of the comparison is benchmarks/datalog.py."""

from __future__ import annotations

import pytest
from sqlglot import exp
from strategies import set_strategy

from benchmarks.workloads import workloads
from recsql.planner.shape import shape
from translator import dialect
from translator.dialect import DatalogQuery

TWINNED = [pytest.param(workload, id=workload.name) for workload in workloads(quick=True) if workload.datalog]


@pytest.mark.spark
@pytest.mark.parametrize("workload", TWINNED)
def test_a_program_plans_and_answers_as_its_sql_twin(conn, cur, workload):
    conn.register("edge", workload.edges())
    try:
        for strategy in ("local", "decomposed", "distributed"):
            set_strategy(conn, strategy)
            program = DatalogQuery(this=exp.Literal.string(workload.datalog))
            assert shape(conn.session.plan(program)) == shape(conn.session.plan(dialect.parse_one(workload.recsql)))
            cur.execute(workload.recsql)
            expected = cur.fetchall()
            cur.execute_datalog(workload.datalog)
            assert cur.fetchall() == expected, strategy
    finally:
        set_strategy(conn, "auto")


def test_every_benchmark_query_of_the_standard_set_has_a_twin():
    assert {w.name for w in workloads(quick=True) if w.datalog is None} == set()
