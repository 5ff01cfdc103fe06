"""The connection opened on a background thread, so the shell's prompt appears at once (opening it
imports Spark's Python modules); the connection itself starts Spark in the background, and a query
that runs in this process does not wait for it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from recsql import Connection


class Startup:
    def __init__(self, open_connection: Callable[[], Connection]):
        self._future: Future[Connection] = Future()
        # a daemon thread: quitting the shell while Spark is still starting must not wait for it
        self._thread = threading.Thread(target=self._open, args=(open_connection,), name="recsql-startup", daemon=True)
        self._lock = threading.Lock()
        self._started = False

    def start(self) -> None:
        """Start opening the connection (once; waiting for it starts it too)."""
        with self._lock:
            if not self._started:
                self._started = True
                self._thread.start()

    @classmethod
    def opened(cls, connection: Connection) -> Startup:
        """An already open connection (for running statements on a connection made elsewhere)."""
        return cls(lambda: connection)

    def _open(self, open_connection: Callable[[], Connection]) -> None:
        try:
            self._future.set_result(open_connection())
        except BaseException as error:
            self._future.set_exception(error)

    @property
    def ready(self) -> bool:
        """Whether the connection is open (False while starting and after a failure)."""
        return self._future.done() and self._future.exception() is None

    def on_failure(self, report: Callable[[BaseException], None]) -> None:
        """Call `report` with the reason when the connection cannot be opened, or its Spark cannot start
        (at once if known)."""

        def done(future: Future[Connection]) -> None:
            error = future.exception()
            if error is not None:
                report(error)
            else:
                future.result().session.lazy_spark.on_failure(report)

        self._future.add_done_callback(done)

    def wait(self, err: TextIO) -> Connection:
        """The connection, once open (a spinner on a terminal meanwhile); raises why it could not be."""
        self.start()
        if not self._future.done() and err.isatty():
            from rich.console import Console

            with Console(file=err).status("Opening…"):
                return self._future.result()
        return self._future.result()

    def close(self) -> None:
        """Close the connection if it was opened."""
        if self.ready:
            self._future.result().close()
