"""SharePartition with a dead-letter queue (KIP-1191): which records go ARCHIVING, with
which cause, and how ARCHIVING ends. The cases follow Kafka 4.4's SharePartitionTest
(core/src/test/java/kafka/server/share/SharePartitionTest.java):
testAcknowledgeRejectWithDlqEnabled/Disabled, testAcknowledgePerOffsetRejectWithDlqEnabled,
testReleaseAcquiredRecordsMaxDeliveryWithDlqSupplierEnabledButNoDlqTopicConfigured,
testAcquisitionLockTimeoutWithDlqEnabledMixedOffsets, testMaybeInitializeArchivingState*."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.share.dlq import (
    DlqCause,
    context_headers,
    dlq_partition,
    origin,
    resumed_cause,
)
from groupcoord.coordinator.share.partition import (
    AckType,
    InvalidTransition,
    RecordState,
    ShareConfig,
    SharePartition,
    StateBatch,
    check_transition,
)
from groupcoord.wire.errors import ErrorCode

TID = bytes(range(16))
LOCK = 30_000


def new_sp(dlq: bool = True, limit: int = 5) -> SharePartition:
    sp = SharePartition("g", TID, 0, ShareConfig(dlq=dlq, delivery_count_limit=limit))
    sp.initialize(0, [])
    return sp


def fetched(sp: SharePartition, first: int, last: int, now: int = 0) -> None:
    sp.acquire("m", now, [(first, last, False)], 500)


def states(sp: SharePartition) -> dict[int, tuple[str, int]]:
    return {o: (r.state.name, r.delivery_count) for o, r in sorted(sp.records.items())}


def test_transition_table_has_archiving_between_acquired_and_archived() -> None:
    check_transition(0, RecordState.ACQUIRED, RecordState.ARCHIVING)
    check_transition(0, RecordState.ARCHIVING, RecordState.ARCHIVED)
    for bad in (RecordState.AVAILABLE, RecordState.ACQUIRED, RecordState.ACKNOWLEDGED):
        with pytest.raises(InvalidTransition):
            check_transition(0, RecordState.ARCHIVING, bad)
    with pytest.raises(InvalidTransition):
        check_transition(0, RecordState.AVAILABLE, RecordState.ARCHIVING)
    assert int(RecordState.ARCHIVING) == 3  # Kafka's RecordState id, as persisted


def test_reject_with_dlq_goes_archiving_and_is_persisted_as_3() -> None:
    sp = new_sp()
    fetched(sp, 5, 9)
    fetched(sp, 10, 14)
    change = sp.plan_acknowledge("m", [(5, 9, [AckType.REJECT])], 1)
    assert change.result == ErrorCode.NONE
    assert change.changed == [StateBatch(5, 9, 3, 1)]
    assert change.causes == dict.fromkeys(range(5, 10), DlqCause.CLIENT_REJECT)
    sp.apply(change)
    # ARCHIVING is not terminal: the start offset stays until the DLQ write is done.
    assert sp.start_offset == 5
    assert sp.archiving() == [(o, 1, DlqCause.CLIENT_REJECT) for o in range(5, 10)]
    assert sp.next_fetch_offset() == 15  # never delivered again
    done = sp.plan_archive(range(5, 10))
    assert done.result == 5 and done.start_offset == 10
    sp.apply(done)
    assert sp.start_offset == 10 and sp.archiving() == []
    assert states(sp)[10] == ("ACQUIRED", 1)


def test_reject_without_dlq_is_archived_at_once() -> None:
    sp = new_sp(dlq=False)
    fetched(sp, 0, 4)
    change = sp.plan_acknowledge("m", [(0, 4, [AckType.REJECT])], 1)
    assert change.changed == [] and change.start_offset == 5 and change.causes == {}
    sp.apply(change)
    assert sp.start_offset == 5 and sp.archiving() == []


def test_per_offset_reject_and_gap() -> None:
    """Only REJECT goes through the DLQ; GAP is ARCHIVED, ACCEPT ACKNOWLEDGED."""
    sp = new_sp()
    fetched(sp, 0, 4)
    types = [AckType.ACCEPT, AckType.REJECT, AckType.GAP, AckType.REJECT, AckType.RELEASE]
    sp.acknowledge("m", [(0, 4, types)], 1)
    assert states(sp) == {1: ("ARCHIVING", 1), 2: ("ARCHIVED", 1), 3: ("ARCHIVING", 1),
                          4: ("AVAILABLE", 1)}
    assert sp.start_offset == 1
    assert [o for o, _c, _cause in sp.archiving()] == [1, 3]


def test_release_at_the_delivery_limit_goes_archiving_with_count_exceeded() -> None:
    sp = new_sp(limit=2)
    fetched(sp, 0, 1)
    sp.acknowledge("m", [(0, 1, [AckType.RELEASE])], 1)
    assert states(sp) == {0: ("AVAILABLE", 1), 1: ("AVAILABLE", 1)}
    fetched(sp, 0, 1)
    change = sp.plan_acknowledge("m", [(0, 1, [AckType.RELEASE])], 2)
    assert change.causes == {0: DlqCause.DELIVERY_COUNT_EXCEEDED,
                             1: DlqCause.DELIVERY_COUNT_EXCEEDED}
    sp.apply(change)
    assert states(sp) == {0: ("ARCHIVING", 2), 1: ("ARCHIVING", 2)}


def test_reject_at_the_delivery_limit_keeps_client_reject_live() -> None:
    """Kafka sets the cause from the ack type first (`recordStateWithDlq`)."""
    sp = new_sp(limit=2)
    fetched(sp, 0, 0)
    sp.acknowledge("m", [(0, 0, [AckType.RELEASE])], 1)
    fetched(sp, 0, 0)
    sp.acknowledge("m", [(0, 0, [AckType.REJECT])], 2)
    assert sp.archiving() == [(0, 2, DlqCause.CLIENT_REJECT)]


def test_lock_expiry_mixed_offsets() -> None:
    """testAcquisitionLockTimeoutWithDlqEnabledMixedOffsets: after two expiries at limit 2
    the re-acquired offsets go ARCHIVING, the accepted ones stay acknowledged."""
    sp = new_sp(limit=2)
    fetched(sp, 0, 9)
    assert sp.expire_locks(LOCK) == 10
    assert states(sp)[0] == ("AVAILABLE", 1)
    sp.acquire("m", LOCK, [(0, 4, False)], 5)
    sp.acknowledge("m", [(0, 4, [AckType.ACCEPT])], LOCK)
    sp.acquire("m", LOCK, [(5, 9, False)], 5)
    change = sp.plan_expire_locks(2 * LOCK)
    assert change.result == 5
    assert change.causes == dict.fromkeys(range(5, 10), DlqCause.DELIVERY_COUNT_EXCEEDED)
    sp.apply(change)
    assert sp.start_offset == 5
    assert [(o, c) for o, c, _ in sp.archiving()] == [(o, 2) for o in range(5, 10)]
    sp.apply(sp.plan_archive([5, 6, 7, 8, 9]))
    assert sp.start_offset == 10 and not sp.records


def test_member_release_at_limit_goes_archiving() -> None:
    sp = new_sp(limit=2)
    fetched(sp, 0, 0)
    sp.release_member("m")
    fetched(sp, 0, 0)
    assert sp.release_member("m") == 1
    assert sp.archiving() == [(0, 2, DlqCause.DELIVERY_COUNT_EXCEEDED)]


def test_no_dlq_topic_means_archived_at_the_limit() -> None:
    """testReleaseAcquiredRecordsMaxDeliveryWithDlqSupplierEnabledButNoDlqTopicConfigured."""
    sp = new_sp(dlq=False, limit=2)
    fetched(sp, 0, 0)
    sp.release_member("m")
    fetched(sp, 0, 0)
    sp.release_member("m")
    assert sp.start_offset == 1 and sp.archiving() == []


def test_archiving_records_cannot_be_acknowledged() -> None:
    sp = new_sp()
    fetched(sp, 0, 1)
    sp.acknowledge("m", [(0, 0, [AckType.REJECT])], 1)
    assert sp.acknowledge("m", [(0, 0, [AckType.ACCEPT])], 1) == ErrorCode.INVALID_RECORD_STATE


def test_initialize_with_archiving_infers_the_cause() -> None:
    """testMaybeInitializeArchivingStateWithDlqEnabled/MultipleArchivingStates: state 3 read
    back is ARCHIVING; the cause is not persisted and comes from the delivery count."""
    sp = SharePartition("g", TID, 0, ShareConfig(dlq=True, delivery_count_limit=3))
    sp.initialize(10, [StateBatch(10, 11, 3, 1), StateBatch(12, 12, 2, 1),
                       StateBatch(13, 14, 3, 3)])
    assert sp.start_offset == 10 and sp.end_offset == 15
    assert sp.archiving() == [(10, 1, DlqCause.CLIENT_REJECT), (11, 1, DlqCause.CLIENT_REJECT),
                              (13, 3, DlqCause.DELIVERY_COUNT_EXCEEDED),
                              (14, 3, DlqCause.DELIVERY_COUNT_EXCEEDED)]
    # Draining does not depend on the group's current DLQ setting (Kafka's resume).
    sp.config = ShareConfig(dlq=False)
    sp.apply(sp.plan_archive([10, 11, 13, 14]))
    assert sp.start_offset == 15


def test_plan_archive_skips_offsets_no_longer_archiving() -> None:
    sp = new_sp()
    fetched(sp, 0, 3)
    sp.acknowledge("m", [(0, 3, [AckType.REJECT])], 1)
    sp.move_start_offset(2)  # an admin reset past two of them
    change = sp.plan_archive([0, 1, 2, 3])
    assert change.result == 2
    sp.apply(change)
    assert sp.start_offset == 4


def test_causes_are_soft_and_pruned_by_replay() -> None:
    sp = new_sp()
    fetched(sp, 0, 1)
    sp.acknowledge("m", [(0, 1, [AckType.REJECT])], 1)
    assert set(sp.dlq_causes) == {0, 1}
    sp.apply(sp.plan_archive([0]))
    assert set(sp.dlq_causes) == {1}


def test_headers_are_kafkas_in_its_order() -> None:
    headers = context_headers("t", 3, 42, "grp", 5, DlqCause.DELIVERY_COUNT_EXCEEDED)
    assert headers == [
        ("__dlq.errors.topic", b"t"), ("__dlq.errors.partition", b"3"),
        ("__dlq.errors.offset", b"42"), ("__dlq.errors.group", b"grp"),
        ("__dlq.errors.delivery.count", b"5"),
        ("__dlq.errors.message", b"Offset delivery count exceeded the threshold.")]
    assert origin(headers) == ("grp", "t", 3, 42)
    assert origin([("x", b"1")]) is None
    assert origin([(n, b"x") for n, _ in headers]) is None  # not numbers
    assert resumed_cause(4, 5) == DlqCause.CLIENT_REJECT
    assert resumed_cause(5, 5) == DlqCause.DELIVERY_COUNT_EXCEEDED
    assert [dlq_partition(p, 3) for p in range(5)] == [0, 1, 2, 0, 1]


def test_the_dlq_is_on_with_a_topic_name_and_share_version_2() -> None:
    """`isDLQEnabledForGroup`: share.version >= 2 and a non-empty DLQ topic name."""
    from groupcoord.coordinator.share.configs import share_config

    named = {"errors.deadletterqueue.topic.name": " dlq.x "}
    assert share_config(named).dlq
    assert not share_config(named, dlq_supported=False).dlq
    assert not share_config({"errors.deadletterqueue.topic.name": "  "}).dlq
    assert not share_config({}).dlq
