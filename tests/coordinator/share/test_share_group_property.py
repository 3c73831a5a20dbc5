"""Property: for any sequence of share-group heartbeats, leaves, clock advances and
share-state initializations (record 15), the
shard rebuilt from the written records equals the live shard, member epochs never go
back, and every assigned partition exists and is subscribed to."""

from __future__ import annotations

from coord_harness import Harness
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.share import state_ops
from groupcoord.coordinator.share.state_metadata import InitializeRequest
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.generated.share_group_heartbeat import ShareGroupHeartbeatRequest

TOPICS = {"a": (bytes([1] * 16), 3), "b": (bytes([2] * 16), 2)}
MEMBERS = ["m1", "m2", "m3", "m4"]

step = st.one_of(
    st.tuples(st.just("join"), st.sampled_from(MEMBERS),
              st.lists(st.sampled_from(sorted(TOPICS)), min_size=1, max_size=2, unique=True)),
    st.tuples(st.just("beat"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("tick"), st.integers(1_000, 50_000)),
    st.tuples(st.just("init"), st.booleans()),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(step, max_size=30))
def test_share_group_replay_and_invariants(steps: list) -> None:
    h = Harness()
    h.shard.on_topics_changed(TopicsImage.of([(n, t, c) for n, (t, c) in TOPICS.items()], 1), 0)
    seen: dict[str, int] = {}
    pending: list[InitializeRequest] = []
    for item in steps:
        if item[0] == "tick":
            h.advance(item[1])
            continue
        if item[0] == "init":
            # The oldest initialization a heartbeat asked for completes or fails.
            if pending:
                request = pending.pop(0)
                h.apply(state_ops.complete_initialize(h.shard, "g", request.topics) if item[1]
                        else state_ops.uninitialize(h.shard, "g", request.partitions()))
            continue
        group = h.shard.share.get("g")
        member = group.members.get(item[1]) if group is not None else None
        if item[0] == "join":
            epoch, names = 0, item[2]
        elif member is None:
            continue
        else:
            epoch, names = (member.member_epoch if item[0] == "beat" else -1), None
        req = ShareGroupHeartbeatRequest(group_id="g", member_id=item[1], member_epoch=epoch,
                                         subscribed_topic_names=names)
        _, result = h.call("share_group_heartbeat", req, 1)
        resp = result.response.response
        if result.response.initialize is not None:
            pending.append(result.response.initialize)
        if resp.error_code == 0 and epoch >= 0:
            assert resp.member_epoch >= seen.get(item[1], 0)
            seen[item[1]] = resp.member_epoch
    group = h.shard.share.get("g")
    for member in (group.members.values() if group is not None else ()):
        subscribed = {TOPICS[n][0] for n in member.subscribed_topic_names}
        initialized = group.state_metadata.initialized_partitions() \
            if group.state_metadata is not None else {}
        for topic_id, parts in member.assigned.items():
            assert topic_id in subscribed
            # Only share-partitions whose state is initialized are ever assigned.
            assert parts <= initialized.get(topic_id, set())
            count = next(c for t, c in TOPICS.values() if t == topic_id)
            assert all(0 <= p < count for p in parts)
    assert h.fresh_replay().snapshot() == h.shard.snapshot()
