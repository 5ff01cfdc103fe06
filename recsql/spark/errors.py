"""Spark and Py4J failures as recsql exceptions: the user sees what went wrong, not a JVM stack trace."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

from sqlglot import exp

from recsql.errors import DataError, Error, OperationalError, ProgrammingError
from translator.errors import position_of

_JAVA_CALL = re.compile(r"^\s*(py4j\.protocol\.)?(Py4JJavaError: )?An error occurred while calling \S+\s*$")
_PYTHON_WORKER = "An exception was thrown from the Python worker"
_PYTHON_ERROR = re.compile(r"^(\w+(?:\.\w+)*(?:Error|Exception)): (.+)$", re.MULTILINE)
_CONDITION = re.compile(r"^\[([A-Z_.]+)\]\s*")
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+\.?$")  # the SQL standard's code Spark ends a message with
_UNKNOWN_FUNCTION = re.compile(r"Cannot resolve (?:routine|function) (?:`[^`]+`\.)*`([^`]+)`")
# a session stopped under a connection: a classic one's context, or a Spark Connect session
_STOPPED = re.compile(r"stopped SparkContext|No active Spark session found|NO_ACTIVE_SESSION")
_SQL_ERRORS = ("AnalysisException", "ParseException", "IllegalArgumentException")
# Spark's words for data of a local checkpoint that went with the executor holding it
_LOST_CHECKPOINT = re.compile(r"Checkpoint block \S+ not found|executor that originally checkpointed")
_DATA_ERRORS = (
    "NumberFormatException",
    "ArithmeticException",
    "DateTimeException",
    "CAST_INVALID_INPUT",
    "DIVIDE_BY_ZERO",
    "ARITHMETIC_OVERFLOW",
    "INVALID_ARRAY_INDEX",
    "INVALID_INDEX_OF_ZERO",
    "USER_RAISED_EXCEPTION",
)  # raise_error: a check of the rows, such as a scalar subquery's one row


@contextlib.contextmanager
def spark_errors(context: str = "", statement: exp.Expression | None = None) -> Iterator[None]:
    """Spark's failures as recsql errors; `statement`, the one running, places what they name in its text."""
    try:
        yield
    except Error:
        raise
    except Exception as error:
        if type(error).__module__.startswith(("pyspark", "py4j")) or "Java" in type(error).__name__:
            raise translate(error, context, statement) from None
        raise


def translate(error: Exception, context: str, statement: exp.Expression | None = None) -> Error:
    name = type(error).__name__
    text = first_line(getattr(error, "desc", None) or getattr(error, "getMessage", lambda: None)() or str(error))
    if text.startswith(_PYTHON_WORKER):  # what the worker's traceback ends with, not that it has one
        failures = _PYTHON_ERROR.findall(str(error))
        if failures:
            text = f"{_PYTHON_WORKER}: {failures[0][0]}: {failures[0][1].strip()}"
    if "cancelled" in text.lower() or "canceled" in text.lower():
        return OperationalError("query cancelled")
    prefix = f"{context}: " if context else ""
    unknown = _UNKNOWN_FUNCTION.search(text)
    if unknown:
        return unknown_function(unknown.group(1), prefix, statement)
    head = f"{name} {str(error)[:500]}"
    if _STOPPED.search(head):
        return OperationalError(f"{prefix}the Spark session is stopped: connect again with a running one")
    if any(marker in head for marker in _DATA_ERRORS):
        return DataError(prefix + text)
    if any(marker in head for marker in _SQL_ERRORS):
        return ProgrammingError(prefix + text)
    return OperationalError(f"{prefix}Spark failed: {text}")


def unknown_function(name: str, prefix: str, statement: exp.Expression | None) -> ProgrammingError:
    """A function Spark does not know (recsql leaves the functions it does not know itself to Spark),
    named as the statement calls it and placed where it does."""
    calls = statement.find_all(exp.Anonymous) if statement is not None else ()
    call = next((call for call in calls if call.name.lower() == name.lower()), None)
    line, column = position_of(call)
    return ProgrammingError(f"{prefix}unknown function {call.name if call else name.lower()}", line, column)


def first_line(text: str) -> str:
    """The message without the JVM stack trace, Spark's error-class tag, its SQLSTATE or its SQL context block."""
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    if lines and _JAVA_CALL.match(lines[0]):  # what failed is under the call: its deepest cause, else the next line
        causes = [line.removeprefix("Caused by: ") for line in lines if line.startswith("Caused by: ")]
        lines = causes[-1:] or [line.lstrip(": ") for line in lines[1:2]]
    message = lines[0] if lines else "unknown error"
    message = re.sub(r"^[\w.$]+(Exception|Error):\s*", "", message)
    return _SQLSTATE.sub("", _CONDITION.sub("", message)).strip()


def lost_checkpoint(error: BaseException) -> bool:
    """Whether Spark failed because an executor that held a local checkpoint was lost: computing the
    same again from the start gives the answer."""
    return _LOST_CHECKPOINT.search(str(error)) is not None
