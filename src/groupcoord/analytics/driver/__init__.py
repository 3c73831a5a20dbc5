"""The driver program: the ``groupcoord analyze`` command line, the SparkSession, the ``run``
pipeline (ingest, gold, outputs; batch or incremental) and the commands that read a log dir
without Spark (``why``, ``health``, ``bench``).

The top layer: it may import every other analytics package.
"""
