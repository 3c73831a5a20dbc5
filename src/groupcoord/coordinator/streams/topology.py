"""A streams group's topology (`StreamsTopology`): subtopologies as the group's
StreamsGroupTopologyValue record holds them, built from the joining member's heartbeat
(`StreamsCoordinatorRecordHelpers.convertToStreamsGroupTopologyRecord`) or from the record
on replay, so live and reloaded topologies compare equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from groupcoord.logformat.generated import streams_group_topology as rec


@dataclass(frozen=True, slots=True)
class StreamsTopology:
    epoch: int
    subtopologies: dict[str, rec.Subtopology]

    @classmethod
    def from_record(cls, value: rec.StreamsGroupTopologyValue) -> StreamsTopology:
        return cls(value.epoch, {s.subtopology_id: s for s in value.subtopologies})

    @classmethod
    def from_request(cls, topology: Any) -> StreamsTopology:
        return cls.from_record(record_value(topology))

    def required_topics(self) -> set[str]:
        """Source, repartition-source and changelog topics (`requiredTopics`)."""
        out: set[str] = set()
        for s in self.subtopologies.values():
            out.update(s.source_topics)
            out.update(t.name for t in s.repartition_source_topics)
            out.update(t.name for t in s.state_changelog_topics)
        return out

    def is_stateful(self, subtopology_id: str) -> bool:
        return bool(self.subtopologies[subtopology_id].state_changelog_topics)


def _topic_info(info: Any) -> rec.TopicInfo:
    configs = [rec.TopicConfig(key=c.key, value=c.value) for c in info.topic_configs or []]
    return rec.TopicInfo(name=info.name, partitions=info.partitions,
                         replication_factor=info.replication_factor, topic_configs=configs)


def record_value(topology: Any) -> rec.StreamsGroupTopologyValue:
    """The heartbeat's Topology as the record value, field for field."""
    subtopologies = []
    for s in topology.subtopologies:
        subtopologies.append(rec.Subtopology(
            subtopology_id=s.subtopology_id,
            source_topics=list(s.source_topics),
            source_topic_regex=list(s.source_topic_regex),
            state_changelog_topics=[_topic_info(t) for t in s.state_changelog_topics],
            repartition_sink_topics=list(s.repartition_sink_topics),
            repartition_source_topics=[_topic_info(t) for t in s.repartition_source_topics],
            copartition_groups=[rec.CopartitionGroup(
                source_topics=list(g.source_topics),
                source_topic_regex=list(g.source_topic_regex),
                repartition_source_topics=list(g.repartition_source_topics))
                for g in s.copartition_groups]))
    return rec.StreamsGroupTopologyValue(epoch=topology.epoch, subtopologies=subtopologies)
