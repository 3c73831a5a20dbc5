"""The output accumulator of one classic-group operation.

Kafka's classic paths complete futures, arm timers and add records as they go; here the
same steps append to an `Effects` object which becomes the operation's `Result`. A reply
addressed to the operation's own reply token becomes the direct response.
"""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.result import (
    CancelTimer,
    GroupEvent,
    Offload,
    Reply,
    Result,
    ScheduleTimer,
    TimerOp,
)


def heartbeat_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("heartbeat", group_id, member_id)


def join_key(group_id: str) -> tuple[str, str]:
    return ("join", group_id)


def sync_key(group_id: str) -> tuple[str, str]:
    return ("sync", group_id)


class Effects:
    __slots__ = ("config", "events", "now_ms", "offloads", "records", "replies", "timers")

    def __init__(self, config: GroupCoordinatorConfig, now_ms: int) -> None:
        self.config = config
        self.now_ms = now_ms
        self.records: list[Any] = []
        self.replies: list[Reply] = []
        self.timers: list[TimerOp] = []
        self.events: list[GroupEvent] = []
        self.offloads: list[Offload] = []

    def reply(self, token: int, response: Any) -> None:
        self.replies.append(Reply(token, response))

    def schedule(self, key: tuple[Any, ...], delay_ms: int) -> int:
        """Arm a timer; returns its deadline, which the caller keeps to spot stale fires."""
        deadline = self.now_ms + delay_ms
        self.timers.append(ScheduleTimer(key, deadline))
        return deadline

    def cancel(self, key: tuple[Any, ...]) -> None:
        self.timers.append(CancelTimer(key))

    def event(self, group_id: str, kind: str, generation: int, member_id: str | None = None,
              reason: str | None = None, **detail: Any) -> None:
        self.events.append(GroupEvent(group_id, kind, member_id, reason, generation,
                                      self.now_ms, detail))

    def result(self, response: Any = None, own_token: int | None = None) -> Result:
        deferred = self.replies
        if response is None and own_token is not None:
            own = [r for r in deferred if r.token == own_token]
            if own:
                response = own[-1].response
                deferred = [r for r in deferred if r.token != own_token]
        return Result(self.records, response, deferred, self.timers, self.events,
                      self.offloads)
