"""What an embedded Spark starts with, and Spark's failures as messages a user can read."""

import zipfile
from pathlib import Path

from recsql.spark import defaults as spark_defaults
from recsql.spark import shipping
from recsql.spark.errors import first_line
from recsql.spark.start import embedded_settings

CALL_FAILED = """An error occurred while calling o83.getResult.
: org.apache.spark.SparkException: Exception thrown in awaitResult:
\tat org.apache.spark.util.SparkThreadUtils$.awaitResult(SparkThreadUtils.scala:56)
Caused by: org.apache.spark.SparkException: Job aborted due to stage failure: Lost task 0.0 in stage 1.0: \
TaskResultLost (result lost from block manager)
Driver stacktrace:
\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2935)"""


def test_a_failed_java_call_says_its_deepest_cause():
    assert first_line(CALL_FAILED) == (
        "Job aborted due to stage failure: Lost task 0.0 in stage 1.0: TaskResultLost (result lost from block manager)"
    )
    assert (
        first_line(
            "An error occurred while calling o1.sql.\n: org.apache.spark.sql.AnalysisException: "
            "[TABLE_OR_VIEW_NOT_FOUND] no table t\n\tat x"
        )
        == "no table t"
    )


def test_an_embedded_driver_gets_a_share_of_the_machine_unless_told(monkeypatch):
    monkeypatch.delenv("SPARK_DRIVER_MEMORY", raising=False)
    monkeypatch.setattr(spark_defaults, "defaults_file", dict)  # no spark-defaults.conf
    memory = embedded_settings({})[spark_defaults.DRIVER_MEMORY]
    assert memory.endswith("m") and int(memory[:-1]) >= 1024
    assert embedded_settings({"spark.driver.memory": "3g"})[spark_defaults.DRIVER_MEMORY] == "3g"
    monkeypatch.setenv("SPARK_DRIVER_MEMORY", "2g")
    assert spark_defaults.DRIVER_MEMORY not in embedded_settings({})


def test_the_code_shipped_to_executors_holds_every_module_of_the_packages():
    """Executors without recsql import the shipped zip: it must hold all of recsql and translator, subpackages
    included, under the names they are imported by."""
    root = Path(__file__).resolve().parent.parent
    expected = {
        path.relative_to(root).as_posix()
        for package in ("recsql", "translator")
        for path in (root / package).rglob("*.py")
    }
    with zipfile.ZipFile(shipping.code_archive()) as archive:
        assert set(archive.namelist()) == expected
