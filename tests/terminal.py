"""A pseudo-terminal with a screen: runs a program as a person at a terminal would see it.

pexpect gives the program a real pty (so prompt-toolkit, rich and the progress line behave as on a
terminal); pyte interprets what it writes into rows of text, so tests read the screen the user reads
instead of raw escape sequences.
"""

from __future__ import annotations

import re
import time

import pexpect
import pyte


class Terminal:
    def __init__(self, argv: list[str], env: dict[str, str], rows: int = 30, columns: int = 120):
        self.child = pexpect.spawn(
            argv[0], argv[1:], env=env, dimensions=(rows, columns), encoding="utf-8", codec_errors="replace"
        )
        self.screen = pyte.Screen(columns, rows)
        self.stream = pyte.Stream(self.screen)
        self.prompt = "recsql>"  # what the shell shows when it waits for input

    def read(self, timeout: float) -> bool:
        """Take what the program wrote within `timeout` seconds onto the screen; False at its end."""
        try:
            self.stream.feed(self.child.read_nonblocking(65536, timeout))
        except pexpect.TIMEOUT:
            pass
        except pexpect.EOF:
            return False
        return True

    @property
    def text(self) -> str:
        """The screen as lines of text, trailing blanks removed."""
        return "\n".join(line.rstrip() for line in self.screen.display).rstrip()

    def colours(self, text: str) -> set[str]:
        """The foreground colours of the characters of `text` where the screen first shows it."""
        for y, line in enumerate(self.screen.display):
            x = line.find(text)
            if x >= 0:
                return {self.screen.buffer[y][x + i].fg for i in range(len(text))}
        raise AssertionError(f"the screen does not show {text!r}:\n{self.text}")

    @property
    def cursor_line(self) -> str:
        return self.screen.display[self.screen.cursor.y].rstrip()

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match:
        """Wait until the screen shows `pattern` (a regular expression)."""
        deadline = time.monotonic() + timeout
        while True:
            match = re.search(pattern, self.text)
            if match:
                return match
            if time.monotonic() > deadline or (not self.read(0.1) and not self.child.isalive()):
                raise AssertionError(f"the screen never showed {pattern!r}; it shows:\n{self.text}")

    def wait_for_prompt(self, timeout: float = 60) -> None:
        """Wait until the shell waits for input: an empty prompt on the cursor's line."""
        deadline = time.monotonic() + timeout
        while self.cursor_line != self.prompt:
            if time.monotonic() > deadline:
                raise AssertionError(f"no prompt; the screen shows:\n{self.text}")
            self.read(0.1)

    def clear(self) -> None:
        """Ctrl-L: the shell clears the screen and shows its prompt alone at the top."""
        self.child.send("\x0c")
        deadline = time.monotonic() + 10
        while self.text != self.prompt:
            if time.monotonic() > deadline:
                raise AssertionError(f"the screen was not cleared:\n{self.text}")
            self.read(0.1)

    def type(self, text: str) -> None:
        """Type `text` (a line break is Enter)."""
        self.child.send(text.replace("\n", "\r"))

    def exit_status(self, timeout: float = 30) -> int | None:
        """Wait for the program to end; its exit status."""
        deadline = time.monotonic() + timeout
        while self.read(0.1):
            if time.monotonic() > deadline:
                raise AssertionError(f"the program did not end; the screen shows:\n{self.text}")
        self.child.close()
        return self.child.exitstatus

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)
