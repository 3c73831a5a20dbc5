"""Group analytics over Kafka log dirs: the ``groupcoord analyze`` pipeline.

The decoding layer (``segments``, ``codec``, ``reader``, ``dump``, ``burrow``, ``fixture``)
is plain Python; the Spark layer (``spark_source``, ``session``, ``tables``, ``outputs``) needs
the ``[spark]`` extra. Only ``groupcoord.logformat`` and ``groupcoord.wire`` are imported from
the rest of groupcoord (a test enforces it): the pipeline reads any Kafka-layout log dir,
including a real Kafka broker's.
"""
