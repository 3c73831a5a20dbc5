"""ShareGroupHeartbeat through a coordinator `Harness`, with the share-state initialization
that follows it (the persister's part succeeds at once, as the in-process persister does)."""

from __future__ import annotations

from coord_harness import Harness

from groupcoord.coordinator.share import state_ops
from groupcoord.coordinator.share.heartbeat import HeartbeatReply
from groupcoord.coordinator.share.state_metadata import TopicInit
from groupcoord.wire.generated.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)


def complete_initialization(h: Harness, reply: HeartbeatReply) -> None:
    """What runs after the reply: record 15 with the heartbeat's partitions initialized."""
    if reply.initialize is not None:
        h.apply(state_ops.complete_initialize(h.shard, reply.initialize.group_id,
                                              reply.initialize.topics))


def share_heartbeat(h: Harness, request: ShareGroupHeartbeatRequest, version: int = 1,
                    initialize: bool = True) -> ShareGroupHeartbeatResponse:
    """One heartbeat; with `initialize`, the initialization it asked for completes."""
    _, result = h.call("share_group_heartbeat", request, version)
    reply = result.response
    assert isinstance(reply, HeartbeatReply)
    if initialize:
        complete_initialization(h, reply)
    return reply.response


def initialized_group(h: Harness, group: str) -> None:
    """Create `group` empty with every partition of the shard's topics initialized, as
    AlterShareGroupOffsets leaves it: its first member is assigned at once."""
    parts = {t.topic_id: TopicInit(t.name, frozenset(range(t.num_partitions)))
             for t in h.shard.share.image.by_id.values()}
    h.apply(state_ops.begin_alter_offsets(h.shard, group, parts))
    h.apply(state_ops.complete_initialize(h.shard, group, parts))
