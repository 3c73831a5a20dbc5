"""What `groupcoord groups` asks the broker, as plain data (dicts and tuples).

Mirrors the admin calls behind Kafka's `kafka-consumer-groups.sh` (ConsumerGroupCommand):
ListGroups, ConsumerGroupDescribe (falling back to DescribeGroups for classic groups, as
the Java admin client does), DescribeGroups, OffsetFetch, ListOffsets, DeleteGroups, OffsetDelete and a
generation -1 OffsetCommit for resets, which Kafka accepts only while the group is empty.
Share groups have their own calls in `share_group_ops`.
"""

from __future__ import annotations

from typing import Any

from groupcoord.cli.wire_client import KafkaError, WireClient, check
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated import consumer_group_describe as cgd
from groupcoord.wire.generated import consumer_protocol_assignment as cpa
from groupcoord.wire.generated import delete_groups as dg
from groupcoord.wire.generated import describe_groups as dsg
from groupcoord.wire.generated import find_coordinator as fc
from groupcoord.wire.generated import list_groups as lg
from groupcoord.wire.generated import list_offsets as lo
from groupcoord.wire.generated import metadata as md
from groupcoord.wire.generated import offset_commit as oc
from groupcoord.wire.generated import offset_delete as od
from groupcoord.wire.generated import offset_fetch as of

TopicPartition = tuple[str, int]
LATEST, EARLIEST = -1, -2


def list_groups(client: WireClient, states: list[str], types: list[str]) -> list[dict[str, str]]:
    request = lg.ListGroupsRequest(states_filter=states, types_filter=types)
    response, _ = client.request(request, 5)
    check(response.error_code, "ListGroups")
    rows = [
        {"group": g.group_id, "type": g.group_type or "classic", "state": g.group_state,
         "protocol_type": g.protocol_type}
        for g in response.groups
    ]
    return sorted(rows, key=lambda r: r["group"])


def group_type(client: WireClient, group: str) -> str | None:
    """The group's type as ListGroups reports it (classic, consumer, share), or None when
    the group does not exist. DescribeGroups cannot tell: it answers GROUP_ID_NOT_FOUND
    for share groups, as Kafka does."""
    for row in list_groups(client, [], []):
        if row["group"] == group:
            return row["type"]
    return None


def coordinator(client: WireClient, group: str) -> str:
    """The group's coordinator as `kafka-consumer-groups.sh --describe --state` shows it:
    `HOST:PORT  (ID)` (FindCoordinator)."""
    response, _ = client.request(fc.FindCoordinatorRequest(key=group, key_type=0), 3)
    check(response.error_code, f"FindCoordinator {group}")
    return f"{response.host}:{response.port}  ({response.node_id})"


def describe_group(client: WireClient, group: str) -> dict[str, Any]:
    """A consumer group via ConsumerGroupDescribe, else a classic one via DescribeGroups."""
    consumer = describe_consumer_group(client, group)
    if consumer is not None:
        return consumer
    response, _ = client.request(dsg.DescribeGroupsRequest(groups=[group]), 5)
    described = response.groups[0]
    check(described.error_code, f"DescribeGroups {group}")
    members = [_member(m, described.protocol_type) for m in described.members]
    return {
        "group": described.group_id,
        "state": described.group_state,
        "protocol_type": described.protocol_type,
        "assignment_strategy": described.protocol_data,
        "members": members,
    }


def group_summary(described: Any, kind: str) -> dict[str, Any]:
    """What `describe` shows of every KIP-848 group kind (a DescribedGroup of
    ConsumerGroupDescribe, ShareGroupDescribe or StreamsGroupDescribe)."""
    return {
        "group": described.group_id,
        "type": kind,
        "state": described.group_state,
        "protocol_type": kind,
        "assignment_strategy": described.assignor_name,
        "group_epoch": described.group_epoch,
        "assignment_epoch": described.assignment_epoch,
    }


def describe_consumer_group(client: WireClient, group: str) -> dict[str, Any] | None:
    """None when the group is not a consumer group (or the broker lacks the API)."""
    try:
        response, _ = client.request(cgd.ConsumerGroupDescribeRequest(group_ids=[group]), 1)
    except (KafkaError, ValueError, KeyError):
        return None
    described = response.groups[0]
    if described.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
        return None
    check(described.error_code, f"ConsumerGroupDescribe {group}")
    return {
        **group_summary(described, "consumer"),
        "members": [_consumer_member(m, described.assignment_epoch) for m in described.members],
    }


def _partitions(assignment: Any) -> list[TopicPartition]:
    return sorted((tp.topic_name, p) for tp in assignment.topic_partitions for p in tp.partitions)


def _consumer_member(member: Any, assignment_epoch: int) -> dict[str, Any]:
    current, target = _partitions(member.assignment), _partitions(member.target_assignment)
    return {
        "member_id": member.member_id,
        "instance_id": member.instance_id,
        "client_id": member.client_id,
        "host": member.client_host,
        "assignment": current,
        "target_assignment": target,
        "member_epoch": member.member_epoch,
        "protocol": {0: "classic", 1: "consumer"}.get(member.member_type, "unknown"),
        "reconciliation": reconciliation_state(current, target, member.member_epoch,
                                               assignment_epoch),
    }


def reconciliation_state(current: list[TopicPartition], target: list[TopicPartition],
                         member_epoch: int, assignment_epoch: int) -> str:
    """The member's state as far as the describe data shows it (Kafka's `MemberState`):
    still holding partitions outside its target means it is revoking them; missing target
    partitions means it waits for other members to release them."""
    if set(current) - set(target):
        return "UNREVOKED_PARTITIONS"
    if set(target) - set(current):
        return "UNRELEASED_PARTITIONS"
    return "STABLE" if member_epoch == assignment_epoch else "RECONCILING"


def _member(member: Any, protocol_type: str) -> dict[str, Any]:
    assignment: list[TopicPartition] = []
    if protocol_type == "consumer" and member.member_assignment:
        try:
            decoded = _decode_assignment(member.member_assignment)
            assignment = [(tp.topic, p) for tp in decoded.assigned_partitions for p in tp.partitions]
        except ValueError:
            assignment = []
    return {
        "member_id": member.member_id,
        "instance_id": member.group_instance_id,
        "client_id": member.client_id,
        "host": member.client_host,
        "assignment": sorted(assignment),
    }


def _decode_assignment(raw: bytes) -> Any:
    version = int.from_bytes(raw[:2], "big", signed=True)
    decoded, _ = cpa.ConsumerProtocolAssignment.decode(raw, 2, min(version, 3))
    return decoded


def committed_offsets(client: WireClient, group: str) -> dict[TopicPartition, int]:
    """Every committed offset of the group (null topics = all partitions)."""
    request = of.OffsetFetchRequest(group_id=group, topics=None)
    response, _ = client.request(request, 7)
    check(response.error_code, f"OffsetFetch {group}")
    offsets: dict[TopicPartition, int] = {}
    for topic in response.topics:
        for p in topic.partitions:
            check(p.error_code, f"OffsetFetch {group} {topic.name}-{p.partition_index}")
            if p.committed_offset >= 0:
                offsets[(topic.name, p.partition_index)] = p.committed_offset
    return offsets


def topic_partitions(client: WireClient, topics: list[str] | None) -> list[TopicPartition]:
    """Partitions of the named topics (or of every topic when None)."""
    wanted = None if topics is None else [md.MetadataRequestTopic(name=t) for t in topics]
    request = md.MetadataRequest(topics=wanted, allow_auto_topic_creation=False)
    response, _ = client.request(request, 12)
    result: list[TopicPartition] = []
    for topic in response.topics:
        check(topic.error_code, f"Metadata {topic.name}")
        result.extend((topic.name, p.partition_index) for p in topic.partitions)
    return sorted(result)


def list_offsets(client: WireClient, partitions: list[TopicPartition],
                 timestamp: int) -> dict[TopicPartition, int]:
    """ListOffsets at `timestamp` (LATEST, EARLIEST or ms); -1 where none qualifies."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    request = lo.ListOffsetsRequest(replica_id=-1, topics=[
        lo.ListOffsetsTopic(name=t, partitions=[
            lo.ListOffsetsPartition(partition_index=p, timestamp=timestamp) for p in ps])
        for t, ps in by_topic.items()])
    response, _ = client.request(request, 7)
    offsets: dict[TopicPartition, int] = {}
    for topic in response.topics:
        for p in topic.partitions:
            check(p.error_code, f"ListOffsets {topic.name}-{p.partition_index}")
            offsets[(topic.name, p.partition_index)] = p.offset
    return offsets


def delete_groups(client: WireClient, groups: list[str]) -> dict[str, int]:
    response, _ = client.request(dg.DeleteGroupsRequest(groups_names=groups), 2)
    return {r.group_id: r.error_code for r in response.results}


def delete_offsets(client: WireClient, group: str,
                   partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    request = od.OffsetDeleteRequest(group_id=group, topics=[
        od.OffsetDeleteRequestTopic(name=t, partitions=[
            od.OffsetDeleteRequestPartition(partition_index=p) for p in ps])
        for t, ps in by_topic.items()])
    response, _ = client.request(request, 0)
    check(response.error_code, f"OffsetDelete {group}")
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def commit_offsets(client: WireClient, group: str, offsets: dict[TopicPartition, int]) -> None:
    """Commit as an admin (generation -1, no member): Kafka allows it only for empty groups."""
    by_topic: dict[str, list[oc.OffsetCommitRequestPartition]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        by_topic.setdefault(topic, []).append(oc.OffsetCommitRequestPartition(
            partition_index=partition, committed_offset=offset, committed_leader_epoch=-1,
            committed_metadata=""))
    request = oc.OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="",
        topics=[oc.OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()])
    response, _ = client.request(request, 8)
    for topic in response.topics:
        for p in topic.partitions:
            check(p.error_code, f"OffsetCommit {group} {topic.name}-{p.partition_index}")


def reset_refusal(client: WireClient, group: str) -> str | None:
    """Why a group's offsets may not be reset now (a member holds them), in
    ConsumerGroupCommand's words; None for an inactive or unknown group."""
    try:
        state = describe_group(client, group)["state"]
    except KafkaError as exc:
        if exc.code == ErrorCode.GROUP_ID_NOT_FOUND:
            return None
        raise
    if state in ("Empty", "Dead"):
        return None
    return (f"Error: Assignments can only be reset if the group '{group}' is inactive, "
            f"but the current state is {state}.")
