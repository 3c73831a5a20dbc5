"""The share-group dead-letter queue's facts (KIP-1191), as pure code.

Mirrors Kafka 4.4's `ShareGroupDLQManager` (the two causes and their messages) and
`ShareGroupDLQStateManager.ProduceRequestHandler` (the context headers, in the order it
writes them; server/src/main/java/org/apache/kafka/server/share/dlq/). A DLQ record carries
these headers as UTF-8 text; with `errors.deadletterqueue.copy.record.enable` it also carries
the original record's key and value (never the original headers), otherwise neither.

Why a record goes to the DLQ is soft state: Kafka keeps the cause in memory between the
ARCHIVING write and the DLQ write, and after a restart infers it from the delivery count
(`SharePartition.maybeResumeDlqArchiving`), as `resumed_cause` does.
"""

from __future__ import annotations

from enum import Enum

HEADER_TOPIC = "__dlq.errors.topic"
HEADER_PARTITION = "__dlq.errors.partition"
HEADER_OFFSET = "__dlq.errors.offset"
HEADER_GROUP = "__dlq.errors.group"
HEADER_DELIVERY_COUNT = "__dlq.errors.delivery.count"
HEADER_MESSAGE = "__dlq.errors.message"


class DlqCause(Enum):
    """`ShareGroupDLQManager.CLIENT_REJECT` / `DELIVERY_COUNT_EXCEEDED`, by message."""

    CLIENT_REJECT = "Offset rejected by client."
    DELIVERY_COUNT_EXCEEDED = "Offset delivery count exceeded the threshold."


def resumed_cause(delivery_count: int, delivery_count_limit: int) -> DlqCause:
    """The cause of a record found ARCHIVING at load, which Kafka does not persist."""
    if delivery_count >= delivery_count_limit:
        return DlqCause.DELIVERY_COUNT_EXCEEDED
    return DlqCause.CLIENT_REJECT


def context_headers(topic: str, partition: int, offset: int, group_id: str,
                    delivery_count: int, cause: DlqCause) -> list[tuple[str, bytes]]:
    """The headers of one DLQ record (`ProduceRequestHandler.headers`)."""
    return [
        (HEADER_TOPIC, topic.encode()),
        (HEADER_PARTITION, str(partition).encode()),
        (HEADER_OFFSET, str(offset).encode()),
        (HEADER_GROUP, group_id.encode()),
        (HEADER_DELIVERY_COUNT, str(delivery_count).encode()),
        (HEADER_MESSAGE, cause.value.encode()),
    ]


def origin(headers: object) -> tuple[str, str, int, int] | None:
    """(group, topic, partition, offset) a DLQ record names in its headers, None when it
    is not a DLQ record of this shape."""
    found: dict[str, bytes] = {}
    for name, value in headers:  # type: ignore[attr-defined]
        if value is not None and name in (HEADER_GROUP, HEADER_TOPIC, HEADER_PARTITION,
                                          HEADER_OFFSET):
            found[name] = bytes(value)
    if len(found) != 4:
        return None
    try:
        return (found[HEADER_GROUP].decode(), found[HEADER_TOPIC].decode(),
                int(found[HEADER_PARTITION]), int(found[HEADER_OFFSET]))
    except ValueError:
        return None


def dlq_partition(source_partition: int, dlq_partitions: int) -> int:
    """The DLQ partition a source partition's records go to (`populateDLQTopicData`)."""
    return source_partition % dlq_partitions
