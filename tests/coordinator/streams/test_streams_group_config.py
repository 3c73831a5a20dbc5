"""`streams.*` group configs, following Kafka's `GroupConfig.validate` (4.4) and
`GroupMetadataManager`'s per-group reads (`streamsGroupSessionTimeoutMs`,
`streamsGroupHeartbeatIntervalMs`, `streamsGroupAssignmentConfigs`, ...)."""

from __future__ import annotations

import pytest
from sg_harness import CHANGELOG, GROUP, INPUT, REPARTITION, StreamsHarness, word_count_topology

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.result import OpContext
from groupcoord.coordinator.streams import group_config as gc
from groupcoord.wire.generated import streams_group_heartbeat as hb

BROKER = GroupCoordinatorConfig()


@pytest.mark.parametrize(("changes", "message"), [
    ({gc.STANDBYS: "3"}, "streams.num.standby.replicas must be less than or equal to 2"),
    ({gc.STANDBYS: "-1"}, ("Invalid value -1 for configuration streams.num.standby.replicas: "
                           "Value must be at least 0")),
    ({gc.SESSION: "1000"}, ("streams.session.timeout.ms must be in the range 45000 to 60000 "
                            "inclusive.")),
    ({gc.HEARTBEAT: "15000", gc.SESSION: "15000"},
     "streams.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
    ({gc.RACK_TAGS: "zone, zone"},
     "streams.rack.aware.assignment.tags must not contain duplicate tag keys."),
    ({gc.ASSIGNOR: "fancy"}, ("streams.assignor.name 'fancy' is not a registered task "
                              "assignor. Registered assignors are: [sticky].")),
    ({gc.INITIAL_DELAY: "soon"}, ("Invalid value soon for configuration "
                                  "streams.initial.rebalance.delay.ms: Not a number of type "
                                  "INT")),
    ({gc.TASK_OFFSET_INTERVAL: "100"},
     "streams.task.offset.interval.ms must be greater than or equal to 15000"),
])
def test_validate_rejects(changes: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError) as raised:
        gc.validate(BROKER, {}, changes)
    assert str(raised.value) == message


def test_session_must_exceed_heartbeat() -> None:
    """`validateSessionExceedsHeartbeat`, against the broker value of the unset one."""
    broker = GroupCoordinatorConfig(group_streams_min_session_timeout_ms=5000,
                                    group_streams_max_heartbeat_interval_ms=60000)
    with pytest.raises(ValueError, match="^streams.session.timeout.ms must be greater than "
                                         "streams.heartbeat.interval.ms$"):
        gc.validate(broker, {gc.HEARTBEAT: "9000"}, {gc.SESSION: "9000"})
    gc.validate(broker, {}, {gc.SESSION: "9000"})


def test_settings_fall_back_to_the_broker() -> None:
    found = gc.settings(BROKER, {gc.STANDBYS: "1", gc.RACK_TAGS: "zone , rack"})
    assert (found.num_standby_replicas, found.session_timeout_ms,
            found.rack_aware_assignment_tags) == (1, 45_000, ("zone", "rack"))


def test_overrides_reach_the_heartbeat_and_the_assignment() -> None:
    h = StreamsHarness()
    for topic in (INPUT, REPARTITION, CHANGELOG):
        h.create_topic(topic, 2)
    request = hb.StreamsGroupHeartbeatRequest(
        group_id=GROUP, member_id="m1", member_epoch=0, rebalance_timeout_ms=1000,
        topology=word_count_topology(), active_tasks=[],
        standby_tasks=[], warmup_tasks=[], process_id="p1")
    overrides = {gc.HEARTBEAT: "2000", gc.STANDBYS: "1", gc.SESSION: "50000"}
    result = h.shard.streams_group_heartbeat(request, 1, OpContext("c", "/h", 1), h.now,
                                             overrides)
    h.apply(result)
    response = result.response.response
    assert response.heartbeat_interval_ms == 2000
    meta = next(r.value for r in h.log if type(r.key).__name__ == "StreamsGroupMetadataKey")
    assert [(c.key, c.value) for c in meta.last_assignment_configs] == \
        [("num.standby.replicas", "1")]
    assert h.timers[("streams-session", GROUP, "m1")] == h.now + 50_000
