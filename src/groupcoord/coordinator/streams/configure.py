"""Topology validation and internal topics (`streams.topics.InternalTopicManager`, with
`RepartitionTopics`, `ChangelogTopics` and `CopartitionedTopicsEnforcer`).

`configure_topics` decides the partition count of every repartition and changelog topic
from the source topics, enforces co-partitioning, and lists the internal topics still to
be created. A problem the application can outlive (missing source topics, missing or
wrongly partitioned internal topics) is a `TopicConfigurationError` carried in the result
and reported as a heartbeat status; an invalid topology raises `InvalidTopology`, which
fails the heartbeat with STREAMS_INVALID_TOPOLOGY.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from groupcoord.coordinator.streams.java_order import hash_map_order
from groupcoord.coordinator.streams.topology import StreamsTopology
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.logformat.generated.streams_group_topology import Subtopology, TopicInfo


class Status(enum.IntEnum):
    """`StreamsGroupHeartbeatResponse.Status` codes."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4
    ASSIGNMENT_DELAYED = 5
    MISSING_CLIENT_TAGS = 6


class InvalidTopology(Exception):
    """`StreamsInvalidTopologyException`."""


class IllegalTopologyState(Exception):
    """Kafka's `IllegalStateException` in topic configuration: UNKNOWN_SERVER_ERROR."""


class TopicConfigurationError(Exception):
    def __init__(self, status: Status, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class InternalTopic:
    """A topic to create (`CreatableTopic`): replication -1 means the broker default."""

    name: str
    num_partitions: int
    replication_factor: int
    configs: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ConfiguredSubtopology:
    number_of_tasks: int
    source_topics: frozenset[str]
    repartition_source_topics: dict[str, int]
    repartition_sink_topics: frozenset[str]
    state_changelog_topics: dict[str, int]


@dataclass(frozen=True, slots=True)
class ConfiguredTopology:
    topology_epoch: int
    metadata_hash: int
    subtopologies: dict[str, ConfiguredSubtopology] | None
    to_create: dict[str, InternalTopic] = field(default_factory=dict)
    error: TopicConfigurationError | None = None

    def is_ready(self) -> bool:
        """`ConfiguredTopology.isReady`: configured and nothing left to fix."""
        return self.subtopologies is not None and self.error is None


def summarize(topics: Iterable[str]) -> str:
    """`InternalTopicManager.summarizeTopics`: the first three, then a count. Kafka
    passes the keys of a HashMap, so callers give them in its order (`hash_map_order`)."""
    names = list(topics)
    if not names:
        return "<none>"
    shown = ", ".join(names[:3])
    return shown + (f" and {len(names) - 3} additional topics" if len(names) > 3 else "")


def configure_topics(topology: StreamsTopology, image: TopicsImage,
                     metadata_hash: int) -> ConfiguredTopology:
    try:
        _throw_on_missing_source_topics(topology, image)
        decided = _decide_partition_counts(topology, image)
        configured = {sid: _configured(s, image, decided)
                      for sid, s in sorted(topology.subtopologies.items())}
        to_create = _missing_internal_topics(topology, image, decided)
    except TopicConfigurationError as exc:
        return ConfiguredTopology(topology.epoch, metadata_hash, None, {}, exc)
    error = None
    if to_create:
        error = TopicConfigurationError(
            Status.MISSING_INTERNAL_TOPICS,
            "Internal topics are missing: " + summarize(hash_map_order(to_create)))
    return ConfiguredTopology(topology.epoch, metadata_hash, configured, to_create, error)


def _throw_on_missing_source_topics(topology: StreamsTopology, image: TopicsImage) -> None:
    missing = sorted({t for s in topology.subtopologies.values() for t in s.source_topics
                      if t not in image.by_name})
    if missing:
        raise TopicConfigurationError(Status.MISSING_SOURCE_TOPICS,
                                      f"Source topics {summarize(missing)} are missing.")


def _provider(image: TopicsImage, decided: dict[str, int]) -> Callable[[str], int | None]:
    def count(topic: str) -> int | None:
        found = image.by_name.get(topic)
        if found is not None:
            return found.num_partitions
        return decided.get(topic)
    return count


def _decide_partition_counts(topology: StreamsTopology, image: TopicsImage) -> dict[str, int]:
    decided: dict[str, int] = {}
    count = _provider(image, decided)
    subtopologies = list(topology.subtopologies.values())
    decided.update(_repartition_counts(subtopologies, count))
    fixed = {t.name for s in subtopologies for t in s.repartition_source_topics if t.partitions}
    flexible = {t.name for s in subtopologies for t in s.repartition_source_topics
                if not t.partitions}
    for s in subtopologies:
        for group in _copartition_groups(s):
            decided.update(_enforce_copartitioning(group, fixed, flexible, count))
    decided.update(_changelog_counts(subtopologies, count))
    return decided


def _repartition_counts(subtopologies: list[Subtopology],
                        count: Callable[[str], int | None]) -> dict[str, int]:
    """`RepartitionTopics.setup`: a sink topic takes the largest input of the
    subtopology writing it, iterating until every count is known."""
    counts = {t.name: t.partitions for s in subtopologies for t in s.repartition_source_topics
              if t.partitions}
    while True:
        needed = progress = False
        for s in subtopologies:
            for sink in s.repartition_sink_topics:
                if sink in counts:
                    continue
                candidates = [counts[t.name] for t in s.repartition_source_topics
                              if t.name in counts]
                candidates += [c for c in map(count, s.source_topics) if c is not None]
                if candidates:
                    counts[sink] = max(candidates)
                    progress = True
                else:
                    needed = True
        if needed and not progress:
            raise InvalidTopology("Failed to compute number of partitions for all repartition "
                                  "topics. There may be loops in the topology that cannot be "
                                  "resolved.")
        if not needed:
            break
    for s in subtopologies:
        if any(t.name not in counts for t in s.repartition_source_topics):
            raise InvalidTopology("Failed to compute number of partitions for all repartition "
                                  "topics, because a repartition source topic is never used "
                                  "as a sink topic.")
    return counts


def _copartition_groups(s: Subtopology) -> list[set[str]]:
    return [{s.source_topics[i] for i in g.source_topics}
            | {s.repartition_source_topics[i].name for i in g.repartition_source_topics}
            for g in s.copartition_groups]


def _enforce_copartitioning(group: set[str], fixed: set[str], flexible: set[str],
                            count: Callable[[str], int | None]) -> dict[str, int]:
    """`CopartitionedTopicsEnforcer.enforce`."""
    if not group:
        return {}

    def known(topic: str) -> int:
        found = count(topic)
        if found is None:
            raise IllegalTopologyState(f"Number of partitions is not set for topic: {topic}")
        return found
    repartition = {t: known(t) for t in group if t in fixed or t in flexible}
    others = {t: known(t) for t in group if t not in repartition}
    if set(repartition) == group:
        if fixed:
            first = known(next(iter(fixed)))
            if any(known(t) != first for t in fixed):
                raise TopicConfigurationError(
                    Status.INCORRECTLY_PARTITIONED_TOPICS,
                    "Following topics do not have the same number of partitions: "
                    f"[{_java_map(repartition)}]")
            use = first
        else:
            use = max(repartition.values(), default=0)
            if use == 0:
                raise InvalidTopology("All topics in the copartition group had undefined "
                                      f"partition number: {sorted(repartition)}")
    else:
        use = next(iter(others.values()))
        if any(v != use for v in others.values()):
            raise TopicConfigurationError(
                Status.INCORRECTLY_PARTITIONED_TOPICS,
                "Following topics do not have the same number of partitions: "
                f"[{_java_map(others)}]")
    for topic, found in repartition.items():
        if topic in fixed and found != use:
            raise TopicConfigurationError(
                Status.INCORRECTLY_PARTITIONED_TOPICS,
                f"Number of partitions [{found}] of repartition topic [{topic}] doesn't match "
                f"number of partitions [{use}] of the source topic.")
    return dict.fromkeys(repartition, use)


def _java_map(counts: dict[str, int]) -> str:
    """A sorted map as Java's `TreeMap.toString` prints it, without the braces' content
    quoting: `{a=1, b=2}`."""
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) + "}"


def _changelog_counts(subtopologies: list[Subtopology],
                      count: Callable[[str], int | None]) -> dict[str, int]:
    """`ChangelogTopics.setup`: a changelog has as many partitions as the subtopology
    has tasks."""
    out: dict[str, int] = {}
    for s in subtopologies:
        inputs = list(s.source_topics) + [t.name for t in s.repartition_source_topics]
        if not inputs:
            raise InvalidTopology(f"No source topics found for subtopology {s.subtopology_id}")
        tasks = max(_known(count, t) for t in inputs)
        for t in s.state_changelog_topics:
            out[t.name] = tasks
    return out


def _known(count: Callable[[str], int | None], topic: str) -> int:
    found = count(topic)
    if found is None:
        raise IllegalTopologyState(f"No partition count for source topic {topic}")
    return found


def _configured(s: Subtopology, image: TopicsImage,
                decided: dict[str, int]) -> ConfiguredSubtopology:
    count = _provider(image, decided)
    inputs = list(s.source_topics) + [t.name for t in s.repartition_source_topics]
    return ConfiguredSubtopology(
        number_of_tasks=max(_known(count, t) for t in inputs),
        source_topics=frozenset(s.source_topics),
        repartition_source_topics={t.name: _internal_count(t, decided)
                                   for t in s.repartition_source_topics},
        repartition_sink_topics=frozenset(s.repartition_sink_topics),
        state_changelog_topics={t.name: _internal_count(t, decided)
                                for t in s.state_changelog_topics})


def _internal_count(info: TopicInfo, decided: dict[str, int]) -> int:
    if info.partitions:
        return int(info.partitions)
    if info.name not in decided:
        raise IllegalTopologyState(f"Number of partitions must be set for topic {info.name}")
    return decided[info.name]


def _creatable(info: TopicInfo, partitions: int) -> InternalTopic:
    replication = info.replication_factor if info.replication_factor else -1
    return InternalTopic(info.name, partitions, replication,
                         tuple((c.key, c.value) for c in info.topic_configs))


def _missing_internal_topics(topology: StreamsTopology, image: TopicsImage,
                             decided: dict[str, int]) -> dict[str, InternalTopic]:
    """`missingInternalTopics`: internal topics not in the image; an existing one with
    another partition count is INCORRECTLY_PARTITIONED_TOPICS."""
    wanted: dict[str, InternalTopic] = {}
    for s in topology.subtopologies.values():
        for info in list(s.repartition_source_topics) + list(s.state_changelog_topics):
            wanted[info.name] = _creatable(info, _internal_count(info, decided))
    for topic in sorted(topology.required_topics()):
        found = image.by_name.get(topic)
        expected = wanted.pop(topic, None) if found is not None else None
        if found is not None and expected is not None \
                and found.num_partitions != expected.num_partitions:
            raise TopicConfigurationError(
                Status.INCORRECTLY_PARTITIONED_TOPICS,
                f"Existing topic {topic} has different number of partitions: expected "
                f"{expected.num_partitions}, found {found.num_partitions}")
    return wanted
