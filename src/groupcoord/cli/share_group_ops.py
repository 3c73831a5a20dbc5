"""What `groupcoord groups` asks the broker about share groups (KIP-932), as plain data.

Mirrors the admin calls behind Kafka's `kafka-share-groups.sh` (ShareGroupCommand):
ShareGroupDescribe for state and members, DescribeShareGroupOffsets v1 for each
share-partition's start offset and lag, AlterShareGroupOffsets and DeleteShareGroupOffsets
for `--reset-offsets` and `--delete-offsets`. In-flight counts come from ReadShareGroupState,
which Kafka keeps between brokers; groupcoord serves it so that a tool can see the state
batches (see docs/share-groups.md, "The CLI").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from groupcoord.cli import group_ops as ops
from groupcoord.cli.wire_client import KafkaError, WireClient, check
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated import alter_share_group_offsets as asgo
from groupcoord.wire.generated import delete_share_group_offsets as dsgo
from groupcoord.wire.generated import describe_share_group_offsets as dso
from groupcoord.wire.generated import read_share_group_state as rsgs
from groupcoord.wire.generated import share_group_describe as sgd

TopicPartition = tuple[str, int]

# Kafka's `RecordState` ids as the state batches carry them.
ACQUIRED = 1
ARCHIVING = 3  # KIP-1191: on its way to the group's dead-letter topic
DONE_STATES = frozenset({2, 4})  # ACKNOWLEDGED, ARCHIVED


@dataclass(frozen=True, slots=True)
class InFlight:
    """A share-partition's in-flight records, counted from its state batches."""

    in_flight: int
    acquired: int
    archiving: int = 0


def describe_share_group(client: WireClient, group: str) -> dict[str, Any]:
    """State and members of a share group (ShareGroupDescribe v1)."""
    request = sgd.ShareGroupDescribeRequest(group_ids=[group])
    response, _ = client.request(request, 1)
    described = response.groups[0]
    check(described.error_code, f"ShareGroupDescribe {group}")
    return {
        **ops.group_summary(described, "share"),
        "members": [_member(m) for m in described.members],
    }


def _member(member: Any) -> dict[str, Any]:
    assignment = sorted((tp.topic_name, p) for tp in member.assignment.topic_partitions
                        for p in tp.partitions)
    return {
        "member_id": member.member_id,
        "client_id": member.client_id,
        "host": member.client_host,
        "rack_id": member.rack_id,
        "member_epoch": member.member_epoch,
        "subscriptions": sorted(member.subscribed_topic_names),
        "assignment": assignment,
    }


def share_offsets(client: WireClient, group: str) -> list[dict[str, Any]]:
    """Start offset and lag of every share-partition the group has state for
    (DescribeShareGroupOffsets, null topics = all). None where the broker has none."""
    request = dso.DescribeShareGroupOffsetsRequest(groups=[
        dso.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)])
    response, _ = client.request(request, 1)
    described = response.groups[0]
    check(described.error_code, f"DescribeShareGroupOffsets {group}")
    rows = []
    for topic in described.topics:
        for p in topic.partitions:
            check(p.error_code, f"DescribeShareGroupOffsets {topic.topic_name}-{p.partition_index}")
            started = p.start_offset >= 0
            rows.append({
                "topic": topic.topic_name, "topic_id": bytes(topic.topic_id),
                "partition": p.partition_index,
                "start_offset": p.start_offset if started else None,
                # v0 has no lag, and an uninitialized share-partition none either (-1).
                "lag": p.lag if started and p.lag >= 0 else None,
            })
    return sorted(rows, key=lambda r: (r["topic"], r["partition"]))


def in_flight_counts(client: WireClient, group: str, partitions: Sequence[tuple[bytes, int]]
                     ) -> dict[tuple[bytes, int], InFlight]:
    """In-flight counts per (topic id, partition) from ReadShareGroupState; empty when the
    broker does not serve it, so that the describe still shows offsets and lag."""
    by_topic: dict[bytes, list[int]] = {}
    for topic_id, partition in partitions:
        by_topic.setdefault(topic_id, []).append(partition)
    request = rsgs.ReadShareGroupStateRequest(group_id=group, topics=[
        rsgs.ReadStateData(topic_id=t, partitions=[
            rsgs.PartitionData(partition=p, leader_epoch=-1) for p in ps])
        for t, ps in by_topic.items()])
    try:
        response, _ = client.request(request, 0)
    except KafkaError as exc:
        if exc.code != ErrorCode.UNSUPPORTED_VERSION:
            raise
        return {}
    out: dict[tuple[bytes, int], InFlight] = {}
    for result in response.results:
        for p in result.partitions:
            if p.error_code == 0 and p.start_offset >= 0:
                out[(bytes(result.topic_id), p.partition)] = count_in_flight(
                    p.start_offset, p.state_batches)
    return out


def count_in_flight(start_offset: int, batches: Sequence[Any]) -> InFlight:
    """Records from the start offset to the last offset the state batches cover that are
    not ACKNOWLEDGED or ARCHIVED; `acquired` is how many of them are ACQUIRED, `archiving`
    how many are ARCHIVING."""
    end = max((b.last_offset for b in batches), default=start_offset - 1)
    done = acquired = archiving = 0
    for batch in batches:
        first = max(batch.first_offset, start_offset)
        if batch.last_offset < first:
            continue  # wholly below the start offset: already done
        size = batch.last_offset - first + 1
        if batch.delivery_state in DONE_STATES:
            done += size
        elif batch.delivery_state == ACQUIRED:
            acquired += size
        elif batch.delivery_state == ARCHIVING:
            archiving += size
    return InFlight(max(0, end - start_offset + 1 - done), acquired, archiving)


def offset_rows(client: WireClient, group: dict[str, Any],
                dead: dict[tuple[str, int], int] | None = None) -> list[dict[str, Any]]:
    """One row per share-partition: start offset, lag, in-flight, acquired and ARCHIVING
    counts, and with `dead` (dead letters per partition, `share_dlq_ops`) the DLQ count."""
    rows = share_offsets(client, group["group"])
    started = [(r["topic_id"], r["partition"]) for r in rows if r["start_offset"] is not None]
    counts = in_flight_counts(client, group["group"], started) if started else {}
    out = []
    for row in rows:
        count = counts.get((row["topic_id"], row["partition"]))
        entry = {
            "group": group["group"], "topic": row["topic"], "partition": row["partition"],
            "start_offset": row["start_offset"], "lag": row["lag"],
            "in_flight": count.in_flight if count else None,
            "acquired": count.acquired if count else None,
            "archiving": count.archiving if count else None,
        }
        if dead is not None:
            entry["dead_letters"] = dead.get((row["topic"], row["partition"]), 0)
        out.append(entry)
    return out


def alter_share_offsets(client: WireClient, group: str,
                        offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
    """AlterShareGroupOffsets v0 (Kafka's `Admin.alterShareGroupOffsets`): the new start
    offsets; a top-level error raises, partition errors come back per partition."""
    by_topic: dict[str, list[asgo.AlterShareGroupOffsetsRequestPartition]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        by_topic.setdefault(topic, []).append(asgo.AlterShareGroupOffsetsRequestPartition(
            partition_index=partition, start_offset=offset))
    request = asgo.AlterShareGroupOffsetsRequest(group_id=group, topics=[
        asgo.AlterShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps)
        for t, ps in by_topic.items()])
    response, _ = client.request(request, 0)
    check(response.error_code, f"AlterShareGroupOffsets {group}")
    return {(t.topic_name, p.partition_index): p.error_code
            for t in response.responses for p in t.partitions}


def delete_share_offsets(client: WireClient, group: str, topics: list[str]
                         ) -> dict[str, tuple[int, str | None]]:
    """DeleteShareGroupOffsets v0 (`Admin.deleteShareGroupOffsets`): per topic the error
    code and message; a top-level error raises."""
    request = dsgo.DeleteShareGroupOffsetsRequest(group_id=group, topics=[
        dsgo.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics])
    response, _ = client.request(request, 0)
    check(response.error_code, f"DeleteShareGroupOffsets {group}")
    return {t.topic_name: (t.error_code, t.error_message) for t in response.responses}
