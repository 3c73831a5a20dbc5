"""A manual-clock harness for KIP-848 consumer groups, on top of the classic harness."""

from __future__ import annotations

from typing import Any

from coord_harness import Harness

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    TopicPartitions,
)

GROUP = "cg"
IMMEDIATE = GroupCoordinatorConfig(group_consumer_assignment_interval_ms=0)


def tid(name: str) -> bytes:
    """A readable, fixed topic id per name."""
    return name.encode().ljust(16, b"\x00")[:16]


class CgHarness(Harness):
    def __init__(self, config: GroupCoordinatorConfig | None = None,
                 topics: dict[str, int] | None = None, **kw: Any) -> None:
        # Interval 0 (as Kafka's request tests set it): every epoch bump computes a target at
        # once, so a test sees each rebalance step; batching has its own tests.
        super().__init__(config or IMMEDIATE, **kw)
        self.version = 0
        self.set_topics(topics if topics is not None else {"foo": 6, "bar": 3})

    def set_topics(self, topics: dict[str, int]) -> None:
        self.version += 1
        self.image = TopicsImage.of([(n, tid(n), c) for n, c in topics.items()], self.version)
        self.apply(self.shard.on_topics_changed(self.image, self.now))

    def restart(self, config: GroupCoordinatorConfig | None = None) -> None:
        super().restart(config)
        # The reloaded shard learns the topics as the server's would, from the metadata.
        self.apply(self.shard.on_topics_changed(self.image, self.now))

    def hb(self, member_id: str = "", epoch: int = 0, *, group_id: str = GROUP,
           topics: list[str] | None = None, regex: str | None = None,
           owned: dict[str, list[int]] | None = None, instance_id: str | None = None,
           rebalance_ms: int = -1, assignor: str | None = None, version: int = 1,
           rack: str | None = None, client_id: str = "client") -> Any:
        if epoch == 0:
            rebalance_ms = 30_000 if rebalance_ms == -1 else rebalance_ms
            owned = owned if owned is not None else {}
            if topics is None and regex is None:
                topics = ["foo"]
        req = ConsumerGroupHeartbeatRequest(
            group_id=group_id, member_id=member_id, member_epoch=epoch,
            instance_id=instance_id, rack_id=rack, rebalance_timeout_ms=rebalance_ms,
            subscribed_topic_names=topics, subscribed_topic_regex=regex,
            server_assignor=assignor,
            topic_partitions=None if owned is None else [
                TopicPartitions(topic_id=tid(t), partitions=ps) for t, ps in owned.items()])
        _token, result = self.call("consumer_group_heartbeat", req, version, client_id)
        return result.response

    @staticmethod
    def assigned(resp: Any) -> dict[str, list[int]]:
        if resp.assignment is None:
            return {}
        return {bytes(tp.topic_id).rstrip(b"\x00").decode(): sorted(tp.partitions)
                for tp in resp.assignment.topic_partitions}

    def group(self, group_id: str = GROUP) -> Any:
        return self.shard.consumer.groups[group_id]


SHORT = {
    "ConsumerGroupMetadataKey": "GroupMeta",
    "ConsumerGroupMemberMetadataKey": "Member",
    "ConsumerGroupTargetAssignmentMemberKey": "Target",
    "ConsumerGroupTargetAssignmentMetadataKey": "TargetMeta",
    "ConsumerGroupCurrentMemberAssignmentKey": "Current",
    "ConsumerGroupRegularExpressionKey": "Regex",
    "GroupMetadataKey": "Classic",
    "OffsetCommitKey": "Offset",
}


def kinds(records: list[Any]) -> list[str]:
    """Record kinds in order; a trailing "-" marks a tombstone."""
    return [SHORT[type(r.key).__name__] + ("-" if r.value is None else "") for r in records]


def last_records(h: CgHarness, start: int) -> list[str]:
    return kinds(h.log[start:])
