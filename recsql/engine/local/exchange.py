"""All-to-all exchange among the tasks of one Spark barrier stage, through files in a directory every task
can read and write (the tasks of a local Spark share the driver's file system).

The tasks run in lockstep: each call is one round, and every task makes the same calls in the same order.
A round's files are written under a temporary name and renamed, so a file that exists is complete; a
task's marker file, written last, says that all its files of the round are there. Each attempt Spark
makes of the stage has a folder of its own under the exchange's directory. A task that fails, or the
driver when the statement is cancelled, leaves a stop marker there, and every task stops at its next
round. Spark's own barrier call is not used per round: it waits in steps of a second.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from recsql.errors import OperationalError

POLL_SECONDS = (0.0002, 0.01)  # the first and the longest pause between looks for the other tasks' files
STOP = "stop"  # the marker that stops every task of the exchange
REMOVAL_PAUSES = (0.01, 0.1, 0.5, 2.0)  # between attempts to remove a directory tasks may still write to


class Stopped(OperationalError):
    """Another task failed or the statement was cancelled: this task stopped (who stopped it says why)."""

    def __init__(self) -> None:
        super().__init__("a part of the fixpoint stopped: another part failed or the statement was cancelled")


def stop(directory: str) -> None:
    """Stop every task of the exchange under `directory` at its next round."""
    with open(os.path.join(directory, STOP), "w"):
        pass


def remove(directory: str) -> None:
    """Remove the exchange's directory, once tasks still writing (a cancelled job's) have stopped."""
    stop(directory)
    for pause in REMOVAL_PAUSES:
        shutil.rmtree(directory, ignore_errors=True)
        if not os.path.exists(directory):
            return
        time.sleep(pause)


class DirectoryExchange:
    """Rounds of exchange among `parts` tasks, this one being `part`, in attempt `attempt` of the stage,
    under `directory`; a task that has not answered within `timeout` seconds fails the round."""

    def __init__(self, directory: str, attempt: int, part: int, parts: int, timeout: float):
        self.directory = directory
        self.folder = os.path.join(directory, str(attempt))
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
        return self.totals((count,))[0]

    def totals(self, counts: Sequence[int]) -> tuple[int, ...]:
        """The sums of every task's `counts`, position by position, in one round (a round of totals, whose
        first is what TotalsReader reads)."""
        folder = self.next_round()
        self.mark(folder, " ".join(str(count) for count in counts))
        answers = [[int(count) for count in text.split()] for text in self.wait(folder)]
        return tuple(sum(column) for column in zip(*answers))

    def stop(self) -> None:
        """Tell the other tasks that this one failed and will not answer."""
        stop(self.directory)

    def next_round(self) -> str:
        self.round += 1
        folder = os.path.join(self.folder, str(self.round))
        for path in (self.folder, folder):  # never the exchange's directory: gone, the driver is done
            try:
                os.mkdir(path)
            except FileExistsError:
                pass
            except FileNotFoundError:
                raise Stopped() from None
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
        stopped = os.path.join(self.directory, STOP)
        for sender in range(self.parts):
            path = os.path.join(folder, f"{sender}.done")
            while not os.path.exists(path):
                if os.path.exists(stopped):
                    raise Stopped()
                if time.monotonic() > deadline:
                    raise OperationalError(
                        f"part {sender} of a distributed fixpoint did not answer within "
                        f"{self.timeout:.0f} s (round {self.round})"
                    )
                time.sleep(pause)
                pause = min(pause * 2, POLL_SECONDS[1])
            with open(path) as marker:
                texts.append(marker.read())
        return texts


class TotalsReader:
    """The rounds of `total` as they complete, read from the files of the latest attempt under
    `directory` (the driver of a local master shares the tasks' file system)."""

    def __init__(self, directory: str, parts: int):
        self.directory = directory
        self.parts = parts
        self.attempt: str | None = None
        self.round = 0  # the last round read
        self.totals = 0  # the rounds of `total` read

    def new_totals(self) -> list[tuple[int, int]]:
        """(number, sum) of each round of `total` completed since the last call, numbered from 0 in
        its attempt (Spark may start the stage again)."""
        attempts = [int(name) for name in os.listdir(self.directory) if name.isdigit()]
        if not attempts:
            return []
        latest = os.path.join(self.directory, str(max(attempts)))
        if latest != self.attempt:
            self.attempt, self.round, self.totals = latest, 0, 0
        totals: list[tuple[int, int]] = []
        while True:
            folder = os.path.join(latest, str(self.round + 1))
            texts = []
            for part in range(self.parts):
                try:
                    with open(os.path.join(folder, f"{part}.done")) as marker:
                        texts.append(marker.read())
                except FileNotFoundError:
                    return totals  # the round is not complete yet
            self.round += 1
            if all(texts):  # a round of `route` leaves empty markers
                totals.append((self.totals, sum(int(text.split()[0]) for text in texts)))
                self.totals += 1
