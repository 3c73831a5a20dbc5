"""A damaged batch in the middle of a closed segment after a clean stop, read by real clients.

The scenario of `helpers.damaged_segment`, on groupcoord and on Apache Kafka 4.4: 150
ten-record batches, a clean stop, 64 bytes of garbage over the head of the batch at offset
450 of the first (closed) segment, a restart (no recovery scan runs after a clean stop, on
either broker), then reads with confluent-kafka (librdkafka) and the Java 4.4 client:

- from offset 0 both clients receive every record of 0-449 and then stop at offset 450 with
  the corrupt-record error (librdkafka: error 2, CORRUPT_MESSAGE, "Fetch from broker 1
  failed at offset 450"; Java: a KafkaException with the consumer's position at 450), on both
  brokers. Nothing after the damage is delivered in its place.
- a fetch at 500 returns every record from 500 to the end on both brokers;
- a fetch at 460, the batch right after the damaged one: groupcoord returns every record
  from 460 on; Kafka answers CORRUPT_MESSAGE, since its offset index sends the read through
  the damaged bytes (docs/conformance.md).
- groupcoord logs the damage once at ERROR, with its byte positions and offsets.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from helpers import damaged_segment as scenario
from helpers import java
from helpers.reference_broker import ReferenceBroker

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

TOPIC = "damaged"
CORRUPT_MESSAGE = 2
DAMAGED = scenario.DAMAGED_OFFSET
END = scenario.BATCHES * scenario.PER_BATCH
# What the Java consumer says when it stops at the damaged batch. On Kafka its first fetch
# carries the damaged bytes and the client's own batch parser rejects them; groupcoord stops
# the read before them and answers the next fetch with CORRUPT_MESSAGE.
JAVA_KAFKA = ("Received exception when fetching the next record from damaged-0. If needed, "
              "please seek past the record to continue consumption.")
JAVA_GROUPCOORD = f"Encountered corrupt message when fetching offset {DAMAGED} for " \
                  "topic-partition damaged-0"


def prepare(bootstrap: str, stop: Callable[[], None], restart: Callable[[], str],
            partition_dir: Path) -> tuple[str, int]:
    """Produce, stop cleanly, damage, restart; the new bootstrap and the first segment's end."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1, config=scenario.TOPIC_CONFIG)])[TOPIC].result()
    scenario.produce(bootstrap, TOPIC)
    stop()
    scenario.damage(partition_dir)
    return restart(), scenario.segment_end(partition_dir)


def java_read(bootstrap: str, offset: int) -> tuple[list[int], list[dict[str, Any]]]:
    run = java.run_harness("consume-from", bootstrap, "--topic", TOPIC, "--partition", "0",
                           "--offset", str(offset), "--count", str(END - offset),
                           "--timeout-ms", "30000", expect=(0, 2))
    return [e["offset"] for e in run.of("record")], run.of("error")


def check_common(bootstrap: str, segment_end: int, java_message: str) -> None:
    assert DAMAGED + 2 * scenario.PER_BATCH < segment_end < END
    got = scenario.consume_confluent(bootstrap, TOPIC, 0, END)
    assert got.offsets == list(range(DAMAGED)) and got.values_ok
    assert got.error_code == CORRUPT_MESSAGE, got.error_text
    assert f"failed at offset {DAMAGED}" in got.error_text

    offsets, errors = java_read(bootstrap, 0)
    assert offsets == list(range(DAMAGED))
    [error] = errors
    assert error["class"] == "org.apache.kafka.common.KafkaException"
    assert error["position"] == DAMAGED and error["message"] == java_message

    later = scenario.consume_confluent(bootstrap, TOPIC, 500, END - 500)
    assert later.offsets == list(range(500, END)) and later.error_code is None
    assert java_read(bootstrap, 500) == (list(range(500, END)), [])


def test_clients_stop_at_a_damaged_batch(broker: Any, java_harness: Path) -> None:
    def restart() -> str:
        broker.start()
        return str(broker.bootstrap)

    bootstrap, segment_end = prepare(broker.bootstrap, broker.stop, restart,
                                     broker.data_dir / f"{TOPIC}-0")
    check_common(bootstrap, segment_end, JAVA_GROUPCOORD)

    after = DAMAGED + scenario.PER_BATCH
    got = scenario.consume_confluent(bootstrap, TOPIC, after, END - after)
    assert got.offsets == list(range(after, END)) and got.error_code is None and got.values_ok
    assert java_read(bootstrap, after) == (list(range(after, END)), [])
    inside = scenario.consume_confluent(bootstrap, TOPIC, DAMAGED + 5, 1)
    assert inside.offsets == [] and inside.error_code == CORRUPT_MESSAGE

    lines = [line for line in broker.log_text(current_run=True).splitlines()
             if "no valid batch at byte" in line]
    assert len(lines) == 1, lines
    assert f"offsets {DAMAGED}-{after - 1}" in lines[0] and "ERROR" in lines[0]


@pytest.mark.reference
def test_clients_stop_at_a_damaged_batch_on_kafka(kafka: ReferenceBroker,
                                                   java_harness: Path) -> None:
    """The same damage on Apache Kafka 4.4: the same stop for both clients."""
    def restart() -> str:
        kafka.restart()
        return kafka.bootstrap

    bootstrap, segment_end = prepare(kafka.bootstrap, kafka.stop, restart,
                                     kafka.data_dir / f"{TOPIC}-0")
    check_common(bootstrap, segment_end, JAVA_KAFKA)

    after = DAMAGED + scenario.PER_BATCH
    got = scenario.consume_confluent(bootstrap, TOPIC, after, END - after)
    assert got.offsets == [] and got.error_code == CORRUPT_MESSAGE
