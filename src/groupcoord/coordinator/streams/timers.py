"""Streams-group timers: keyed soft state, never logged, re-derived on load.

- session `("streams-session", group, member)`: renewed by every heartbeat; on expiry the
  member is fenced (`scheduleStreamsGroupSessionTimeout`), after
  `group.streams.session.timeout.ms`.
- rebalance `("streams-rebalance", group, member)`: armed when a member enters
  UNREVOKED_TASKS, for its rebalance timeout; on expiry it fences the member if it is still
  at the epoch it was armed at (`scheduleStreamsGroupRebalanceTimeout`).
- initial delay `("streams-initial-delay", group, "")`: armed by the first join of an
  empty group (`group.streams.initial.rebalance.delay.ms`) to coalesce joins; on expiry
  the target assignment is computed (`computeDelayedTargetAssignment`).
"""

from __future__ import annotations

from groupcoord.coordinator.modern_groups import MemberTimers

TIMERS = MemberTimers(session="streams-session", rebalance="streams-rebalance")
INITIAL_DELAY = "streams-initial-delay"
KINDS = (TIMERS.session, TIMERS.rebalance, INITIAL_DELAY)


def initial_delay_key(group_id: str) -> tuple[str, str, str]:
    return (INITIAL_DELAY, group_id, "")
