"""Group analytics over Kafka log dirs: the ``groupcoord analyze`` pipeline.

One package per layer, each importing only those below it (a test enforces it): ``read``
(segments, record layouts and decoders, the ``kafkalog`` Spark source), ``silver`` (decoded
tables), ``gold`` (lag, Burrow, rebalances, roll-ups), ``report`` (health, words, pages,
plots), ``fixture`` (synthetic log dirs, over ``read``) and ``driver`` (the CLI, the session
and the ``run`` pipeline). Decoding is plain Python; Spark needs the ``[spark]`` extra. Only
``groupcoord.logformat`` and ``groupcoord.wire`` are imported from the rest of groupcoord
(a test enforces it too): the pipeline reads any Kafka-layout log dir, including a real Kafka
broker's.
"""
