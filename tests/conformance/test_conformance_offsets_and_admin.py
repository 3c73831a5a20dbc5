"""Offsets and group administration, differentially: OffsetCommit/OffsetFetch/OffsetDelete,
DeleteGroups, ListGroups and DescribeGroups against Kafka 4.4.

Mirrors `OffsetMetadataManager` (commit validation per group kind, fetch, delete) and
`GroupMetadataManager`'s admin paths (`listGroups`, `deleteGroups`, describe).
"""

from __future__ import annotations

import base64
from collections.abc import Callable

from conformance import classic, consumer
from conformance.conversation import Conversation
from conformance.differential import Scenario
from conformance.offsets import (
    commit,
    commit_request,
    delete_groups,
    delete_offsets,
    fetch,
    list_own_groups,
)
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from groupcoord.wire.generated.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from groupcoord.wire.generated.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupcoord.wire.generated.offset_commit import OffsetCommitResponse
from groupcoord.wire.generated.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)

Run = Callable[[Scenario], None]
M1 = consumer.member_id(1)


def test_standalone_commit_then_fetch(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t", partitions=2)
        group = c.name("g")
        commit(c, "commit", group, topic.name, {0: 5, 1: 7}, leader_epoch=0)
        fetch(c, "fetch committed and uncommitted", group, [topic], (0, 1, 2))
        fetch(c, "fetch all topics", group, None)
        commit(c, "overwrite without metadata", group, topic.name, {0: 9}, metadata=None)
        fetch(c, "fetch after overwrite", group, [topic], (0, 1))
    differential(scenario)


def test_fetch_old_versions(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        commit(c, "commit v2", group, topic.name, {0: 3}, version=2)
        for version in (1, 5, 7):
            c.call(f"fetch v{version}", OffsetFetchRequest(group_id=group, topics=[
                OffsetFetchRequestTopic(name=topic.name, partition_indexes=[0])]),
                version, OffsetFetchResponse)
        c.call("fetch v7 all topics", OffsetFetchRequest(group_id=group, topics=None), 7,
               OffsetFetchResponse)
        c.call("fetch v5 unknown group", OffsetFetchRequest(group_id=c.name("missing"), topics=[
            OffsetFetchRequestTopic(name=topic.name, partition_indexes=[0])]), 5,
            OffsetFetchResponse)
    differential(scenario)


def test_commit_by_topic_id_v10(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        commit(c, "commit by id", group, topic.name, {0: 11}, topic_id=topic.topic_id,
               version=10)
        fetch(c, "fetch by id v10", group, [topic], version=10)
        fetch(c, "fetch by name v9", group, [topic])
        commit(c, "commit unknown topic id", group, topic.name, {0: 1},
               topic_id=b"\x01" * 16, version=10)
    differential(scenario)


def test_commit_to_unknown_topic_and_partition(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        commit(c, "commit unknown topic", group, c.name("missing"), {0: 1})
        commit(c, "commit partition past the end", group, topic.name, {5: 1})
        commit(c, "commit negative offset", group, topic.name, {0: -5})
        fetch(c, "fetch", group, [topic], (0, 5))
    differential(scenario)


def test_commit_with_oversized_metadata(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        commit(c, "metadata over offset.metadata.max.bytes", group, topic.name, {0: 1},
               metadata="x" * 4097)
        commit(c, "metadata at the limit", group, topic.name, {0: 2}, metadata="y" * 4096)
        fetch(c, "fetch", group, [topic])
    differential(scenario)


def test_commit_validation_in_classic_group(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        joined = classic.stable_single_member(c, group, topic.name, topics=(topic.name,))
        commit(c, "member commit", group, topic.name, {0: 4}, generation=joined.generation_id,
               member_id=joined.member_id)
        commit(c, "wrong generation", group, topic.name, {0: 5},
               generation=joined.generation_id + 1, member_id=joined.member_id)
        commit(c, "unknown member", group, topic.name, {0: 6},
               generation=joined.generation_id, member_id="nobody")
        commit(c, "standalone commit to a live group", group, topic.name, {0: 7})
        commit(c, "static id of nobody", group, topic.name, {0: 8},
               generation=joined.generation_id, member_id=joined.member_id,
               instance_id="instance-x")
        fetch(c, "fetch", group, [topic])
    differential(scenario)


def test_commit_during_classic_rebalance(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        first = classic.stable_single_member(c, group, topic.name, topics=(topic.name,))
        other = c.connect("second")
        required = classic.join(c, "m2 join", group, conn=other, topics=(topic.name,))
        parked = classic.send_join(other, group, required.member_id, topics=(topic.name,))
        c.wait_for_state(group, "PreparingRebalance")
        commit(c, "commit while preparing rebalance", group, topic.name, {0: 3},
               generation=first.generation_id, member_id=first.member_id)
        classic.join(c, "m1 rejoin", group, first.member_id, topics=(topic.name,))
        c.receive("m2 join completes", other, parked, classic.JoinGroupResponse)
        commit(c, "commit while completing rebalance", group, topic.name, {0: 4},
               generation=first.generation_id + 1, member_id=first.member_id)
    differential(scenario)


def test_commit_validation_in_consumer_group(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        joined = consumer.join(c, "join", group, M1, [topic.name])
        epoch = joined.member_epoch
        commit(c, "commit at member epoch", group, topic.name, {0: 4}, generation=epoch,
               member_id=M1)
        commit(c, "stale epoch", group, topic.name, {0: 5}, generation=epoch - 1, member_id=M1)
        commit(c, "epoch ahead", group, topic.name, {0: 5}, generation=epoch + 1, member_id=M1)
        commit(c, "unknown member", group, topic.name, {0: 6}, generation=epoch,
               member_id="nobody")
        commit(c, "standalone commit to a live group", group, topic.name, {0: 7})
        fetch(c, "fetch as member", group, [topic], member_id=M1, member_epoch=epoch)
        fetch(c, "fetch at stale epoch", group, [topic], member_id=M1, member_epoch=epoch - 1)
        fetch(c, "fetch as unknown member", group, [topic], member_id="nobody",
              member_epoch=epoch)
        c.call("commit v7 (classic-era version) to a consumer group", commit_request(
            group, topic.name, {0: 8}, generation=epoch, member_id=M1), 7,
            OffsetCommitResponse)
    differential(scenario)


def test_offset_delete(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t", partitions=2)
        group = c.name("g")
        commit(c, "commit", group, topic.name, {0: 1, 1: 2})
        delete_offsets(c, "delete one partition of an empty group", group, topic.name, (0,))
        fetch(c, "fetch after delete", group, [topic], (0, 1))
        delete_offsets(c, "delete from unknown group", c.name("missing"), topic.name)
        delete_offsets(c, "delete unknown topic", group, c.name("missing-topic"))
        busy = c.name("busy")
        classic.stable_single_member(c, busy, topic.name, topics=(topic.name,))
        commit(c, "commit busy", busy, topic.name, {0: 3})
        delete_offsets(c, "delete subscribed topic", busy, topic.name)
    differential(scenario)


def test_offset_delete_in_consumer_group(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        t1 = c.create_topic("t1")
        t2 = c.create_topic("t2")
        group = c.name("g")
        consumer.join(c, "join t1", group, M1, [t1.name])
        commit(c, "commit t1", group, t1.name, {0: 1})
        commit(c, "commit t2", group, t2.name, {0: 2})
        delete_offsets(c, "delete subscribed topic", group, t1.name)
        delete_offsets(c, "delete unsubscribed topic", group, t2.name)
        fetch(c, "fetch", group, [t1, t2])
    differential(scenario)


def test_delete_groups(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        empty, busy, missing = c.name("empty"), c.name("busy"), c.name("missing")
        commit(c, "commit to empty group", empty, topic.name, {0: 1})
        classic.stable_single_member(c, busy, topic.name, topics=(topic.name,))
        delete_groups(c, "delete empty, busy, missing and blank", empty, busy, missing, "")
        fetch(c, "fetch deleted group", empty, [topic])
        classic.describe_groups(c, "describe after delete", empty, busy)
    differential(scenario)


def test_delete_consumer_and_empty_consumer_group(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        live, left = c.name("live"), c.name("left")
        consumer.join(c, "join live", live, M1, [topic.name])
        consumer.join(c, "join left", left, M1, [topic.name])
        consumer.leave(c, "leave left", left, M1)
        delete_groups(c, "delete live and left", live, left)
        consumer.describe(c, "describe after delete", live, left)
    differential(scenario)


def test_list_groups_by_state_and_type(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        commit(c, "commit makes an empty classic group", c.name("empty"), topic.name, {0: 1})
        classic.stable_single_member(c, c.name("classic"), topic.name, topics=(topic.name,))
        consumer.join(c, "consumer join", c.name("consumer"), M1, [topic.name])
        list_own_groups(c, "list all")
        list_own_groups(c, "list v3 (no types)", version=3)
        list_own_groups(c, "list Empty", states=["Empty"])
        list_own_groups(c, "list Stable and stable (case-insensitive)",
                        states=["Stable", "stable"])
        list_own_groups(c, "list consumer type", types=["consumer"])
        list_own_groups(c, "list classic type", types=["Classic"])
        list_own_groups(c, "list unknown type", types=["nonsense"])
        list_own_groups(c, "list unknown state", states=["Nonsense"])
    differential(scenario)


def test_find_coordinator_versions_and_key_types(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        for version in (0, 1, 3):
            c.call(f"group coordinator v{version}",
                   FindCoordinatorRequest(key=group, key_type=0), version,
                   FindCoordinatorResponse)
        c.call("batched group and empty keys v4",
               FindCoordinatorRequest(key_type=0, coordinator_keys=[group, ""]), 4,
               FindCoordinatorResponse)
        c.call("transaction coordinator v6",
               FindCoordinatorRequest(key_type=1, coordinator_keys=[c.name("txn")]), 6,
               FindCoordinatorResponse)
        # The share key names a topic id; a fixed one keeps the key the same on both brokers
        # (the coordinator partition is a hash of the key, the topic is not looked up).
        share_key = f"{group}:{uuid_text(bytes(range(16)))}:0"
        request = FindCoordinatorRequest(key_type=2, coordinator_keys=[share_key])
        c.wait_until(lambda: c.quiet(request, 6, FindCoordinatorResponse).coordinators[0]
                     .error_code != ErrorCode.COORDINATOR_NOT_AVAILABLE,
                     "the share coordinator (Kafka creates __share_group_state on first use)")
        c.call("share coordinator v6",
               FindCoordinatorRequest(key_type=2, coordinator_keys=[share_key, "malformed"]),
               6, FindCoordinatorResponse)
        c.call("unknown key type v6",
               FindCoordinatorRequest(key_type=9, coordinator_keys=[group]), 6,
               FindCoordinatorResponse)
    differential(scenario)


def test_describe_with_authorized_operations(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        classic_group, consumer_group = c.name("classic"), c.name("consumer")
        classic.stable_single_member(c, classic_group, topic.name, topics=(topic.name,))
        consumer.join(c, "consumer join", consumer_group, M1, [topic.name])
        c.call("DescribeGroups with operations", DescribeGroupsRequest(
            groups=[classic_group, consumer_group], include_authorized_operations=True), 5,
            DescribeGroupsResponse)
        c.call("ConsumerGroupDescribe with operations", ConsumerGroupDescribeRequest(
            group_ids=[consumer_group], include_authorized_operations=True), 1,
            ConsumerGroupDescribeResponse)
    differential(scenario)


def uuid_text(raw: bytes) -> str:
    """Kafka's `Uuid.toString`: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")
