"""Session settings (`SET recsql.key = value`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum

from recsql.errors import ProgrammingError
from recsql.optimizer import PASS_NAMES
from recsql.optimizer.context import Magic

PREFIX = "recsql."


class Strategy(StrEnum):
    """Where a recursive stratum runs (`recsql.strategy` forces one; AUTO lets the planner choose)."""

    AUTO = "auto"
    LOCAL = "local"  # in this process, DuckDB over Arrow, no Spark job
    DECOMPOSED = "decomposed"  # one Spark job, a task per part of the pivot's values
    DISTRIBUTED = "distributed"  # a Spark job per iteration


class SparkUse(StrEnum):
    """Whether a query whose plan runs in this process uses Spark (`recsql.spark`)."""

    AUTO = "auto"  # it reads its tables directly and never uses Spark
    ALWAYS = "always"  # every query runs on Spark, its tables read by Spark


class SparkStart(StrEnum):
    """When Spark starts (`recsql.spark_start`)."""

    BACKGROUND = "background"  # on a background thread as soon as the connection opens
    ON_DEMAND = "on_demand"  # when a statement first needs it


CHOICES: dict[str, type[StrEnum]] = {  # settings that take one of the members of these
    "strategy": Strategy,
    "magic": Magic,
    "spark": SparkUse,
    "spark_start": SparkStart,
}
LISTS = {  # settings that take any of these, separated by commas ('' for none)
    "disable_passes": PASS_NAMES,
}


@dataclass
class Settings:
    max_iterations: int = 10_000  # iterations of one recursive component
    max_rows: int = 100_000_000  # facts derived by one recursive component
    # how recursive components run: in one process over Arrow data (local), as one Spark job whose tasks
    # each evaluate a part (decomposed), as a Spark job per iteration (distributed), or chosen per
    # component from its shape and estimated sizes (auto)
    strategy: Strategy = Strategy.AUTO
    # auto: a component runs locally when its inputs fit under this; a recursive one moves to Spark if it
    # derives more facts than this
    local_rows: int = 10_000_000
    # auto: the relations a decomposed recursion sends to every task must fit under this
    broadcast_rows: int = 10_000_000
    magic: Magic = Magic.AUTO  # magic sets: where the optimizer expects them to help (auto), always (on), never (off)
    # optimizer passes switched off by name, to see or work around what one does (EXPLAIN lists the passes)
    disable_passes: tuple[str, ...] = ()
    # auto: a query whose plan runs in this process reads its tables directly and never uses Spark;
    # always: every query runs on Spark, its tables read by Spark
    spark: SparkUse = SparkUse.AUTO
    # when Spark starts: on a background thread as soon as the connection opens, or when a statement
    # first needs it (scripts and one-off commands, which may never need it)
    spark_start: SparkStart = SparkStart.BACKGROUND

    def __post_init__(self) -> None:
        """Choices given as text (`Settings(strategy="local")`) held as their members, as `set` holds them."""
        for name, kind in CHOICES.items():
            setattr(self, name, chosen_member(PREFIX + name, str(getattr(self, name)), kind))

    def set(self, key: str, value: str) -> None:
        name = key[len(PREFIX) :] if key.startswith(PREFIX) else key
        known = {f.name: f for f in fields(self)}
        if name not in known:
            raise ProgrammingError(f"unknown setting '{key}'; known: {', '.join(PREFIX + k for k in known)}")
        text = str(value).strip("'\"")
        if name in CHOICES:
            setattr(self, name, chosen_member(key, text, CHOICES[name]))
            return
        if name in LISTS:
            setattr(self, name, chosen_names(key, text, LISTS[name]))
            return
        try:
            number = int(text)
        except ValueError:
            raise ProgrammingError(f"setting '{key}' takes a positive integer, not {value!r}") from None
        if number <= 0:
            raise ProgrammingError(f"setting '{key}' takes a positive integer, not {number}")
        setattr(self, name, number)

    def items(self) -> list[tuple[str, str]]:
        return [(PREFIX + f.name, value_text(getattr(self, f.name))) for f in fields(self)]


def chosen_member(key: str, text: str, kind: type[StrEnum]) -> StrEnum:
    """The member of `kind` that `text` names, in any case."""
    try:
        return kind(text.lower())
    except ValueError:
        raise ProgrammingError(f"setting '{key}' takes one of {', '.join(kind)}, not {text!r}") from None


def chosen_names(key: str, text: str, valid: tuple[str, ...]) -> tuple[str, ...]:
    """The names of a comma-separated list, each checked against `valid`."""
    names = tuple(dict.fromkeys(name.strip().lower() for name in text.split(",") if name.strip()))
    unknown = [name for name in names if name not in valid]
    if unknown:
        raise ProgrammingError(
            f"setting '{key}': unknown {', '.join(map(repr, unknown))}; it takes names separated by commas, "
            f"out of {', '.join(valid)}"
        )
    return names


def value_text(value: int | str | tuple[str, ...]) -> str:
    return ",".join(value) if isinstance(value, tuple) else str(value)
