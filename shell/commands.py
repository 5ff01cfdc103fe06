"""The shape of the meta-command table: what a backslash command is and what its arguments are.

One entry holds everything the shell knows of a command (its names, help text, handler and the kind of
each argument), so running it, listing it in `\\help` and completing its arguments all read the same
entry, and adding a command is adding one entry. This module holds no commands itself: `shell.meta`
fills the table, and the completer takes it as given, which keeps completion free of Spark and of the
handlers' imports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import Enum, auto
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shell.runner import Runner


class Kind(Enum):
    """What an argument names, and so what Tab offers for it."""

    TABLE = auto()  # a table or view of the catalog
    SETTING = auto()  # a recsql or Spark setting
    PATH = auto()  # a file or directory
    CHOICE = auto()  # one of the argument's `choices`
    TEXT = auto()  # free text: nothing to offer


@dataclass(frozen=True)
class Argument:
    """One argument of a meta-command: how the usage line names it and what Tab offers for it."""

    label: str  # as the usage line shows it: NAME, PATH, on|off
    kind: Kind
    choices: tuple[str, ...] = ()

    @classmethod
    def choice(cls, *words: str) -> Argument:
        """An argument taking one of `words`; its label lists them (`on|off`)."""
        return cls("|".join(words), Kind.CHOICE, words)


@dataclass(frozen=True)
class MetaCommand:
    """One entry of the table: a command's names, its line in `\\help`, its handler and its arguments."""

    name: str
    summary: str
    run: Callable[[Runner, list[str]], None]
    arguments: tuple[Argument, ...] = ()
    optional: bool = False  # the arguments may be left out together (`\\set` alone lists the settings)
    aliases: tuple[str, ...] = ()

    @property
    def usage(self) -> str:
        """The arguments as the help and usage errors show them: `NAME PATH`, `[on|off]`."""
        listed = " ".join(argument.label for argument in self.arguments)
        return f"[{listed}]" if listed and self.optional else listed

    def argument(self, position: int) -> Argument | None:
        """The argument at 1-based `position`, None past the last."""
        return self.arguments[position - 1] if 0 < position <= len(self.arguments) else None


class CommandTable:
    """The meta-commands in the order the help lists them, found by name or alias."""

    def __init__(self, commands: Iterable[MetaCommand]):
        self.commands = tuple(commands)
        self._by_name = {name: command for command in self.commands for name in (command.name, *command.aliases)}

    def __iter__(self) -> Iterator[MetaCommand]:
        return iter(self.commands)

    def find(self, name: str) -> MetaCommand | None:
        return self._by_name.get(name)

    def names(self) -> list[str]:
        """Every name Tab completes: the commands' own names, then their aliases."""
        return [command.name for command in self.commands] + [
            alias for command in self.commands for alias in command.aliases
        ]
