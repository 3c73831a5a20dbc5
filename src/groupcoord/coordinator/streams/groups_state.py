"""The streams groups of one shard and what is kept beside them: the topics image (input
from the runtime), the epochs rebalance timers were armed at, the groups whose initial
rebalance delay is pending, and each group's effective settings.

What the heartbeat and membership steps read and update; `StreamsGroups` (`manager`)
adds the RPC entry points, replay, timers and admin over it.
"""

from __future__ import annotations

from collections.abc import Mapping

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.streams import group_config
from groupcoord.coordinator.streams.group import StreamsGroup
from groupcoord.coordinator.streams.group_config import StreamsGroupSettings
from groupcoord.coordinator.streams.target import NUM_STANDBY_REPLICAS, RACK_AWARE_ASSIGNMENT_TAGS
from groupcoord.coordinator.topics import TopicsImage


class StreamsGroupsState:
    """The shard's streams groups by id, with their soft state and settings."""

    def __init__(self, config: GroupCoordinatorConfig) -> None:
        self.config = config
        self.groups: dict[str, StreamsGroup] = {}
        self.image = TopicsImage()
        self.rebalance_epochs: dict[tuple[str, str], int] = {}
        self.initial_delays: set[str] = set()
        # Groups with `streams.*` overrides (GroupConfigManager's view), as the last
        # heartbeat brought them; soft state, like the timers that use them.
        self.group_settings: dict[str, StreamsGroupSettings] = {}
        self.broker_settings = group_config.settings(config, None)

    def settings(self, group_id: str) -> StreamsGroupSettings:
        """The group's effective settings: its overrides, else the broker's."""
        return self.group_settings.get(group_id, self.broker_settings)

    def _set_overrides(self, group_id: str, overrides: Mapping[str, str]) -> None:
        current = group_config.settings(self.config, overrides)
        if current == self.broker_settings:
            self.group_settings.pop(group_id, None)
        else:
            self.group_settings[group_id] = current

    def assignment_configs(self, group_id: str) -> dict[str, str]:
        """`streamsGroupAssignmentConfigs`."""
        found = self.settings(group_id)
        configs = {NUM_STANDBY_REPLICAS: str(found.num_standby_replicas)}
        if found.rack_aware_assignment_tags:
            configs[RACK_AWARE_ASSIGNMENT_TAGS] = ",".join(found.rack_aware_assignment_tags)
        return configs
