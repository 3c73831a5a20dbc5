"""Building the SparkSession for ``groupcoord analyze``.

A configured master always wins: under ``spark-submit`` or ``pyspark --master`` (or with
``spark.master`` in the defaults file) the session keeps it, and ``local[*]`` is only the
fallback when nothing is configured; likewise the Python workers default to the driver's
interpreter only when no ``PYSPARK_PYTHON`` / ``spark.pyspark.python`` is set. The web UI and the console progress bar are off (the
bar writes ``[Stage ...]`` without newlines to stderr and garbles captured output), and the
``kafkalog`` data source is registered in every session.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def build_session(
    master: str | None = None, app_name: str = "groupcoord-analyze",
    shuffle_partitions: int | None = None, extra: dict[str, str] | None = None,
) -> Any:
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    from groupcoord.analytics.read.spark_source import register

    conf = SparkConf()
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    elif not conf.contains("spark.master"):
        builder = builder.master("local[*]")
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
    }
    if not os.environ.get("PYSPARK_PYTHON") and not conf.contains("spark.pyspark.python"):
        # Python workers must run the interpreter that has groupcoord installed, not
        # whatever "python3" is first on the PATH.
        settings["spark.pyspark.python"] = sys.executable
        os.environ["PYSPARK_PYTHON"] = sys.executable  # the data-source planner workers
    if shuffle_partitions is not None:
        settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    settings.update(extra or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
