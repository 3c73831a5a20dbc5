"""`group.share.max.size` held exactly under a burst of interleaved ShareGroupHeartbeats
(`GroupMetadataManager.throwIfShareGroupIsFull`).

2,000 share consumers (client-generated member ids) join a group limited to 1,000, in a
seeded random order interleaved with the heartbeats of members already in and with
clock moves that let KIP-1263's assignment interval recompute the target. The member
count is checked after every operation.
"""

from __future__ import annotations

import random

from coord_harness import Harness

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.share_group_heartbeat import ShareGroupHeartbeatRequest

G = "sg"
T1 = bytes([1] * 16)
LIMIT = 1_000
JOINERS = 2_000


def share_harness(limit: int) -> Harness:
    h = Harness(GroupCoordinatorConfig(group_share_max_size=limit))
    h.shard.on_topics_changed(TopicsImage.of([("a", T1, 8)], 1), 0)
    return h


def hb(h: Harness, member: str, epoch: int) -> tuple[int, int]:
    req = ShareGroupHeartbeatRequest(group_id=G, member_id=member, member_epoch=epoch,
                                     subscribed_topic_names=["a"] if epoch == 0 else None)
    _, result = h.call("share_group_heartbeat", req, 1)
    return result.response.response.error_code, result.response.response.member_epoch


def member_id(index: int) -> str:
    return f"{index:08d}-0000-4000-8000-000000000000"


def members(h: Harness) -> dict:
    group = h.shard.share.get(G)
    return {} if group is None else group.members


def test_burst_fills_the_share_group_exactly() -> None:
    h = share_harness(LIMIT)
    rnd = random.Random(7)
    epochs: dict[int, int] = {}
    refused: dict[int, int] = {}
    for _ in range(8_000):
        if rnd.random() < 0.005:
            h.advance(200)
            continue
        k = rnd.randrange(JOINERS)
        if k in refused:
            continue
        code, epoch = hb(h, member_id(k), epochs.get(k, 0))
        if code == ErrorCode.GROUP_MAX_SIZE_REACHED:
            assert k not in epochs, "a member of the group was refused"
            refused[k] = refused.get(k, 0) + 1
        else:
            assert code == ErrorCode.NONE, code
            epochs[k] = epoch
        assert len(members(h)) <= LIMIT
    for k in range(JOINERS):  # every joiner has had its turn
        if k not in epochs and k not in refused:
            code, epochs_k = hb(h, member_id(k), 0)
            if code == ErrorCode.GROUP_MAX_SIZE_REACHED:
                refused[k] = 1
            else:
                epochs[k] = epochs_k
            assert len(members(h)) <= LIMIT
    assert len(epochs) == LIMIT and len(refused) == JOINERS - LIMIT
    assert set(refused.values()) == {1}
    assert sorted(members(h)) == sorted(member_id(k) for k in epochs)
    assert h.fresh_replay().snapshot() == h.shard.snapshot()


def test_full_group_refuses_any_unknown_member_first() -> None:
    """The size check comes before the member lookup, as in Kafka: an unknown id is
    refused with GROUP_MAX_SIZE_REACHED whatever its epoch; members keep heartbeating."""
    h = share_harness(2)
    _, e1 = hb(h, member_id(1), 0)
    hb(h, member_id(2), 0)
    assert hb(h, member_id(3), 0)[0] == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert hb(h, member_id(3), 5)[0] == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert hb(h, member_id(1), e1)[0] == ErrorCode.NONE
    assert hb(h, member_id(2), -1)[0] == ErrorCode.NONE  # a leave frees one seat
    assert hb(h, member_id(3), 5)[0] == ErrorCode.UNKNOWN_MEMBER_ID
    assert hb(h, member_id(3), 0)[0] == ErrorCode.NONE
    assert hb(h, member_id(4), 0)[0] == ErrorCode.GROUP_MAX_SIZE_REACHED


def test_lowered_limit_after_restart_refuses_newcomers_only() -> None:
    h = share_harness(4)
    for k in range(4):
        hb(h, member_id(k), 0)
    h.restart(GroupCoordinatorConfig(group_share_max_size=2))
    h.shard.on_topics_changed(TopicsImage.of([("a", T1, 8)], 1), h.now)
    assert len(members(h)) == 4
    assert hb(h, member_id(9), 0)[0] == ErrorCode.GROUP_MAX_SIZE_REACHED
    epoch = h.shard.share.get(G).members[member_id(0)].member_epoch
    assert hb(h, member_id(0), epoch)[0] == ErrorCode.NONE
