"""Streams-group test helpers over the manual-clock `Harness`: a word-count topology
(source topic -> repartition topic -> stateful counting subtopology), heartbeats built
the way the Kafka Streams client builds them, and the topics image.
"""

from __future__ import annotations

from typing import Any

from coord_harness import Harness

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.generated import streams_group_heartbeat as hb

GROUP = "wordcount"
INPUT = "words"
REPARTITION = "wordcount-counts-repartition"
CHANGELOG = "wordcount-counts-changelog"


def word_count_topology(epoch: int = 0) -> hb.Topology:
    return hb.Topology(epoch=epoch, subtopologies=[
        hb.Subtopology(subtopology_id="0", source_topics=[INPUT],
                       repartition_sink_topics=[REPARTITION]),
        hb.Subtopology(subtopology_id="1",
                       repartition_source_topics=[hb.TopicInfo(name=REPARTITION)],
                       state_changelog_topics=[hb.TopicInfo(
                           name=CHANGELOG, topic_configs=[
                               hb.KeyValue(key="cleanup.policy", value="compact")])]),
    ])


def tasks(assignment: dict[str, list[int]] | None) -> list[hb.TaskIds] | None:
    if assignment is None:
        return None
    return [hb.TaskIds(subtopology_id=s, partitions=p) for s, p in sorted(assignment.items())]


class StreamsHarness(Harness):
    def __init__(self, config: GroupCoordinatorConfig | None = None, **kw: Any) -> None:
        super().__init__(config or GroupCoordinatorConfig(
            group_streams_initial_rebalance_delay_ms=0, group_streams_assignment_interval_ms=0),
            **kw)
        self.topics: dict[str, int] = {}
        self.image_version = 0

    def create_topic(self, name: str, partitions: int) -> None:
        self.topics[name] = partitions
        self.image_version += 1
        image = TopicsImage.of([(n, n.encode().ljust(16, b"\0")[:16], c)
                                for n, c in self.topics.items()], self.image_version)
        self.apply(self.shard.on_topics_changed(image, self.now))

    def create_internal(self, result: Any) -> None:
        for topic in result.topics_to_create.values():
            self.create_topic(topic.name, topic.num_partitions)

    def streams_heartbeat(self, member_id: str, epoch: int, *, process: str = "p1",
                          active: dict[str, list[int]] | None = None,
                          standby: dict[str, list[int]] | None = None,
                          warmup: dict[str, list[int]] | None = None,
                          topology: hb.Topology | None = None, instance_id: str | None = None,
                          rebalance_timeout_ms: int = -1, group_id: str = GROUP,
                          version: int = 1) -> Any:
        """The response's `HeartbeatResult`; a join sends the topology and empty tasks."""
        joining = epoch == 0
        if joining:
            topology = topology or word_count_topology()
            active, standby, warmup = active or {}, standby or {}, warmup or {}
            rebalance_timeout_ms = 300_000 if rebalance_timeout_ms == -1 else rebalance_timeout_ms
        request = hb.StreamsGroupHeartbeatRequest(
            group_id=group_id, member_id=member_id, member_epoch=epoch,
            instance_id=instance_id, rebalance_timeout_ms=rebalance_timeout_ms,
            topology=topology, active_tasks=tasks(active), standby_tasks=tasks(standby),
            warmup_tasks=tasks(warmup), process_id=process if joining else None)
        _, result = self.call("streams_group_heartbeat", request, version)
        return result.response

    def group(self, group_id: str = GROUP) -> Any:
        return self.shard.streams.groups[group_id]


def ids(task_ids: list[hb.TaskIds] | None) -> dict[str, list[int]] | None:
    if task_ids is None:
        return None
    return {t.subtopology_id: sorted(t.partitions) for t in task_ids}
