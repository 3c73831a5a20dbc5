"""The demo's classic-group story as fixture records (the ``story`` anomaly of ``fixture``).

``groupcoord demo`` runs real clients through a script (``cli/demo_workload``): m1, m2,
m3-slow and m4-killed join one by one, m2 leaves with a KIP-800 reason, m4-killed dies and
is evicted when its session times out, and m3-slow falls behind. This module writes the same
story, on the fixture's clock, as the records and ``__group_events`` groupcoord writes for
it (GroupMetadataValue per generation; member_joined / rebalance_started /
rebalance_completed, member_left, member_expired events as docs/group-events.md), so the
report and ``analyze why`` are tested on known events without a broker.

Member ids look like librdkafka's (``client.id-<uuid>``). Times scale with the fixture's
length: a change every tenth of the run, the eviction one session timeout (45 s, what
``classic_generation`` writes) after m4-killed's death.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from groupcoord.analytics import fixture_records as fr
from groupcoord.analytics.fixture_spec import FixtureSpec

GROUP = "story"
LEAVE_REASON = "scaling down"
SESSION_TIMEOUT_MS = fr.SESSION_TIMEOUT_MS
NAMES = ("m1", "m2", "m3-slow", "m4-killed")
SLOW_PARTITION = 3  # m3-slow's from its join to the end
KILLED_PARTITION = 2  # m4-killed's until its eviction; nobody commits it in between


def member_id(name: str) -> str:
    return f"{name}-{uuid.uuid5(uuid.NAMESPACE_DNS, name)}"


@dataclass(frozen=True)
class Step:
    """One rebalance of the story: what starts it, when, how long it takes, the result."""

    start_ms: int
    duration_ms: int
    events: tuple[tuple[str, str, str], ...]  # (kind, member name, reason)
    trigger: str
    assignment: dict[str, list[int]]  # member name -> partitions, after the rebalance

    @property
    def end_ms(self) -> int:
        return self.start_ms + self.duration_ms


def _joined(name: str) -> tuple[tuple[str, str, str], ...]:
    return (("member_joined", name, "not provided"),)


def steps(spec: FixtureSpec, t0: int) -> list[Step]:
    tenth = spec.seconds * 100
    killed_at = t0 + 5 * tenth
    return [
        Step(t0 + 200, 300, _joined("m1"), "Adding new member m1", {"m1": [0, 1, 2, 3]}),
        Step(t0 + tenth, 1_100, _joined("m2"), "Adding new member m2",
             {"m1": [0, 1], "m2": [2, 3]}),
        Step(t0 + 2 * tenth, 800, _joined("m3-slow"), "Adding new member m3-slow",
             {"m1": [0, 1], "m2": [2], "m3-slow": [3]}),
        Step(t0 + 3 * tenth, 1_200, _joined("m4-killed"), "Adding new member m4-killed",
             {"m1": [0], "m2": [1], "m3-slow": [3], "m4-killed": [2]}),
        Step(t0 + 4 * tenth, 600, (("member_left", "m2", LEAVE_REASON),),
             "removing member m2 on LeaveGroup", {"m1": [0, 1], "m3-slow": [3],
                                                   "m4-killed": [2]}),
        Step(killed_at + SESSION_TIMEOUT_MS, 1_100,
             (("member_expired", "m4-killed", "session timeout"),),
             "removing member m4-killed on heartbeat expiration",
             {"m1": [0, 1, 2], "m3-slow": [3]}),
    ]


def killed_at(spec: FixtureSpec, t0: int) -> int:
    """m4-killed's last commit: it dies right after."""
    return t0 + spec.seconds * 500


def commit_fn(spec: FixtureSpec, t0: int, produced_per_commit: int
              ) -> Callable[[int, int, int, int | None], int | None]:
    """The story's commits: caught up, except m3-slow (from where it took its partition
    over, it consumes 80 % of the produce rate) and the killed member's partition (no
    commits until the eviction)."""
    plan = steps(spec, t0)
    slow_from, dead = plan[2].end_ms, (killed_at(spec, t0), plan[5].end_ms)
    slow_step = produced_per_commit * 4 // 5

    closed = t0 + spec.seconds * 1000 - 4_000 if spec.story_closes else None

    def commit(part: int, t: int, end: int, prev: int | None) -> int | None:
        if closed is not None and t >= closed:
            return None
        if part == SLOW_PARTITION and t >= slow_from and prev is not None:
            return prev + slow_step
        if part == KILLED_PARTITION and dead[0] < t <= dead[1]:
            return None
        return end

    return commit


def _moved(before: dict[str, list[int]], after: dict[str, list[int]]) -> int:
    owner = {p: m for m, ps in before.items() for p in ps}
    return sum(1 for m, ps in after.items() for p in ps if owner.get(p) != m)


def plan_story(log: fr.CoordinatorLog, spec: FixtureSpec, t0: int) -> list[dict[str, Any]]:
    """Write the story's generations and events; returns the expected rebalance rows."""
    expect: list[dict[str, Any]] = []
    before: dict[str, list[int]] = {}
    for gen, s in enumerate(steps(spec, t0), start=1):
        for kind, name, reason in s.events:
            log.event(GROUP, s.start_ms, kind, member_id(name), reason, gen - 1)
        log.event(GROUP, s.start_ms, "rebalance_started", None, s.trigger, gen - 1)
        fr.classic_generation(log, GROUP, gen, s.end_ms,
                              {member_id(m): ps for m, ps in s.assignment.items()},
                              client_id=lambda m: m.split("-")[0])
        log.event(GROUP, s.end_ms, "rebalance_completed", None, None, gen)
        expect.append({"group": GROUP, "protocol": "classic", "to_epoch": gen,
                       "start_ms": s.start_ms, "end_ms": s.end_ms, "duration_ms": s.duration_ms,
                       "joined": sorted(member_id(m) for m in set(s.assignment) - set(before)),
                       "left": sorted(member_id(m) for m in set(before) - set(s.assignment)),
                       "partitions_moved": _moved(before, s.assignment), "estimated": False})
        before = s.assignment
    if spec.story_closes:
        expect.append(_close(log, spec, t0, len(expect) + 1, before))
    return expect


CLOSE_REASON = "the consumer is being closed"


def _close(log: fr.CoordinatorLog, spec: FixtureSpec, t0: int, gen: int,
           before: dict[str, list[int]]) -> dict[str, Any]:
    """The demo's end: the producer goes on a few seconds while the last members close, so
    the group is left empty with lag (after their last commit, before the end of the data)."""
    at = t0 + spec.seconds * 1000 - 4_000
    for name in sorted(before):
        log.event(GROUP, at, "member_left", member_id(name), CLOSE_REASON, gen - 1)
    log.event(GROUP, at, "rebalance_started", None, "removing members on LeaveGroup", gen - 1)
    fr.classic_generation(log, GROUP, gen, at + 100, {})
    log.event(GROUP, at + 100, "rebalance_completed", None, None, gen)
    return {"group": GROUP, "protocol": "classic", "to_epoch": gen, "start_ms": at,
            "end_ms": at + 100, "duration_ms": 100, "joined": [],
            "left": sorted(member_id(m) for m in before), "partitions_moved": 0,
            "estimated": False}
