"""Transactions with offsets, differentially: InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, TxnOffsetCommit, EndTxn, DescribeTransactions and ListTransactions.

Mirrors `TransactionCoordinator` (producer ids and epochs, the transaction state machine) and
`OffsetMetadataManager`'s transactional offsets (pending until the marker, then committed or
discarded; `require_stable` fetches see UNSTABLE_OFFSET_COMMIT meanwhile). Requests use the
versions a pre-KIP-890-part-2 client sends (explicit AddPartitionsToTxn / AddOffsetsToTxn),
apart from the transaction version 2 scenario (Produce v12, EndTxn v5, epoch bumps).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from conformance import classic, consumer
from conformance.conversation import Conversation, Topic
from conformance.differential import Scenario
from conformance.offsets import fetch
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.add_offsets_to_txn import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
)
from groupcoord.wire.generated.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopic,
)
from groupcoord.wire.generated.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
)
from groupcoord.wire.generated.end_txn import EndTxnRequest, EndTxnResponse
from groupcoord.wire.generated.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from groupcoord.wire.generated.list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from groupcoord.wire.generated.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
)
from groupcoord.wire.generated.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from groupcoord.wire.generated.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
)

Run = Callable[[Scenario], None]
INIT_VERSION = 4
ADD_PARTITIONS_VERSION = 3
ADD_OFFSETS_VERSION = 3
TXN_COMMIT_VERSION = 3
TXN_COMMIT_BY_ID_VERSION = 6
END_VERSION = 3
# Transaction version 2 (KIP-890 part 2): Produce adds the partition, EndTxn bumps the epoch.
TV2_PRODUCE_VERSION = 12
TV2_END_VERSION = 5
TV2_INIT_VERSION = 5
TXN_TIMEOUT_MS = 60_000
# Retried as a client does, unrecorded: a coordinator partition still loading after start-up.
LOADING = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                     ErrorCode.NOT_COORDINATOR})
PREPARED = frozenset({"PrepareCommit", "PrepareAbort"})


@dataclass(frozen=True)
class Producer:
    transactional_id: str
    producer_id: int
    epoch: int


def init(c: Conversation, step: str, transactional_id: str | None,
         producer_id: int = -1, epoch: int = -1) -> InitProducerIdResponse:
    return c.call_retrying(step, InitProducerIdRequest(
        transactional_id=transactional_id, transaction_timeout_ms=TXN_TIMEOUT_MS,
        producer_id=producer_id, producer_epoch=epoch), INIT_VERSION, InitProducerIdResponse,
        LOADING)


def producer(c: Conversation, step: str, suffix: str = "txn") -> Producer:
    transactional_id = c.name(suffix)
    response = init(c, step, transactional_id)
    return Producer(transactional_id, response.producer_id, response.producer_epoch)


def add_partitions(c: Conversation, step: str, p: Producer, topic: Topic,
                   partitions: tuple[int, ...] = (0,)) -> None:
    c.call(step, AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=p.transactional_id, v3_and_below_producer_id=p.producer_id,
        v3_and_below_producer_epoch=p.epoch, v3_and_below_topics=[
            AddPartitionsToTxnTopic(name=topic.name, partitions=list(partitions))]),
        ADD_PARTITIONS_VERSION, AddPartitionsToTxnResponse)


def add_offsets(c: Conversation, step: str, p: Producer, group: str,
                epoch: int | None = None) -> None:
    c.call(step, AddOffsetsToTxnRequest(
        transactional_id=p.transactional_id, producer_id=p.producer_id,
        producer_epoch=p.epoch if epoch is None else epoch, group_id=group),
        ADD_OFFSETS_VERSION, AddOffsetsToTxnResponse)


def txn_commit(c: Conversation, step: str, p: Producer, group: str, topic: Topic,
               offsets: dict[int, int], *, epoch: int | None = None, generation: int = -1,
               member_id: str = "", version: int = TXN_COMMIT_VERSION) -> None:
    """From v6 (KIP-1319) the topic is named by its id."""
    by_id = version >= TXN_COMMIT_BY_ID_VERSION
    c.call(step, TxnOffsetCommitRequest(
        transactional_id=p.transactional_id, group_id=group, producer_id=p.producer_id,
        producer_epoch=p.epoch if epoch is None else epoch,
        generation_id_or_member_epoch=generation, member_id=member_id,
        topics=[TxnOffsetCommitRequestTopic(
            name="" if by_id else topic.name, topic_id=topic.topic_id if by_id else bytes(16),
            partitions=[TxnOffsetCommitRequestPartition(
                partition_index=i, committed_offset=o, committed_leader_epoch=-1,
                committed_metadata="tx") for i, o in offsets.items()])]),
        version, TxnOffsetCommitResponse)


def end(c: Conversation, step: str, p: Producer, committed: bool,
        epoch: int | None = None, version: int = END_VERSION) -> EndTxnResponse:
    return c.call(step, EndTxnRequest(
        transactional_id=p.transactional_id, producer_id=p.producer_id,
        producer_epoch=p.epoch if epoch is None else epoch, committed=committed),
        version, EndTxnResponse)


def wait_completed(c: Conversation, p: Producer) -> None:
    """EndTxn answers once the outcome is prepared; the markers and the Complete* state
    follow. Wait until the state is no longer Prepare* before looking at the outcome (a
    broker that refused the EndTxn never gets there: the steps recorded show how)."""
    def completed() -> bool:
        described = c.quiet(DescribeTransactionsRequest(transactional_ids=[p.transactional_id]),
                            0, DescribeTransactionsResponse)
        return described.transaction_states[0].transaction_state not in PREPARED
    c.wait_until(completed, f"{p.transactional_id} completed")


def wait_stable(c: Conversation, group: str, topic: Topic) -> None:
    """The transaction markers are written after EndTxn answers; wait until they landed."""
    def stable() -> bool:
        response = c.quiet(OffsetFetchRequest(groups=[OffsetFetchRequestGroup(
            group_id=group, topics=[OffsetFetchRequestTopics(
                name=topic.name, partition_indexes=[0])])], require_stable=True), 9,
            OffsetFetchResponse)
        group_result = response.groups[0]
        return group_result.error_code == ErrorCode.NONE and all(
            p.error_code == ErrorCode.NONE for t in group_result.topics for p in t.partitions)
    c.wait_until(stable, f"stable offsets of {group}")


def describe(c: Conversation, step: str, *transactional_ids: str) -> None:
    c.call(step, DescribeTransactionsRequest(transactional_ids=list(transactional_ids)), 0,
           DescribeTransactionsResponse)


def test_transactional_offsets_commit(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        p = producer(c, "init")
        add_partitions(c, "add partitions", p, topic)
        c.produce(topic, 0, [b"a", b"b"], transactional_id=p.transactional_id,
                  producer_id=p.producer_id, producer_epoch=p.epoch, base_sequence=0)
        add_offsets(c, "add offsets", p, group)
        txn_commit(c, "txn offset commit", p, group, topic, {0: 2})
        fetch(c, "stable fetch while pending", group, [topic], require_stable=True)
        fetch(c, "plain fetch while pending", group, [topic])
        describe(c, "describe ongoing", p.transactional_id)
        end(c, "commit", p, committed=True)
        wait_completed(c, p)
        wait_stable(c, group, topic)
        fetch(c, "fetch after commit", group, [topic], require_stable=True)
        describe(c, "describe after commit", p.transactional_id)
    differential(scenario)


def test_transactional_offsets_abort(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        p = producer(c, "init")
        add_offsets(c, "add offsets", p, group)
        txn_commit(c, "txn offset commit", p, group, topic, {0: 5})
        end(c, "abort", p, committed=False)
        wait_completed(c, p)
        wait_stable(c, group, topic)
        fetch(c, "fetch after abort", group, [topic], require_stable=True)
        describe(c, "describe after abort", p.transactional_id)
    differential(scenario)


def test_txn_offset_commit_errors(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        p = producer(c, "init")
        txn_commit(c, "commit before AddOffsetsToTxn", p, group, topic, {0: 1})
        add_offsets(c, "add offsets with an old epoch", p, group, epoch=p.epoch - 1)
        add_offsets(c, "add offsets", p, group)
        txn_commit(c, "wrong producer epoch", p, group, topic, {0: 1}, epoch=p.epoch + 1)
        txn_commit(c, "unknown member with a generation", p, group, topic, {0: 1},
                   generation=3, member_id="nobody")
        end(c, "abort", p, committed=False)
    differential(scenario)


def test_txn_offset_commit_v6_by_topic_id(differential: Run) -> None:
    """KIP-1319: topics by id, UNKNOWN_TOPIC_ID for an id the broker does not know,
    GROUP_ID_NOT_FOUND for a generation in an unknown group."""
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t", partitions=2)
        group = c.name("g")
        p = producer(c, "init")
        add_offsets(c, "add offsets", p, group)
        v6 = TXN_COMMIT_BY_ID_VERSION
        txn_commit(c, "unknown member with a generation", p, group, topic, {0: 1},
                   generation=3, member_id="nobody", version=v6)
        txn_commit(c, "an unknown topic id", p, group,
                   Topic(topic.name, bytes(range(16)), 1), {0: 1}, version=v6)
        txn_commit(c, "by topic id, one partition unknown", p, group, topic, {0: 5, 7: 1},
                   version=v6)
        end(c, "commit", p, committed=True)
        wait_stable(c, group, topic)
        fetch(c, "fetch", group, [topic], require_stable=True)
    differential(scenario)


def test_txn_offset_commit_to_a_share_group(differential: Run) -> None:
    """`ShareGroup.validateOffsetCommit`: GROUP_ID_NOT_FOUND, before v6 as from it."""
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        c.quiet(ShareGroupHeartbeatRequest(group_id=group, member_id=consumer.member_id(1),
                                           member_epoch=0, subscribed_topic_names=[topic.name]),
                1, ShareGroupHeartbeatResponse)
        p = producer(c, "init")
        add_offsets(c, "add offsets", p, group)
        txn_commit(c, "commit v3", p, group, topic, {0: 1})
        txn_commit(c, "commit v6", p, group, topic, {0: 1}, version=TXN_COMMIT_BY_ID_VERSION)
        end(c, "abort", p, committed=False)
    differential(scenario)


def test_txn_offset_commit_as_classic_member(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        joined = classic.stable_single_member(c, group, topic.name, topics=(topic.name,))
        p = producer(c, "init")
        add_offsets(c, "add offsets", p, group)
        txn_commit(c, "as member", p, group, topic, {0: 3}, generation=joined.generation_id,
                   member_id=joined.member_id)
        txn_commit(c, "wrong generation", p, group, topic, {0: 4},
                   generation=joined.generation_id + 1, member_id=joined.member_id)
        end(c, "commit", p, committed=True)
        wait_stable(c, group, topic)
        fetch(c, "fetch", group, [topic], require_stable=True)
    differential(scenario)


def test_producer_ids_and_fencing(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        init(c, "idempotent producer", None)
        first = producer(c, "init")
        second = init(c, "re-init bumps the epoch", first.transactional_id)
        end(c, "end with the fenced epoch", first, committed=True)
        end(c, "end with no transaction", Producer(first.transactional_id, second.producer_id,
                                                    second.producer_epoch), committed=True)
        init(c, "re-init with the current id and epoch", first.transactional_id,
             second.producer_id, second.producer_epoch)
        init(c, "re-init with a wrong producer id", first.transactional_id,
             second.producer_id + 1000, second.producer_epoch)
        end(c, "end of unknown transactional id", Producer(c.name("nobody"), 1, 0),
            committed=False)
        init(c, "empty transactional id", "")
    differential(scenario)


def test_describe_and_list_transactions(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        ongoing = producer(c, "init ongoing", "ongoing")
        add_partitions(c, "add partitions", ongoing, topic)
        idle = producer(c, "init idle", "idle")
        describe(c, "describe ongoing, idle and unknown", ongoing.transactional_id,
                 idle.transactional_id, c.name("unknown"))
        for step, request in (
                ("list all", ListTransactionsRequest(state_filters=[], producer_id_filters=[])),
                ("list Ongoing", ListTransactionsRequest(state_filters=["Ongoing"],
                                                         producer_id_filters=[])),
                ("list by producer id", ListTransactionsRequest(
                    state_filters=[], producer_id_filters=[idle.producer_id])),
                ("list unknown state", ListTransactionsRequest(state_filters=["Nonsense"],
                                                               producer_id_filters=[]))):
            listed = c.quiet(request, 1, ListTransactionsResponse)
            c.record(step, {"error_code": listed.error_code,
                            "unknown_state_filters": listed.unknown_state_filters,
                            "transaction_states": [
                                s for s in listed.transaction_states
                                if s.transactional_id.startswith(c.name(""))]})
        end(c, "abort", ongoing, committed=False)
    differential(scenario)


def test_tv2_aborts_with_no_partition_and_retries(differential: Run) -> None:
    """KIP-890 part 2 (`endTransaction` at TV2): an abort at the current epoch of an Empty,
    CompleteCommit or CompleteAbort transaction is an empty transaction of its own that
    bumps the epoch (a client aborts so whenever none of its produces succeeded, e.g.
    franz-go's GroupTransactSession after a rebalance); a commit there is INVALID_TXN_STATE;
    an EndTxn retried at the epoch before the bump answers NONE for the same outcome; and
    an InitProducerId at that epoch (a producer that lost the EndTxn answer) is a retry
    that keeps the current epoch."""
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        first = c.call_retrying("init", InitProducerIdRequest(
            transactional_id=c.name("txn"), transaction_timeout_ms=TXN_TIMEOUT_MS,
            producer_id=-1, producer_epoch=-1), TV2_INIT_VERSION, InitProducerIdResponse,
            LOADING)
        p = Producer(c.name("txn"), first.producer_id, first.producer_epoch)

        def at(epoch: int) -> Producer:
            return Producer(p.transactional_id, p.producer_id, epoch)

        def end_v5(step: str, epoch: int, committed: bool) -> EndTxnResponse:
            return end(c, step, at(epoch), committed, version=TV2_END_VERSION)

        def produce_v12(step: str, epoch: int) -> None:
            c.produce(topic, 0, [b"x"], transactional_id=p.transactional_id,
                      producer_id=p.producer_id, producer_epoch=epoch, base_sequence=0,
                      version=TV2_PRODUCE_VERSION, step=step)

        e = p.epoch
        end_v5("commit of an empty transaction", e, committed=True)
        end_v5("abort of an empty transaction", e, committed=False)
        wait_completed(c, p)
        describe(c, "describe after the empty abort", p.transactional_id)
        end_v5("the empty abort retried", e, committed=False)
        end_v5("commit retried after the empty abort", e, committed=True)
        produce_v12("produce v12 at the bumped epoch", e + 1)
        describe(c, "describe after a v12 produce", p.transactional_id)
        end_v5("commit", e + 1, committed=True)
        wait_completed(c, p)
        end_v5("the commit retried", e + 1, committed=True)
        end_v5("abort at the epoch before the commit", e + 1, committed=False)
        end_v5("commit with nothing added", e + 2, committed=True)
        end_v5("abort after the commit", e + 2, committed=False)
        wait_completed(c, p)
        end_v5("the abort after the commit retried", e + 2, committed=False)
        c.call("re-init at the epoch before the last EndTxn", InitProducerIdRequest(
            transactional_id=p.transactional_id, transaction_timeout_ms=TXN_TIMEOUT_MS,
            producer_id=p.producer_id, producer_epoch=e + 2), TV2_INIT_VERSION,
            InitProducerIdResponse)
        describe(c, "describe after the re-init", p.transactional_id)
        produce_v12("produce v12 after the re-init", e + 3)
        end_v5("abort of a transaction with data", e + 3, committed=False)
        wait_completed(c, p)
        describe(c, "describe at the end", p.transactional_id)
    differential(scenario)
