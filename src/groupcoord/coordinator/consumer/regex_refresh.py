"""Asynchronous resolution of regex subscriptions (`GroupMetadataManager.
maybeUpdateRegularExpressions`, `refreshRegularExpressions`, `handleRegularExpressionsResult`).

The heartbeat only records a member's new regex (validated, never resolved): a member
subscribed to an unresolved regex gets no partitions from it, and the group epoch moves
only if the regex is already resolved. When Kafka's conditions call for it, the heartbeat
arms a zero-delay refresh timer (Kafka's executor task `<group>-regex`) capturing the
group's subscribed regexes. Firing it is an ordinary operation: it resolves them all in one
scan of the topics image (`regex.resolve_all`, pure), writes a ConsumerGroupRegularExpression
record per regex still subscribed (topics, image version, timestamp) and bumps the group
epoch if a resolved topic set or the metadata hash changed. The next heartbeat computes the
target assignment. Replay needs nothing else: the records carry the resolved topics.

Refresh conditions, in Kafka's order: the group has (or is getting) a regex; no refresh is
pending; the last one is older than the minimum interval (10 s,
`group.consumer.regex.batch.refresh.min.interval.ms` here) -- this gate holds even for a new
regex unless the group has no resolved regex at all; then a regex is unresolved, or topics
were created since the last resolution, or the last resolution is older than
`group.consumer.regex.refresh.interval.ms`. Like Kafka, only heartbeats trigger refreshes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.consumer import records as rec
from groupcoord.coordinator.consumer import timers
from groupcoord.coordinator.consumer.errors import HeartbeatError
from groupcoord.coordinator.consumer.group import ConsumerGroup
from groupcoord.coordinator.consumer.member import ConsumerGroupMember
from groupcoord.coordinator.consumer.regex import InvalidRegex, compile_regex, resolve_all
from groupcoord.coordinator.consumer.subscription import metadata_hash, subscribed_names
from groupcoord.wire.errors import ErrorCode

# `UpdateRegularExpressionsResult`
NO_CHANGE, REGEX_UPDATED, REGEX_UPDATED_AND_RESOLVED = 0, 1, 2

_NEVER = -(1 << 63)  # Long.MIN_VALUE: no regex resolved yet


def maybe_update_regexes(step: Any, member: ConsumerGroupMember,
                         updated: ConsumerGroupMember) -> int:
    """The heartbeat's regex step: validate a new regex, drop the resolution of a regex its
    last member left, and decide whether to refresh (kept in `step.regex_refresh`, armed by
    `arm` once the heartbeat cannot fail any more). Returns an `UpdateRegularExpressions
    Result`."""
    group = step.group
    old_rx, new_rx = member.subscribed_topic_regex, updated.subscribed_topic_regex
    result, require = NO_CHANGE, False
    if old_rx != new_rx:
        result = REGEX_UPDATED
        if old_rx and not step.replaced and group.regex_counts.get(old_rx, 0) <= 1:
            step.fx.records.append(rec.regex_tombstone(group.group_id, old_rx))
            step.regexes.pop(old_rx, None)
        if new_rx:
            if group.regex_counts.get(new_rx, 0) == 0:
                try:
                    compile_regex(new_rx)
                except InvalidRegex as exc:
                    raise HeartbeatError(ErrorCode.INVALID_REGULAR_EXPRESSION, str(exc)) from exc
                require = True
            elif new_rx in group.regexes:
                result = REGEX_UPDATED_AND_RESOLVED
    step.regex_refresh = _refresh_set(step, old_rx, new_rx, require)
    return result


def _refresh_set(step: Any, old_rx: str | None, new_rx: str | None, require: bool
                 ) -> frozenset[str] | None:
    """The regexes to resolve if Kafka's refresh conditions hold, else None."""
    group, mgr, now = step.group, step.mgr, step.fx.now_ms
    if not require and not group.regex_counts:
        return None
    if group.group_id in mgr.regex_refreshes:
        return None  # a refresh is already pending
    last_ms, last_version = last_refresh(group)
    if now <= last_ms + mgr.config.group_consumer_regex_batch_refresh_min_interval_ms:
        return None
    counts = dict(group.regex_counts)
    if old_rx:
        counts[old_rx] = counts.get(old_rx, 0) - 1
    if new_rx:
        counts[new_rx] = counts.get(new_rx, 0) + 1
    regexes = frozenset(rx for rx, n in counts.items() if n > 0)
    require = require or len(regexes) != len(group.regexes) \
        or last_version < mgr.last_image_with_new_topics \
        or now > last_ms + mgr.config.group_consumer_regex_refresh_interval_ms
    return regexes if require and regexes else None


def last_refresh(group: ConsumerGroup) -> tuple[int, int]:
    """(timestamp, version) of the last resolution (`lastResolvedRegularExpressionRefresh
    TimeMs`, `...Version`). All regexes of a group are resolved together; Kafka reads the
    first entry, here the oldest is taken so the answer does not depend on order."""
    if not group.regexes:
        return _NEVER, 0
    return (min(r.timestamp_ms for r in group.regexes.values()),
            min(r.version for r in group.regexes.values()))


def arm(step: Any, topic_filter: Callable[[Iterable[str]], set[str]] | None = None) -> None:
    """Arm the refresh decided by `maybe_update_regexes` (the executor's `schedule`), with
    the arming request's authorization filter (`OpContext.topic_filter`)."""
    if step.regex_refresh is None:
        return
    gid = step.group.group_id
    step.mgr.regex_refreshes[gid] = step.regex_refresh
    step.mgr.regex_topic_filters[gid] = topic_filter
    step.fx.schedule(timers.regex_refresh_key(gid), 0)


def on_refresh(mgr: Any, group_id: str, fx: Effects) -> None:
    """The refresh operation: resolve, then `handleRegularExpressionsResult`."""
    regexes = mgr.regex_refreshes.pop(group_id, None)
    topic_filter = mgr.regex_topic_filters.pop(group_id, None)
    group = mgr.groups.get(group_id)
    if regexes is None or group is None:
        return  # the group is gone, or the shard reloaded since it was armed
    resolved = resolve_all(sorted(regexes), mgr.image)
    if topic_filter is not None:
        allowed = topic_filter(set().union(*resolved.values()))
        resolved = {rx: topics & allowed for rx, topics in resolved.items()}
    current = {rx: r.topics for rx, r in group.regexes.items()}
    bump = False
    for rx in sorted(resolved):
        if group.regex_counts.get(rx, 0) == 0:
            continue  # nobody subscribes to it any more
        topics = resolved[rx]
        bump = bump or current.get(rx, frozenset()) != topics
        current[rx] = topics
        fx.records.append(rec.regex_record(group_id, rx, topics, mgr.image.version, fx.now_ms))
    new_hash = metadata_hash(subscribed_names(group, current, []), mgr.image)
    if bump or new_hash != group.metadata_hash:
        fx.records.append(rec.group_metadata(group_id, group.group_epoch + 1, new_hash))
        group.refresh_needed = False  # Kafka resets the metadata refresh deadline
