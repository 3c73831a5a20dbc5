"""Topology validation and internal topics, following Kafka's `InternalTopicManagerTest`,
`RepartitionTopicsTest`, `ChangelogTopicsTest` and `CopartitionedTopicsEnforcerTest`
(group-coordinator/src/test/java/org/apache/kafka/coordinator/group/streams/topics/, 4.4)."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.streams.configure import (
    InvalidTopology,
    Status,
    configure_topics,
    summarize,
)
from groupcoord.coordinator.streams.topology import StreamsTopology
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.logformat.generated import streams_group_topology as rec


def image(**topics: int) -> TopicsImage:
    return TopicsImage.of([(n, n.encode().ljust(16, b"\0")[:16], c) for n, c in topics.items()],
                          1)


def info(name: str, partitions: int = 0, **configs: str) -> rec.TopicInfo:
    return rec.TopicInfo(name=name, partitions=partitions,
                         topic_configs=[rec.TopicConfig(key=k.replace("_", "."), value=v)
                                        for k, v in configs.items()])


def sub(sid: str, source: list[str] | None = None, sinks: list[str] | None = None,
        repartition: list[rec.TopicInfo] | None = None,
        changelogs: list[rec.TopicInfo] | None = None,
        copartition: list[rec.CopartitionGroup] | None = None) -> rec.Subtopology:
    return rec.Subtopology(subtopology_id=sid, source_topics=source or [],
                           repartition_sink_topics=sinks or [],
                           repartition_source_topics=repartition or [],
                           state_changelog_topics=changelogs or [],
                           copartition_groups=copartition or [])


def topology(*subtopologies: rec.Subtopology) -> StreamsTopology:
    return StreamsTopology(0, {s.subtopology_id: s for s in subtopologies})


WORD_COUNT = topology(
    sub("0", ["words"], sinks=["app-rep"]),
    sub("1", repartition=[info("app-rep")],
        changelogs=[info("app-chg", cleanup_policy="compact")]))


def test_configure_topics_sets_configuration_exception_when_source_topic_is_missing() -> None:
    """`testConfigureTopicsSetsConfigurationExceptionWhenSourceTopicIsMissing`."""
    configured = configure_topics(WORD_COUNT, image(), 0)
    assert configured.subtopologies is None and not configured.is_ready()
    assert configured.error is not None
    assert configured.error.status == Status.MISSING_SOURCE_TOPICS
    assert configured.error.message == "Source topics words are missing."


def test_configure_topics_lists_internal_topics_to_create() -> None:
    """`testConfigureTopics`: repartition counts from the upstream source, changelogs as
    many partitions as the subtopology has tasks; both missing until created."""
    configured = configure_topics(WORD_COUNT, image(words=4), 7)
    assert configured.metadata_hash == 7
    assert {t.name: t.num_partitions for t in configured.to_create.values()} == \
        {"app-rep": 4, "app-chg": 4}
    assert configured.to_create["app-chg"].configs == (("cleanup.policy", "compact"),)
    assert configured.to_create["app-rep"].replication_factor == -1
    assert configured.error is not None
    assert configured.error.status == Status.MISSING_INTERNAL_TOPICS
    assert configured.error.message == "Internal topics are missing: app-rep, app-chg"
    assert configured.subtopologies is not None
    assert configured.subtopologies["1"].number_of_tasks == 4
    assert configured.subtopologies["1"].state_changelog_topics == {"app-chg": 4}


def test_topology_is_ready_once_internal_topics_exist() -> None:
    configured = configure_topics(WORD_COUNT, image(words=4, **{"app-rep": 4, "app-chg": 4}), 0)
    assert configured.is_ready() and configured.to_create == {}


def test_existing_internal_topic_with_other_partition_count() -> None:
    """`InternalTopicManager.missingInternalTopics`."""
    configured = configure_topics(WORD_COUNT, image(words=4, **{"app-rep": 2}), 0)
    assert configured.error is not None
    assert configured.error.status == Status.INCORRECTLY_PARTITIONED_TOPICS
    assert configured.error.message == \
        "Existing topic app-rep has different number of partitions: expected 4, found 2"


def test_repartition_count_from_upstream_internal_repartition_source_topic() -> None:
    """`shouldSetRepartitionTopicPartitionCountFromUpstreamInternalRepartitionSourceTopic`."""
    t = topology(sub("0", ["in"], sinks=["r1"]),
                 sub("1", repartition=[info("r1")], sinks=["r2"]),
                 sub("2", repartition=[info("r2")]))
    configured = configure_topics(t, image(**{"in": 3}), 0)
    assert {n: c.num_partitions for n, c in configured.to_create.items()} == {"r1": 3, "r2": 3}


def test_explicit_repartition_partition_count_wins() -> None:
    t = topology(sub("0", ["in"], sinks=["r1"]), sub("1", repartition=[info("r1", 5)]))
    configured = configure_topics(t, image(**{"in": 3}), 0)
    assert configured.to_create["r1"].num_partitions == 5


def test_invalid_topology_if_partition_count_cannot_be_computed_due_to_loops() -> None:
    """`...CannotBeComputedForAllRepartitionTopicsDueToLoops`."""
    t = topology(sub("0", sinks=["r2"], repartition=[info("r1")]),
                 sub("1", sinks=["r1"], repartition=[info("r2")]))
    with pytest.raises(InvalidTopology, match="There may be loops in the topology"):
        configure_topics(t, image(), 0)


def test_invalid_topology_if_a_repartition_source_topic_is_never_a_sink() -> None:
    """`...CannotBeComputedForAllRepartitionTopicsDueToMissingSinks`."""
    t = topology(sub("0", ["in"]), sub("1", repartition=[info("r1")]))
    with pytest.raises(InvalidTopology, match="is never used as a sink topic"):
        configure_topics(t, image(**{"in": 1}), 0)


def test_copartitioned_source_topics_must_match() -> None:
    """`shouldThrowTopicConfigurationExceptionIfPartitionCountsForCoPartitionedTopicsDontMatch`."""
    t = topology(sub("0", ["a", "b"], copartition=[rec.CopartitionGroup(source_topics=[0, 1])]))
    configured = configure_topics(t, image(a=2, b=1), 0)
    assert configured.error is not None
    assert configured.error.status == Status.INCORRECTLY_PARTITIONED_TOPICS
    assert configured.error.message == \
        "Following topics do not have the same number of partitions: [{a=2, b=1}]"


def test_enforce_copartitioning_on_repartition_topics() -> None:
    """`shouldEnforceCopartitioningOnRepartitionTopics`: a flexible repartition topic
    co-partitioned with a source topic takes the source's count."""
    t = topology(sub("0", ["big"], sinks=["r1"]),
                 sub("1", ["small"], repartition=[info("r1")],
                     copartition=[rec.CopartitionGroup(source_topics=[0],
                                                       repartition_source_topics=[0])]))
    configured = configure_topics(t, image(big=8, small=2), 0)
    assert configured.to_create["r1"].num_partitions == 2


def test_enforced_repartition_topics_with_different_counts() -> None:
    """`shouldThrowAnExceptionIfTopicInfosWithEnforcedNumOfPartitionsHaveDifferentNumOfPartitions`."""
    t = topology(sub("0", ["in"], sinks=["r1", "r2"]),
                 sub("1", repartition=[info("r1", 10), info("r2", 5)],
                     copartition=[rec.CopartitionGroup(repartition_source_topics=[0, 1])]))
    configured = configure_topics(t, image(**{"in": 1}), 0)
    assert configured.error is not None
    assert configured.error.status == Status.INCORRECTLY_PARTITIONED_TOPICS
    assert configured.error.message == \
        "Following topics do not have the same number of partitions: [{r1=10, r2=5}]"


def test_summarize_topics() -> None:
    """`InternalTopicManager.summarizeTopics`."""
    assert summarize([]) == "<none>"
    assert summarize(["a", "b", "c", "d", "e"]) == "a, b, c and 2 additional topics"
