"""Spark and Py4J failures as recsql exceptions: the user sees what went wrong, not a JVM stack trace."""

from __future__ import annotations

import contextlib
import re
from typing import Iterator

from recsql.errors import DataError, Error, OperationalError, ProgrammingError

_PYTHON_WORKER = "An exception was thrown from the Python worker"
_PYTHON_ERROR = re.compile(r"^(\w+(?:\.\w+)*(?:Error|Exception)): (.+)$", re.MULTILINE)
_CONDITION = re.compile(r"^\[([A-Z_.]+)\]\s*")
_SQL_ERRORS = ("AnalysisException", "ParseException", "IllegalArgumentException")
# Spark's words for data of a local checkpoint that went with the executor holding it
_LOST_CHECKPOINT = re.compile(r"Checkpoint block \S+ not found|executor that originally checkpointed")
_DATA_ERRORS = ("NumberFormatException", "ArithmeticException", "DateTimeException", "CAST_INVALID_INPUT",
                "DIVIDE_BY_ZERO", "ARITHMETIC_OVERFLOW")


@contextlib.contextmanager
def spark_errors(context: str = "") -> Iterator[None]:
    try:
        yield
    except Error:
        raise
    except Exception as error:  # noqa: BLE001 - every Spark/Py4J failure is translated here
        if type(error).__module__.startswith(("pyspark", "py4j")) or "Java" in type(error).__name__:
            raise translate(error, context) from None
        raise


def translate(error: Exception, context: str) -> Error:
    name = type(error).__name__
    text = first_line(getattr(error, "desc", None) or getattr(error, "getMessage", lambda: None)() or str(error))
    if text.startswith(_PYTHON_WORKER):  # what the worker's traceback ends with, not that it has one
        failures = _PYTHON_ERROR.findall(str(error))
        if failures:
            text = f"{_PYTHON_WORKER}: {failures[0][0]}: {failures[0][1].strip()}"
    if "cancelled" in text.lower() or "canceled" in text.lower():
        return OperationalError("query cancelled")
    prefix = f"{context}: " if context else ""
    head = f"{name} {str(error)[:500]}"
    if any(marker in head for marker in _DATA_ERRORS):
        return DataError(prefix + text)
    if any(marker in head for marker in _SQL_ERRORS):
        return ProgrammingError(prefix + text)
    return OperationalError(f"{prefix}Spark failed: {text}")


def first_line(text: str) -> str:
    """The message without the JVM stack trace, Spark's error-class tag or its SQL context block."""
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    message = lines[0] if lines else "unknown error"
    message = re.sub(r"^\s*(py4j\.protocol\.)?Py4JJavaError: An error occurred while calling [^\n]*\.\s*", "", message)
    message = re.sub(r"^[\w.$]+(Exception|Error):\s*", "", message)
    return _CONDITION.sub("", message).strip()


def lost_checkpoint(error: BaseException) -> bool:
    """Whether Spark failed because an executor that held a local checkpoint was lost: computing the
    same again from the start gives the answer."""
    return _LOST_CHECKPOINT.search(str(error)) is not None
