"""Issue 10, must-show 4: oversized and hostile fields of every coordinator API answer a
Kafka error over a real connection and never reach a coordinator shard.

- every case of `helpers.hostile_requests` (group id, member id, instance id, protocol
  names, topics, metadata strings, transactional ids, config names), v0 of the share APIs
  included, against one broker: the exact error code in the response, the connection still
  usable, no shard task created, no record in `__consumer_offsets`, `__share_group_state`
  or `__transaction_state`, no error logged;
- 32,767-byte values of the same fields go through the coordinator without failing a shard;
- the 40,000-byte group id of the issue, then ordinary requests on the same connection;
- fields within the limit adding up to a write over `max.message.bytes` (consumer group,
  classic group, transaction): the operation fails with Kafka's code, the shard serves on.

The fuzz test driven by the specs is `test_request_fields_fuzz.py`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_inproc import InProcBroker
from helpers.hostile_requests import OVERSIZED, HostileCase, cases
from request_fields_support import (
    BrokerThread,
    ErrorLog,
    assert_answered,
    error_codes,
    error_log,
    run_checked,
)

from groupcoord.apis.registry import handlers
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated import (
    add_partitions_to_txn,
    describe_share_group_offsets,
    init_producer_id,
)
from groupcoord.wire.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.wire.generated.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
)
from groupcoord.wire.generated.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from groupcoord.wire.generated.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
)
from groupcoord.wire.generated.sync_group import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)


@pytest.fixture(scope="module")
def errors() -> Iterator[ErrorLog]:
    with error_log() as handler:
        yield handler


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, errors: ErrorLog) -> Iterator[BrokerThread]:
    running = BrokerThread(tmp_path_factory.mktemp("limits"))
    yield running
    running.close()


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.id)
def test_every_coordinator_api_answers_oversized_fields(
        broker: BrokerThread, errors: ErrorLog, case: HostileCase) -> None:
    response = broker.call(case.build(OVERSIZED), case.version)
    assert_answered(response, case.code)
    assert broker.untouched()
    assert errors.messages == []


SHARE_V0_CASES = [c for c in cases() if c.api in (
    "ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge")]


@pytest.mark.parametrize("case", SHARE_V0_CASES, ids=lambda c: c.id.replace("-v1", "-v0"))
def test_share_apis_v0_answer_oversized_fields(
        broker: BrokerThread, errors: ErrorLog, case: HostileCase) -> None:
    """v0 of the share APIs (3.9 early access) is decoded by hand-written codecs into the
    same classes, so the same check applies."""
    built = case.build(OVERSIZED)
    served = handlers()[built.API_KEY].request_cls
    request = served(**{name: getattr(built, name) for name in built._FIELDS})
    assert_answered(broker.call(request, 0), case.code)
    assert broker.untouched()
    assert errors.messages == []


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.id)
def test_longest_accepted_fields_fit_the_coordinator(tmp_path: Path, case: HostileCase) -> None:
    """The limit is what the records hold: 32,767-byte values (ASCII and 3-byte UTF-8) go
    through the coordinator, its records and the log without failing a shard."""
    response_cls = handlers()[case.build("x").API_KEY].response_cls

    async def scenario() -> None:
        for n, value in enumerate(("x" * 32_767, "\u20ac" * 10_922)):
            async with InProcBroker(tmp_path / str(n)) as running:
                running.broker.topics.create("t", 1, {})
                client = await running.client()
                response = await client.call(case.build(value), case.version, response_cls)
                assert E.UNKNOWN_SERVER_ERROR not in error_codes(response)

    run_checked(scenario())


def test_oversized_group_id_of_the_issue_then_the_connection_serves(tmp_path: Path) -> None:
    def commit(group_id: str) -> OffsetCommitRequest:
        return OffsetCommitRequest(
            group_id=group_id, generation_id_or_member_epoch=-1, member_id="",
            topics=[OffsetCommitRequestTopic(name="t", partitions=[
                OffsetCommitRequestPartition(partition_index=0, committed_offset=42)])])

    def join(group_id: str) -> JoinGroupRequest:
        return JoinGroupRequest(
            group_id=group_id, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
            member_id="", protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")])

    async def scenario() -> None:
        async with InProcBroker(tmp_path) as running:
            running.broker.topics.create("t", 1, {})
            client = await running.client()
            for _ in range(3):  # every attempt answered the same, none reloads a shard
                refused = await client.call(commit(OVERSIZED), 9, OffsetCommitResponse)
                assert error_codes(refused) == {E.INVALID_GROUP_ID}
                joined = await client.call(join(OVERSIZED), 9, JoinGroupResponse)
                assert joined.error_code == E.INVALID_GROUP_ID
            assert not running.broker.groups.shards
            committed = await client.call(commit("g"), 9, OffsetCommitResponse)
            assert error_codes(committed) == {0}
            fetched = await client.call(OffsetFetchRequest(groups=[OffsetFetchRequestGroup(
                group_id="g", topics=[OffsetFetchRequestTopics(name="t", partition_indexes=[0])])
            ]), 9, OffsetFetchResponse)
            assert fetched.groups[0].topics[0].partitions[0].committed_offset == 42
            first = await client.call(join("g"), 9, JoinGroupResponse)
            assert first.error_code == E.MEMBER_ID_REQUIRED and first.member_id

    run_checked(scenario())


def test_writes_over_max_message_bytes_fail_only_their_operation(tmp_path: Path) -> None:
    """Fields within the string limit can still add up to a batch `__consumer_offsets`
    refuses (max.message.bytes, 1,048,588): Kafka fails that write with
    RecordTooLargeException, answered UNKNOWN_SERVER_ERROR; the shard keeps serving."""
    many_topics = ["t" * 30_000 + str(i) for i in range(40)]  # 1.2 MB of topic names

    def heartbeat(topics: list[str], member_id: str, epoch: int) -> Any:
        return ConsumerGroupHeartbeatRequest(
            group_id="cg", member_id=member_id, member_epoch=epoch, rebalance_timeout_ms=5_000,
            subscribed_topic_names=topics, topic_partitions=[])

    def join(member_id: str, metadata: bytes) -> JoinGroupRequest:
        return JoinGroupRequest(
            group_id="classic", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
            member_id=member_id, protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=metadata)])

    def sync(member_id: str, generation: int) -> SyncGroupRequest:
        return SyncGroupRequest(
            group_id="classic", generation_id=generation, member_id=member_id,
            protocol_type="consumer", protocol_name="range",
            assignments=[SyncGroupRequestAssignment(member_id=member_id, assignment=b"a")])

    async def scenario() -> None:
        async with InProcBroker(tmp_path) as running:
            running.broker.topics.create("t", 1, {})
            client = await running.client()
            refused = await client.call(heartbeat(many_topics, "m" * 22, 0), 1,
                                        ConsumerGroupHeartbeatResponse)
            assert refused.error_code == E.UNKNOWN_SERVER_ERROR
            joined = await client.call(heartbeat(["t"], "m" * 22, 0), 1,
                                       ConsumerGroupHeartbeatResponse)
            assert (joined.error_code, joined.member_epoch) == (0, 1)

            first = await client.call(join("", b"\x00" * 2_000_000), 9, JoinGroupResponse)
            member = first.member_id
            big = await client.call(join(member, b"\x00" * 2_000_000), 9, JoinGroupResponse)
            assert big.error_code == 0
            synced = await client.call(sync(member, big.generation_id), 5, SyncGroupResponse)
            assert synced.error_code == E.UNKNOWN_SERVER_ERROR
            # The member rejoins with a subscription the log can hold, and the group forms.
            small = await client.call(join(member, b"\x00" * 16), 9, JoinGroupResponse)
            assert small.error_code == 0 and small.generation_id > big.generation_id
            synced = await client.call(sync(member, small.generation_id), 5, SyncGroupResponse)
            assert (synced.error_code, synced.assignment) == (0, b"a")

    run_checked(scenario())


def test_transaction_state_over_max_message_bytes_changes_nothing(tmp_path: Path) -> None:
    """A transaction whose `__transaction_state` record would exceed the partition's
    max.message.bytes: UNKNOWN_SERVER_ERROR (Kafka's TransactionStateManager mapping of
    MESSAGE_TOO_LARGE), the transaction unchanged and still usable."""
    m = add_partitions_to_txn

    def add(pid: int, epoch: int, partitions: list[int]) -> Any:
        return m.AddPartitionsToTxnRequest(
            v3_and_below_transactional_id="tx", v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[m.AddPartitionsToTxnTopic(name="t", partitions=partitions)])

    def codes(response: Any) -> set[int]:
        return {p.partition_error_code for t in response.results_by_topic_v3_and_below
                for p in t.results_by_partition}

    async def scenario() -> None:
        async with InProcBroker(tmp_path) as running:
            running.broker.topics.create("t", 400, {})
            running.broker.topics.set_configs("__transaction_state", {"max.message.bytes": "1000"})
            client = await running.client()
            init = await client.call(init_producer_id.InitProducerIdRequest(
                transactional_id="tx", transaction_timeout_ms=60_000, producer_id=-1,
                producer_epoch=-1), 4, init_producer_id.InitProducerIdResponse)
            assert init.error_code == 0
            pid, epoch = init.producer_id, init.producer_epoch
            refused = await client.call(add(pid, epoch, list(range(400))), 3,
                                        m.AddPartitionsToTxnResponse)
            assert codes(refused) == {E.UNKNOWN_SERVER_ERROR}
            added = await client.call(add(pid, epoch, [0]), 3, m.AddPartitionsToTxnResponse)
            assert codes(added) == {0}

    run_checked(scenario())


def test_all_share_offsets_of_a_group_without_state_metadata_answer(tmp_path: Path) -> None:
    """Found by fuzzing: null topics for a group with no ShareGroupStatePartitionMetadata
    used to park the reply forever (a None read result means "parked" to the runtime)."""
    m = describe_share_group_offsets

    async def scenario() -> None:
        async with InProcBroker(tmp_path) as running:
            client = await running.client()
            for version in (0, 1):
                response = await client.call(m.DescribeShareGroupOffsetsRequest(groups=[
                    m.DescribeShareGroupOffsetsRequestGroup(group_id="never-seen",
                                                            topics=None)]),
                    version, m.DescribeShareGroupOffsetsResponse)
                assert [(g.group_id, g.error_code, g.topics) for g in response.groups] == [
                    ("never-seen", 0, [])]

    run_checked(scenario())


# -- the fuzz test, driven by the JSON specs ------------------------------------------------
