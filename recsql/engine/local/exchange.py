"""All-to-all exchange among the tasks of one Spark barrier stage, through files in a directory every task
can read and write (the tasks of a local Spark share the driver's file system).

The tasks run in lockstep: each call is one round, and every task makes the same calls in the same order.
A round's files are written under a temporary name and renamed, so a file that exists is complete; a
task's marker file, written last, says that all its files of the round are there. Spark's own barrier
call is not used per round: it waits in steps of a second.
"""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pyarrow.compute as pc

from recsql.errors import OperationalError

POLL_SECONDS = (0.0002, 0.01)  # the first and the longest pause between looks for the other tasks' files


class DirectoryExchange:
    """Rounds of exchange among `parts` tasks, this one being `part`, under `directory`; a task that has
    not answered within `timeout` seconds fails the round."""

    def __init__(self, directory: str, part: int, parts: int, timeout: float):
        self.directory = directory
        self.part = part
        self.parts = parts
        self.timeout = timeout
        self.round = 0

    def route(self, table: pa.Table, owners: pa.Array) -> pa.Table:
        """Send each row of `table` to the task its entry of `owners` names; the rows all tasks sent here."""
        folder = self.next_round()
        for owner in range(self.parts):
            rows = table.filter(pc.equal(owners, owner))
            self.write(os.path.join(folder, f"{self.part}-{owner}.arrow"), rows)
        self.mark(folder, "")
        self.wait(folder)
        received = []
        for sender in range(self.parts):
            path = os.path.join(folder, f"{sender}-{self.part}.arrow")
            with pa.memory_map(path) as source:
                received.append(pa.ipc.open_file(source).read_all())
            os.remove(path)
        return pa.concat_tables(received).combine_chunks() if received else table.slice(0, 0)

    def total(self, count: int) -> int:
        """The sum of every task's `count`."""
        folder = self.next_round()
        self.mark(folder, str(count))
        return sum(int(text) for text in self.wait(folder))

    def next_round(self) -> str:
        self.round += 1
        folder = os.path.join(self.directory, str(self.round))
        os.makedirs(folder, exist_ok=True)
        return folder

    def write(self, path: str, table: pa.Table) -> None:
        partial = path + ".partial"
        with pa.OSFile(partial, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        os.replace(partial, path)

    def mark(self, folder: str, text: str) -> None:
        partial = os.path.join(folder, f"{self.part}.partial")
        with open(partial, "w") as marker:
            marker.write(text)
        os.replace(partial, os.path.join(folder, f"{self.part}.done"))

    def wait(self, folder: str) -> list[str]:
        """The marker texts of every task of the round, once all are there."""
        deadline = time.monotonic() + self.timeout
        pause = POLL_SECONDS[0]
        texts = []
        for sender in range(self.parts):
            path = os.path.join(folder, f"{sender}.done")
            while not os.path.exists(path):
                if time.monotonic() > deadline:
                    raise OperationalError(f"part {sender} of a distributed fixpoint did not answer within "
                                           f"{self.timeout:.0f} s (round {self.round})")
                time.sleep(pause)
                pause = min(pause * 2, POLL_SECONDS[1])
            with open(path) as marker:
                texts.append(marker.read())
        return texts
