"""What a coordinator operation returns, and what the runtime hands it.

Mirrors Kafka's `CoordinatorResult` (coordinator-common): an operation reads state and
returns the records to append, the response for the caller, replies released for earlier
parked requests, timer operations, group events and effects. The runtime appends the
records, replays them through `shard.replay`, and only then runs the effects and releases
the responses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class OpContext:
    """Who sent the request: client id and host, and the runtime's opaque reply token.

    `topic_filter`, when an authorizer runs, keeps the topics the request's principal may
    describe: a regex refresh armed by this request resolves only to those, as Kafka's
    `TopicRegexResolver` filters with the triggering request's context."""

    client_id: str
    client_host: str
    reply_token: int = 0
    topic_filter: Callable[[Iterable[str]], set[str]] | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """A response for an earlier parked request, identified by its reply token."""

    token: int
    response: Any


@dataclass(frozen=True, slots=True)
class ScheduleTimer:
    """Arm (or re-arm: same key replaces) a soft timer."""

    key: tuple[Any, ...]
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class CancelTimer:
    """Disarm a soft timer; cancelling a missing key is a no-op."""

    key: tuple[Any, ...]


TimerOp = ScheduleTimer | CancelTimer


@dataclass(frozen=True, slots=True)
class GroupEvent:
    """One "why" of a rebalance, written by the runtime to `__group_events`.

    `kind` is one of the names in docs/group-events.md.
    """

    group_id: str
    kind: str
    member_id: str | None
    reason: str | None
    generation: int
    timestamp_ms: int
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json_dict(self) -> dict[str, Any]:
        """The fields by name, in declaration order (the JSON object's keys)."""
        return asdict(self)


class Effect:
    """Work an operation asks for outside its shard's state (a transaction's markers, ...):
    data the runtime hands to its kind's effect runner once the operation's records are
    appended (never for records whose append failed). Each kind subclasses it."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Offload:
    """Work run off the event loop, Kafka's `CoordinatorExecutor` task: `compute` runs on a
    worker thread and reads only what it captured (never shard state); its value, or None if
    it raised, goes to `apply`, which runs later as an ordinary operation of the shard and
    returns its Result (or None). A newer Offload with the same key supersedes one in flight:
    the older value is dropped."""

    key: tuple[Any, ...]
    compute: Callable[[], Any]
    apply: Callable[[Any, Any, int], Result | None]  # (shard, value, now_ms)


@dataclass(slots=True)
class Result:
    """Records to append, the caller's response (None = parked), and side outputs."""

    records: list[Any] = field(default_factory=list)
    response: Any = None
    deferred: list[Reply] = field(default_factory=list)
    timers: list[TimerOp] = field(default_factory=list)
    events: list[GroupEvent] = field(default_factory=list)
    offloads: list[Offload] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)
