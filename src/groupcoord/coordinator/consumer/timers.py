"""Consumer-group timers: keyed soft state, never logged, re-derived on load.

- session `("consumer-session", group, member)`: renewed by every heartbeat; on expiry
  the member is fenced (`consumerGroupSessionTimeout`), after the group's
  `consumer.session.timeout.ms` (or the broker default). Classic members inside a
  consumer group use their JoinGroup session timeout.
- rebalance `("consumer-rebalance", group, member)`: armed when a member enters
  UNREVOKED_PARTITIONS, for its rebalance timeout; on expiry it fences the member if it is
  still revoking at the same epoch (`scheduleConsumerGroupRebalanceTimeout`). The epoch it
  was armed at is kept in `mgr.rebalance_epochs`.
- regex refresh `("consumer-regex-refresh", group, "")`: a zero-delay timer standing for
  Kafka's executor task `<group>-regex`; firing it resolves the regexes captured when it
  was armed (`regex_refresh`). The captured set is kept in `mgr.regex_refreshes`.
"""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.consumer.member import ConsumerGroupMember
from groupcoord.coordinator.consumer.state import MemberState
from groupcoord.coordinator.modern_groups import MemberTimers

TIMERS = MemberTimers(session="consumer-session", rebalance="consumer-rebalance")
REGEX_REFRESH = "consumer-regex-refresh"
KINDS = (TIMERS.session, TIMERS.rebalance, REGEX_REFRESH)


def regex_refresh_key(group_id: str) -> tuple[str, str, str]:
    return (REGEX_REFRESH, group_id, "")


def session_timeout_ms(mgr: Any, group_id: str, member: ConsumerGroupMember) -> int:
    """The member's session: its JoinGroup's for a classic member, else the group's
    `consumer.session.timeout.ms` override or the broker default."""
    if member.classic is not None:
        return member.classic.session_timeout_ms
    return int(mgr.session_timeout_ms(group_id))


def schedule_session(mgr: Any, group_id: str, member: ConsumerGroupMember, fx: Effects) -> None:
    timeout = session_timeout_ms(mgr, group_id, member)
    fx.schedule(TIMERS.session_key(group_id, member.member_id), timeout)


def after_reconcile(mgr: Any, group_id: str, before: ConsumerGroupMember,
                    after: ConsumerGroupMember, fx: Effects) -> None:
    key = TIMERS.rebalance_key(group_id, after.member_id)
    if after.state == MemberState.UNREVOKED_PARTITIONS:
        if before.state != MemberState.UNREVOKED_PARTITIONS \
                or before.member_epoch != after.member_epoch:
            fx.schedule(key, max(0, after.rebalance_timeout_ms))
            mgr.rebalance_epochs[(group_id, after.member_id)] = after.member_epoch
    elif (group_id, after.member_id) in mgr.rebalance_epochs:
        del mgr.rebalance_epochs[(group_id, after.member_id)]
        fx.cancel(key)


def cancel_member(group_id: str, member_id: str, fx: Effects, mgr: Any = None) -> None:
    TIMERS.cancel(group_id, member_id, fx, None if mgr is None else mgr.rebalance_epochs)
