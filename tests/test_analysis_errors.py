"""Analysis errors belong to the IR layer: the checks raise AnalysisError (UnsupportedProgram for what
recsql does not evaluate), which the session turns into ProgrammingError (NotSupportedError), messages
unchanged (no Spark)."""

from __future__ import annotations

import pytest

from recsql import analysis
from recsql.errors import DatabaseError, NotSupportedError, ProgrammingError
from recsql.session import translation_errors
from translator.dialect import parse_one
from translator.translate import translate

RECURSION = (
    "WITH RECURSIVE r(x, y) AS (SELECT a, b FROM arc UNION SELECT r.x, arc.b FROM r, arc "
    "WHERE r.y = arc.a AND {} (SELECT 1 FROM r r2 WHERE {})) SELECT * FROM r"
)
NEGATION = RECURSION.format("NOT EXISTS", "r2.x = arc.b")
INEQUALITY = RECURSION.format("EXISTS", "r2.x < arc.b")


class Arc:
    def table_columns(self, name):
        return ("a", "b") if name == "arc" else None

    def view_query(self, name):
        return None


def analysed(sql: str) -> None:
    analysis.stratify(translate(parse_one(sql), Arc()))


@pytest.mark.parametrize("sql, kind", [(NEGATION, analysis.AnalysisError), (INEQUALITY, analysis.UnsupportedProgram)])
def test_analysis_raises_its_own_errors(sql, kind):
    with pytest.raises(kind) as error:
        analysed(sql)
    assert not isinstance(error.value, DatabaseError)


@pytest.mark.parametrize(
    "sql, kind, message",
    [
        (
            NEGATION,
            ProgrammingError,
            "negation through recursion: r depends on NOT a subquery reading r within the "
            "recursive cycle (r); negation (NOT EXISTS, NOT IN, EXCEPT) may only read relations computed before the "
            "recursion",
        ),
        (
            INEQUALITY,
            NotSupportedError,
            "r reads r within the recursive cycle (r) through an EXISTS or IN subquery "
            "that reads columns of a LEFT JOIN or is correlated by a condition other than equalities; "
            "correlate it with "
            "equalities of inner-joined columns only, or join the recursive CTE instead",
        ),
    ],
)
def test_the_session_boundary_makes_them_pep249_errors(sql, kind, message):
    with pytest.raises(kind) as error, translation_errors():
        analysed(sql)
    assert type(error.value) is kind and str(error.value) == message
