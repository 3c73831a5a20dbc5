"""The consumer-group fixes of Kafka 4.4, each as Kafka's commit states it; every test here
fails on Kafka 4.3's behaviour.

- KAFKA-20601 (`GroupMetadataManager.throwIfConsumerGroupIsFull(group, memberId,
  instanceId)`): a known static member passes the max-size check, on the heartbeat path and
  on the classic JoinGroup path; a new member is still refused.
- KAFKA-20640 (`throwIfClassicMemberCannotJoinConsumerGroup`): under
  `group.consumer.migration.policy=disabled` no classic member joins or rejoins a consumer
  group, not even one already in it from before the policy changed.
- KAFKA-20662 (`deserializeSubscription`): malformed consumer-protocol metadata in a classic
  join to a consumer group is INCONSISTENT_GROUP_PROTOCOL (4.3: IllegalStateException, i.e.
  UNKNOWN_SERVER_ERROR).
- KAFKA-20747 (`ConsumerGroup.updateStaticMember(oldMember, newMember)`): a member that
  rejoins with the same member id and another instance id leaves no stale mapping
  (`testStaticMemberRejoinsWithSameMemberIdAndDifferentInstanceId`).
"""

from __future__ import annotations

from dataclasses import replace

from cg_harness import GROUP, CgHarness

from groupcoord.coordinator.classic.consumer_protocol import encode_subscription
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.wire.errors import ErrorCode as E

SUB = [("range", encode_subscription(["foo"], 1))]


def _classic_join(h: CgHarness, member_id: str = "", instance_id: str | None = None,
                  protocols: list[tuple[str, bytes]] | None = None) -> object:
    # JoinGroup v5: static members, and a dynamic member is taken without the
    # MEMBER_ID_REQUIRED round trip only below v4, so dynamic joins here use v3.
    version = 5 if instance_id is not None else 3
    _, result = h.join(member_id=member_id, group_id=GROUP, instance_id=instance_id,
                       protocols=protocols or SUB, version=version)
    return result.response


def test_kafka_20601_static_classic_member_rejoins_a_full_consumer_group() -> None:
    h = CgHarness(GroupCoordinatorConfig(group_consumer_max_size=2), topics={"foo": 2})
    h.hb("a", 0)
    first = _classic_join(h, instance_id="i-c")
    assert first.error_code == E.NONE
    assert len(h.group().members) == 2 and h.group().static == {"i-c": first.member_id}
    # The same instance rejoins with a new member id: it replaces itself, the group stays at 2.
    again = _classic_join(h, instance_id="i-c")
    assert again.error_code == E.NONE and again.member_id != first.member_id
    assert h.group().static == {"i-c": again.member_id} and len(h.group().members) == 2
    # A member the group does not know is still refused.
    assert _classic_join(h).error_code == E.GROUP_MAX_SIZE_REACHED
    assert _classic_join(h, instance_id="i-new").error_code == E.GROUP_MAX_SIZE_REACHED


def test_kafka_20601_static_member_heartbeat_rejoins_a_full_consumer_group() -> None:
    h = CgHarness(GroupCoordinatorConfig(group_consumer_max_size=2), topics={"foo": 2})
    h.hb("a", 0)
    h.hb("s1", 0, instance_id="i-s")
    h.hb("s1", -2, instance_id="i-s")              # temporary leave keeps the instance
    assert h.hb("s2", 0, instance_id="i-s").error_code == E.NONE
    assert h.group().static == {"i-s": "s2"}
    assert h.hb("z", 0).error_code == E.GROUP_MAX_SIZE_REACHED


def test_kafka_20640_disabled_policy_rejects_a_classic_member_rejoining() -> None:
    h = CgHarness(topics={"foo": 2})               # bidirectional: the group becomes mixed
    h.hb("a", 0)
    joined = _classic_join(h)
    assert joined.error_code == E.NONE and joined.member_id in h.group().members
    h.restart(replace(h.config, group_consumer_migration_policy="disabled"))
    rejoin = _classic_join(h, member_id=joined.member_id)
    assert rejoin.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert _classic_join(h).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    # The consumer-protocol member is untouched.
    assert h.hb("a", h.group().members["a"].member_epoch).error_code == E.NONE


def test_kafka_20662_malformed_subscription_is_inconsistent_group_protocol() -> None:
    h = CgHarness(topics={"foo": 2})
    h.hb("a", 0)
    before = len(h.log)
    malformed = [("range", b"\x00\x01\xff\xff\xff")]  # version 1, then a truncated array
    resp = _classic_join(h, protocols=malformed)
    assert resp.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert len(h.log) == before and set(h.group().members) == {"a"}


def test_kafka_20747_instance_id_change_leaves_no_stale_mapping() -> None:
    h = CgHarness(topics={"foo": 6})
    h.hb("m1", 0, instance_id="instance-1")
    assert h.group().static == {"instance-1": "m1"}
    assert h.hb("m1", 0, instance_id="instance-2").error_code == E.NONE
    assert h.group().static == {"instance-2": "m1"}
    # The released instance id is free for another member, and the log replays the same map.
    assert h.hb("m2", 0, instance_id="instance-1").error_code == E.NONE
    assert h.group().static == {"instance-2": "m1", "instance-1": "m2"}
    assert h.fresh_replay().consumer.groups[GROUP].static == h.group().static
