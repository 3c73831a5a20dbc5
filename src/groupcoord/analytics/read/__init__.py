"""Reading Kafka log dirs: segments and batch headers, record layouts and their decoder, the
``kafkalog`` Spark source (batch and streaming) and its Arrow tables, and ``dump``.

The bottom layer of analytics: it imports no other analytics package.
"""
