"""Counts taken from the coordinator's group events (`server.group_events`) and stats
(`coordinator.stats`): rebalances by protocol, group and cause, and Kafka's KIP-1301
sensors with their windowed rates.

A rebalance is a classic group's `rebalance_started` event, or a `group_epoch_bumped`
event of a consumer (KIP-848), streams or share group (docs/group-events.md). Its cause is the
event's reason reduced to one of `CAUSES`: reasons carry member ids and client text, which
would make a label without bound.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable

from groupcoord.coordinator.result import GroupEvent

# (text the reason contains, cause), first match wins; anything else is "other".
CAUSE_RULES: tuple[tuple[str, str], ...] = (
    ("Adding new member", "member_joined"),
    ("member joined", "member_joined"),
    ("is joining group during", "member_rejoined"),
    ("LeaveGroup", "member_left"),
    ("left the group", "member_left"),
    ("static member", "static_member_replaced"),
    ("heartbeat expiration", "session_timeout"),
    ("session timeout", "session_timeout"),
    ("pending sync request expiration", "sync_timeout"),
    ("did not sync in time", "sync_timeout"),
    ("did not rejoin in time", "rebalance_timeout"),
    ("rebalance timeout", "rebalance_timeout"),
    ("in time", "rebalance_timeout"),
    ("subscription changed", "subscription_changed"),
    ("member metadata changed", "member_metadata_changed"),
    ("topic metadata changed", "metadata_changed"),
    ("topology validated", "topology_validated"),
    ("partitions initialized", "partitions_initialized"),
    ("assignment configs changed", "assignment_configs_changed"),
    ("over capacity", "group_over_capacity"),
    ("downgraded", "protocol_downgraded"),
)
CAUSES = tuple(dict.fromkeys(cause for _, cause in CAUSE_RULES)) + ("other",)
#: Groups whose rebalances are counted past the group limit, together.
OTHER_GROUPS = "__other__"
# Kafka's sensors use two 30-second samples; rates here average over the same span.
RATE_WINDOW_MS = 60_000


def cause_of(reason: str | None) -> str:
    text = reason or ""
    for needle, cause in CAUSE_RULES:
        if needle in text:
            return cause
    return "other"


class WindowedRate:
    """Kafka's `-rate` of a monotonic total: its growth per second over the window, read
    from the totals seen at each scrape."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: deque[tuple[int, int]] = deque()

    def rate(self, total: int, now_ms: int) -> float:
        seen = self._seen
        while seen and now_ms - seen[0][0] > RATE_WINDOW_MS:
            seen.popleft()
        if not seen or seen[-1][0] < now_ms:
            seen.append((now_ms, total))
        first_ms, first_total = seen[0]
        if now_ms <= first_ms:
            return 0.0
        return (total - first_total) * 1000.0 / (now_ms - first_ms)


class GroupCounters:
    """Totals since the broker started; `max_groups` bounds the groups counted by name."""

    def __init__(self, max_groups: int) -> None:
        self.max_groups = max_groups
        # KIP-1301 sensor name (without -count/-rate) -> total.
        self.totals: Counter[str] = Counter()
        # (protocol, cause) -> rebalances, every group.
        self.rebalances: Counter[tuple[str, str]] = Counter()
        # group -> (protocol, cause) -> rebalances, for at most `max_groups` groups.
        self.group_rebalances: dict[str, Counter[tuple[str, str]]] = {}
        self.rates: dict[str, WindowedRate] = {}

    def observe(self, events: Iterable[GroupEvent]) -> None:
        for event in events:
            kind = event.kind
            if kind == "rebalance_started":
                self._rebalance(event, "classic")
            elif kind == "group_epoch_bumped":
                protocol = event.detail.get("protocol")
                if isinstance(protocol, str):
                    self._rebalance(event, protocol)
                    self.totals[f"{protocol}-group-rebalance"] += 1
            elif kind == "rebalance_completed":
                self.totals["group-completed-rebalance"] += 1
            elif kind == "offsets_expired":
                partitions = event.detail.get("partitions", 0)
                self.totals["offset-expiration"] += partitions if isinstance(partitions,
                                                                             int) else 0
            elif kind == "group_deleted":
                self.group_rebalances.pop(event.group_id, None)

    def _rebalance(self, event: GroupEvent, protocol: str) -> None:
        key = (protocol, cause_of(event.reason))
        self.rebalances[key] += 1
        per_group = self.group_rebalances.get(event.group_id)
        if per_group is None:
            named = len(self.group_rebalances) - (OTHER_GROUPS in self.group_rebalances)
            group = event.group_id if named < self.max_groups else OTHER_GROUPS
            per_group = self.group_rebalances.setdefault(group, Counter())
        per_group[key] += 1

    def rate(self, sensor: str, total: int, now_ms: int) -> float:
        meter = self.rates.get(sensor)
        if meter is None:
            meter = self.rates[sensor] = WindowedRate()
        return meter.rate(total, now_ms)
