"""The differential suite's own machinery, without brokers: normalisation keeps what must be
compared and `compare` fails on every kind of difference (else every scenario would pass)."""

from __future__ import annotations

import pytest

from conformance.differential import compare, field_differences
from conformance.normalise import Symbols, normalise
from groupcoord.wire.generated.consumer_group_heartbeat import (
    Assignment,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from groupcoord.wire.generated.join_group import JoinGroupResponse, JoinGroupResponseMember

TOPIC = bytes(range(16))


def heartbeat(member: str, epoch: int, error: int = 0, message: str | None = None,
              partitions: tuple[int, ...] = (0, 1)) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(
        throttle_time_ms=7, error_code=error, error_message=message, member_id=member,
        member_epoch=epoch, heartbeat_interval_ms=5000, assignment=Assignment(
            topic_partitions=[TopicPartitions(topic_id=TOPIC, partitions=list(partitions))]))


def transcript(*responses: object) -> list[tuple[str, object]]:
    symbols = Symbols()
    symbols.bind("topic", TOPIC, "topic:t")
    return [(f"step {i}", normalise(r, symbols)) for i, r in enumerate(responses)]


def test_broker_generated_values_become_symbols_in_order_of_appearance() -> None:
    kafka = transcript(heartbeat("kafka-a", 2), heartbeat("kafka-b", 3), heartbeat("kafka-a", 4))
    ours = transcript(heartbeat("ours-a", 1), heartbeat("ours-b", 2), heartbeat("ours-a", 3))
    compare(kafka, ours)
    assert kafka[0][1]["member_id"] == "member-1" and kafka[2][1]["member_id"] == "member-1"
    assert kafka[1][1]["member_epoch"] == "epoch+1"
    assert kafka[0][1]["assignment"]["topic_partitions"][0]["topic_id"] == "topic:t"
    assert "throttle_time_ms" not in kafka[0][1]


@pytest.mark.parametrize(("ours", "path"), [
    (heartbeat("m", 1, error=22), ".error_code"),
    (heartbeat("m", 1, message="text"), ".error_message"),
    (heartbeat("m", 1, partitions=(0,)), ".assignment.topic_partitions[0].partitions"),
    (heartbeat("y", 1), ".member_id"),  # the first member again, where Kafka has a new one
])
def test_every_compared_field_can_fail(ours: ConsumerGroupHeartbeatResponse, path: str) -> None:
    kafka = transcript(heartbeat("x", 9), heartbeat("m", 2))
    mine = transcript(heartbeat("y", 8), ours)
    with pytest.raises(AssertionError, match=path.replace("[", r"\[").replace(".", r"\.")):
        compare(kafka, mine)


def test_epoch_gaps_and_sentinels_are_kept() -> None:
    kafka = transcript(heartbeat("m", 2), heartbeat("m", 4), heartbeat("m", -1))
    same_gaps = transcript(heartbeat("m", 1), heartbeat("m", 3), heartbeat("m", -1))
    other_gap = transcript(heartbeat("m", 1), heartbeat("m", 2), heartbeat("m", -1))
    compare(kafka, same_gaps)
    with pytest.raises(AssertionError, match="member_epoch"):
        compare(kafka, other_gap)
    assert kafka[2][1]["member_epoch"] == -1


def test_arrays_are_multisets_but_members_stay_distinct() -> None:
    def joined(*members: str) -> JoinGroupResponse:
        return JoinGroupResponse(error_code=0, generation_id=1, protocol_type="consumer",
                                 protocol_name="range", leader=members[0], member_id=members[0],
                                 members=[JoinGroupResponseMember(member_id=m, metadata=b"s")
                                          for m in members])
    kafka = transcript(joined("k1", "k2"))
    assert field_differences(transcript(joined("o1", "o2"))[0][1], kafka[0][1]) == []
    with pytest.raises(AssertionError, match="members"):
        compare(kafka, transcript(joined("o1")))


def test_different_steps_fail() -> None:
    with pytest.raises(AssertionError, match="steps differ"):
        compare(transcript(heartbeat("m", 1)), transcript(heartbeat("m", 1), heartbeat("m", 1)))
