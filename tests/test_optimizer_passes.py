"""Each optimizer pass alone on golden cases (tests/fixtures/optimizer/<pass>.txt, format in
optimizer_fixtures.py), as sqlglot tests its optimizer rules; the pipeline that runs them; the setting
that switches them off (no Spark)."""

from __future__ import annotations

import pytest
from optimizer_fixtures import FIXTURES, Tables, cases, listing

from recsql.errors import ProgrammingError
from recsql.optimizer import PASS_NAMES, optimize
from recsql.optimizer.join_search import CostModel
from recsql.settings import Settings
from translator.dialect import parse_one
from translator.translate import translate


def golden_cases() -> list:
    return [
        pytest.param(tables, case, id=f"{case.name}: {case.title}")
        for path in sorted(FIXTURES.glob("*.txt"))
        for tables, case in cases(path)
    ]


@pytest.mark.parametrize("tables, case", golden_cases())
def test_pass_alone(tables, case):
    optimized = case.run(tables)
    assert listing(optimized.program) == "\n".join(case.expected)
    if case.note is not None:
        assert [record.note for record in optimized.passes] == [case.note]


def test_every_pass_has_golden_cases():
    assert sorted(path.stem for path in FIXTURES.glob("*.txt")) == sorted(PASS_NAMES)
    assert all(cases(path) for path in FIXTURES.glob("*.txt"))


# --------------------------------------------------------------------- the pipeline

EDGES = Tables(["# table: e(src 1000, dst 1000) 5000 rows"])
BOUND = (
    "WITH RECURSIVE r(x, y) AS (SELECT src, dst FROM e UNION SELECT r.x, e.dst FROM r JOIN e ON r.y = e.src) "
    "SELECT y FROM r WHERE x = 3"
)


def run_pipeline(sql: str, disable: str = ""):
    settings = Settings()
    settings.set("recsql.disable_passes", disable)
    return optimize(translate(parse_one(sql), EDGES), EDGES, settings, CostModel())


def test_join_order_runs_again_only_after_a_rewrite():
    """Join ordering is listed twice; it runs the second time only on the program magic sets rewrote."""
    assert [record.name for record in run_pipeline(BOUND).passes] == list(PASS_NAMES) + ["order_joins"]
    free = run_pipeline(BOUND.replace(" WHERE x = 3", ""))
    assert [(record.name, record.changed) for record in free.passes] == [
        ("simplify_outer_joins", False),
        ("order_joins", True),
        ("magic_sets", False),
    ]


def test_disabled_passes_do_not_run():
    optimized = run_pipeline(BOUND, "magic_sets")
    assert optimized.disabled == ("magic_sets",)
    assert [record.name for record in optimized.passes] == ["simplify_outer_joins", "order_joins"]
    assert not any(name.startswith("m_") for name in optimized.program.relations)
    optimized = run_pipeline(BOUND, "order_joins, SIMPLIFY_OUTER_JOINS")
    assert optimized.disabled == ("simplify_outer_joins", "order_joins")
    assert [record.name for record in optimized.passes] == ["magic_sets"]
    assert not any(rule.joins for rule in optimized.program.rules)  # no pass ordered the rules


def test_unknown_pass_name_is_a_programming_error_listing_the_passes():
    settings = Settings()
    with pytest.raises(ProgrammingError) as error:
        settings.set("recsql.disable_passes", "magic_sets,join_order")
    assert "'join_order'" in str(error.value)
    assert all(name in str(error.value) for name in PASS_NAMES)
    assert settings.disable_passes == ()
    settings.set("recsql.disable_passes", "magic_sets")
    settings.set("recsql.disable_passes", "''")
    assert settings.disable_passes == ()
    assert ("recsql.disable_passes", "") in settings.items()
