"""The dead-letter counts `groupcoord groups` shows for a share group (KIP-1191).

Plain Kafka calls, so the numbers mean the same against any broker: the group's DLQ topic
is its `errors.deadletterqueue.topic.name` (DescribeConfigs on the GROUP resource); its
dead letters are the records of that topic whose `__dlq.errors.group` header names the
group (Metadata, ListOffsets, then Fetch from the log start to the high watermark), counted
per source topic-partition from the `__dlq.errors.topic` / `.partition` headers. Records
still on their way (ARCHIVING) are counted from the state batches (`share_group_ops`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from groupcoord.cli import group_ops as ops
from groupcoord.cli.wire_client import KafkaError, WireClient, check
from groupcoord.coordinator.share.configs import DLQ_TOPIC_NAME
from groupcoord.coordinator.share.dlq import origin
from groupcoord.logformat.batch import decode_records, iter_batches
from groupcoord.wire.generated import describe_configs as dc
from groupcoord.wire.generated import fetch as fe

GROUP_RESOURCE = 32
FETCH_BYTES = 1 << 20


@dataclass
class DeadLetters:
    """A share group's DLQ topic and how many of its records are the group's."""

    topic: str
    by_partition: dict[tuple[str, int], int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.by_partition.values())


def dlq_topic(client: WireClient, group: str) -> str | None:
    """The group's DLQ topic name, None when it has none."""
    request = dc.DescribeConfigsRequest(resources=[dc.DescribeConfigsResource(
        resource_type=GROUP_RESOURCE, resource_name=group, configuration_keys=[DLQ_TOPIC_NAME])],
        include_synonyms=False, include_documentation=False)
    response, _ = client.request(request, 4)
    result = response.results[0]
    check(result.error_code, f"DescribeConfigs {group}")
    for entry in result.configs:
        if entry.name == DLQ_TOPIC_NAME and entry.value and entry.value.strip():
            return str(entry.value.strip())
    return None


def dead_letters(client: WireClient, group: str) -> DeadLetters | None:
    """The group's dead letters per source partition; None without a DLQ topic. A DLQ
    topic that does not exist (yet) holds none."""
    topic = dlq_topic(client, group)
    if topic is None:
        return None
    found = DeadLetters(topic)
    try:
        partitions = ops.topic_partitions(client, [topic])
    except KafkaError:
        return found
    starts = ops.list_offsets(client, partitions, ops.EARLIEST)
    ends = ops.list_offsets(client, partitions, ops.LATEST)
    for tp in partitions:
        for named in _origins(client, tp, starts[tp], ends[tp]):
            if named[0] == group:
                key = (named[1], named[2])
                found.by_partition[key] = found.by_partition.get(key, 0) + 1
    return found


def _origins(client: WireClient, tp: tuple[str, int], start: int, end: int
             ) -> list[tuple[str, str, int, int]]:
    """(group, topic, partition, offset) named by each DLQ record in [start, end)."""
    out = []
    offset = start
    while offset < end:
        request = fe.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0,
                                  max_bytes=FETCH_BYTES, session_epoch=-1, topics=[
            fe.FetchTopic(topic=tp[0], partitions=[fe.FetchPartition(
                partition=tp[1], fetch_offset=offset, partition_max_bytes=FETCH_BYTES)])])
        response, _ = client.request(request, 12)
        part = response.responses[0].partitions[0]
        check(part.error_code, f"Fetch {tp[0]}-{tp[1]}")
        moved = offset
        for header, batch in iter_batches(memoryview(part.records or b"")):
            if not header.is_control:
                for rec in decode_records(batch):
                    if header.base_offset + rec.offset_delta >= offset:
                        named = origin(rec.headers)
                        if named is not None:
                            out.append(named)
            moved = max(moved, header.last_offset + 1)
        if moved == offset:
            break
        offset = moved
    return out
