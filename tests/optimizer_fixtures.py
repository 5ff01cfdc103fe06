"""Golden cases of the optimizer passes, read from their fixture files.

tests/fixtures/optimizer/<pass>.txt holds the cases of one pass, separated by blank lines. A case is
`# title:` and optional `# set: recsql.key = value` (a setting for the case), `# note: ...` (what the
pass must say it decided) and `# table: name(column distinct, ...) rows` lines, the input query in SQL up
to a line ending with `;`, then the program the pass makes of its translation, as `Program.to_datalog()`
prints it, each rule the pass gave join methods followed by `% joins: ...`. A table declares the
columns and the statistics the estimates read (a column without a distinct count has as many values as
rows); one declared in a block without SQL is one of every case of the file. Other `#` lines are
comments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from recsql.optimizer import PASSES, Optimized, optimize
from recsql.optimizer.join_search import CostModel
from recsql.settings import Settings
from recsql.statistics import ColumnStatistics, TableStatistics
from translator.dialect import parse_one
from translator.ir import Program
from translator.translate import translate

FIXTURES = Path(__file__).with_name("fixtures") / "optimizer"
TABLE = re.compile(r"# table: (\w+)\(([^)]*)\) (\d+) rows$")


class Tables:
    """Declared tables, as the translator's schema and the optimizer's statistics (a later declaration of
    a name replaces an earlier one)."""

    def __init__(self, declarations: list[str]):
        self.columns: dict[str, tuple[str, ...]] = {}
        self.statistics: dict[str, TableStatistics] = {}
        for line in declarations:
            match = TABLE.match(line)
            assert match, f"not a table declaration: {line}"
            name, columns, rows = match.group(1), match.group(2).split(","), int(match.group(3))
            specs = [column.split() for column in columns]
            self.columns[name] = tuple(spec[0] for spec in specs)
            distinct = [int(spec[1]) if len(spec) > 1 else rows for spec in specs]
            self.statistics[name] = TableStatistics(rows, tuple(ColumnStatistics(d) for d in distinct))

    def table_columns(self, name: str) -> tuple[str, ...] | None:
        return self.columns.get(name)

    def view_query(self, name: str) -> None:
        return None

    def table_statistics(self, name: str) -> TableStatistics | None:
        return self.statistics.get(name)


@dataclass
class Case:
    name: str  # the pass
    title: str = ""
    settings: list[str] = field(default_factory=list)  # `recsql.key = value`
    note: str | None = None
    tables: list[str] = field(default_factory=list)  # declarations
    sql: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)

    def run(self, tables: Tables) -> Optimized:
        """The case's pass alone on the translation of its SQL."""
        settings = Settings()
        for assignment in self.settings:
            settings.set(*(part.strip() for part in assignment.split("=", 1)))
        program = translate(parse_one(" ".join(self.sql).rstrip().rstrip(";")), tables)
        run = next(run for run in PASSES if run.__name__ == self.name)
        return optimize(program, tables, settings, CostModel(), passes=(run,))


def cases(path: Path) -> list[tuple[Tables, Case]]:
    """The cases of a fixture file, each with its tables."""
    shared: list[str] = []
    blocks: list[Case] = []
    case = Case(path.stem)
    for line in path.read_text().splitlines() + [""]:
        directive = re.match(r"# (title|set|note|table): (.*)$", line)
        if not line.strip():
            if case.sql:
                blocks.append(case)
            else:
                shared += case.tables
            case = Case(path.stem)
        elif directive and directive.group(1) == "set":
            case.settings.append(directive.group(2))
        elif directive and directive.group(1) == "table":
            case.tables.append(line)
        elif directive:
            setattr(case, directive.group(1), directive.group(2))
        elif line.startswith("#"):
            continue
        elif not case.sql or not case.sql[-1].rstrip().endswith(";"):
            case.sql.append(line)
        else:
            case.expected.append(line)
    return [(Tables(shared + case.tables), case) for case in blocks]


def listing(program: Program) -> str:
    """`Program.to_datalog()`, each rule with join methods followed by them."""
    rules = iter([rule for name in program.relations for rule in program.rules_for(name)])
    lines = []
    for line in program.to_datalog().splitlines():
        if not line.startswith(("%", "?-")):
            joins = next(rules).joins
            line += f"  % joins: {', '.join(method.value for method in joins)}" if joins else ""
        lines.append(line)
    return "\n".join(lines)
