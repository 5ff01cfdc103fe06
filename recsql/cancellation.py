"""Cancelling a running statement from another thread (the shell's Ctrl-C, `Connection.cancel()`), or
by a KeyboardInterrupt on the thread running it (Ctrl-C in a script, a Jupyter kernel's interrupt).

A statement stops at whichever comes first: Spark cancels the jobs it is running (each statement tags
its jobs, or on Spark Connect its operations, from its first use of Spark; a tag, unlike a job group,
leaves a caller's own job group alone), an in-process DuckDB query it is running is interrupted, a wait
for Spark to start ends, or its recursive evaluation reaches the next iteration (a loop of short jobs or
of in-process queries may have nothing running at the moment of the cancel).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import uuid
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING

from recsql.errors import QueryCancelled
from recsql.spark.session_kinds import is_connect

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

INTERRUPT_ON_CANCEL = "spark.job.interruptOnCancel"  # the Spark local property setInterruptOnCancel sets


class Cancellation:
    """The cancel switch of the statement a session is running."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.tag: str | None = None  # the Spark job tag of the running statement
        self.spark: SparkSession | None = None  # where the running statement's jobs carry the tag
        self.untag: Callable[[], None] | None = None
        self.interrupts: list[Callable[[], None]] = []  # what stops the work in progress outside Spark
        self.lock = threading.Lock()  # an interrupt is called only while its work is in progress

    @contextlib.contextmanager
    def statement(self, sql: str) -> Iterator[None]:
        """Run a statement as cancellable; any error it ends with after a cancel is QueryCancelled."""
        self.requested.clear()
        self.tag = f"recsql-{uuid.uuid4().hex[:12]}"
        running = _running.set(self)
        try:
            yield
        except KeyboardInterrupt:  # Ctrl-C on the thread running it (a Jupyter kernel's interrupt)
            self.cancel()
            raise QueryCancelled("query cancelled") from None
        except Exception:  # whatever the interrupted work raised: Spark's, DuckDB's
            if self.requested.is_set():
                raise QueryCancelled("query cancelled") from None
            raise
        finally:
            _running.reset(running)
            with self.lock:
                untag, self.untag, self.spark, self.tag = self.untag, None, None, None
            if untag is not None:
                untag()

    def attach(self, spark: SparkSession) -> None:
        """Spark is used by the statement running on this thread: the jobs it starts from here on carry
        the statement's tag, for `cancel` to stop them (on Spark Connect: the server's operations, tagged
        by the session). A statement that never uses Spark never touches it."""
        if _running.get() is not self or self.spark is not None or self.tag is None:
            return
        tag = self.tag
        if is_connect(spark):
            spark.addTag(tag)
            untag = functools.partial(spark.removeTag, tag)
        else:
            context = spark.sparkContext
            interrupting = context.getLocalProperty(INTERRUPT_ON_CANCEL)
            context.addJobTag(tag)
            context.setInterruptOnCancel(True)  # a cancelled task's thread is interrupted, not left to finish

            def untag() -> None:
                context.removeJobTag(tag)
                context.setLocalProperty(INTERRUPT_ON_CANCEL, interrupting)  # type: ignore[arg-type]

        with self.lock:
            self.spark, self.untag = spark, untag

    def cancel(self) -> None:
        """Stop the running statement, if any (safe to call from any thread, and more than once)."""
        self.requested.set()
        with self.lock:
            for interrupt in self.interrupts:
                interrupt()
            spark, tag = self.spark, self.tag
        if spark is None or tag is None:
            return
        if is_connect(spark):
            spark.interruptTag(tag)
        else:
            spark.sparkContext.cancelJobsWithTag(tag)

    def check(self) -> None:
        """Raise QueryCancelled if the running statement was cancelled."""
        if self.requested.is_set():
            raise QueryCancelled("query cancelled")


_running: ContextVar[Cancellation | None] = ContextVar("recsql_running_statement", default=None)


@contextlib.contextmanager
def interruptible(interrupt: Callable[[], None]) -> Iterator[None]:
    """While the block runs, cancelling the statement running on this thread also calls `interrupt`: for
    work Spark's job tags do not reach, such as an in-process DuckDB query."""
    cancellation = _running.get()
    if cancellation is None:
        yield
        return
    with cancellation.lock:
        cancellation.check()
        cancellation.interrupts.append(interrupt)
    try:
        yield
    finally:
        with cancellation.lock:
            cancellation.interrupts.remove(interrupt)
