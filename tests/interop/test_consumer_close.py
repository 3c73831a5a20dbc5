"""The Java 4.4 consumer's close() is not held by the broker, on groupcoord as on Kafka 4.4.

A consumer that has records buffered has no fetch in flight when it closes; `close()` then
sends its fetch-session close (epoch -1, no partitions) and waits for the answer. Kafka
answers such a fetch at once; a broker that holds it until `fetch.max.wait.ms` (500 ms by
default) makes every close that much slower. The client reads 10 of 100 records
(`max.poll.records=10`) and reports how long `close()` took.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from helpers import java
from helpers.reference_broker import ReferenceBroker

pytestmark = [pytest.mark.interop, pytest.mark.timeout(240)]

TOPIC = "closing"
# Well under the 500 ms a held session-close fetch would add, well over a prompt close. A
# broker that holds the fetch slows every close, so the faster of two closes is judged: one
# close of a JVM slowed by a busy machine (473 ms once, on Kafka) says nothing of the broker.
PROMPT_CLOSE_MS = 400


def close_times(bootstrap: str) -> list[int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result()
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(100):
        producer.produce(TOPIC, b"%d" % i, partition=0)
    assert producer.flush(30) == 0
    times = []
    for _ in range(2):
        run = java.run_harness("consume-from", bootstrap, "--topic", TOPIC, "--partition", "0",
                               "--offset", "0", "--count", "10",
                               "--prop", "max.poll.records=10")
        assert [e["offset"] for e in run.of("record")] == list(range(10))
        [closed] = run.of("closed")
        times.append(int(closed["ms"]))
    return times


def test_consumer_close_is_prompt(broker: Any, java_harness: Path) -> None:
    times = close_times(broker.bootstrap)
    assert min(times) < PROMPT_CLOSE_MS, times


@pytest.mark.reference
def test_consumer_close_is_prompt_on_kafka(kafka: ReferenceBroker, java_harness: Path) -> None:
    times = close_times(kafka.bootstrap)
    assert min(times) < PROMPT_CLOSE_MS, times
