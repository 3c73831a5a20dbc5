"""Side-by-side benchmarks: groupcoord against Apache Kafka 4.4 and Tansu in the same run.

Entry point: ``python -m bench.run_all`` (``make bench``). Each sub-benchmark lives in its
own module exposing ``NAME``, ``TITLE`` and ``run(ctx) -> Section``; ``bench.run_all``
holds the registry, so a new benchmark is one module plus one line there.
"""
