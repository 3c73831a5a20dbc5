"""Fixture groups for the health findings beyond Burrow's rules (``health``), and a streams
group, as the records and ``__group_events`` groupcoord writes for them:

- ``storm``: a classic group in which ``storm-flappy`` joins and leaves again and again
  (a consumer that exceeds ``max.poll.interval.ms`` and rejoins) while ``storm-steady``
  stays: ``FLAPS`` joins and leaves within a minute;
- ``orphan``: a stable classic group whose newest generation assigns only partitions 0-2
  of six (an assignor that drops partitions): 3-5 have no owner from then on, their commits
  stop and their lag grows;
- ``streams-app``: a KIP-1071 streams group with one member, committing as it goes.

Opt-in anomalies (``fixture.SCENARIO_ANOMALIES``): the default fixture stays as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groupcoord.analytics import fixture_records as fr
from groupcoord.analytics.fixture_spec import FixtureSpec
from groupcoord.logformat.coordinator_records import CoordinatorRecord
from groupcoord.logformat.generated import streams_group_member_metadata as smeta
from groupcoord.logformat.generated import streams_group_metadata as sgmeta

STORM, ORPHAN, STREAMS = "storm", "orphan", "streams-app"
FLAPS = 4
FLAP_EVERY_MS = 6_000
FLAP_REASON = "consumer poll timeout has expired"
ORPHAN_PARTITIONS = 6
ORPHAN_KEPT = [0, 1, 2]


def storm_start(spec: FixtureSpec, t0: int) -> int:
    return t0 + spec.seconds * 400


def orphaned_at(spec: FixtureSpec, t0: int) -> int:
    """When the orphan group's second generation drops partitions 3-5."""
    return t0 + spec.seconds * 600 + 250


def orphan_commit(spec: FixtureSpec, t0: int) -> Callable[[int, int, int, int | None],
                                                         int | None]:
    cut = orphaned_at(spec, t0)

    def commit(part: int, t: int, end: int, _prev: int | None) -> int | None:
        return end if part in ORPHAN_KEPT or t < cut else None

    return commit


def _storm(log: fr.CoordinatorLog, spec: FixtureSpec, t0: int) -> list[dict[str, Any]]:
    steady, flappy = f"{STORM}-steady", f"{STORM}-flappy"
    fr.classic_generation(log, STORM, 1, t0, {steady: [0, 1, 2, 3]})
    at, gen, expect = storm_start(spec, t0), 1, []
    for _ in range(FLAPS):
        for kind, reason, assign in (
                ("member_joined", "not provided", {steady: [0, 1], flappy: [2, 3]}),
                ("member_left", FLAP_REASON, {steady: [0, 1, 2, 3]})):
            log.event(STORM, at, kind, flappy, reason, gen)
            log.event(STORM, at, "rebalance_started", None, f"{kind} {flappy}", gen)
            gen += 1
            fr.classic_generation(log, STORM, gen, at + 200, assign)
            log.event(STORM, at + 200, "rebalance_completed", None, None, gen)
            expect.append({"group": STORM, "protocol": "classic", "to_epoch": gen,
                           "start_ms": at, "end_ms": at + 200, "duration_ms": 200,
                           "joined": [flappy] if kind == "member_joined" else [],
                           "left": [flappy] if kind == "member_left" else [],
                           "estimated": False})
            at += FLAP_EVERY_MS
    return expect


def _orphan(log: fr.CoordinatorLog, spec: FixtureSpec, t0: int) -> list[dict[str, Any]]:
    a, b = f"{ORPHAN}-a", f"{ORPHAN}-b"
    fr.classic_generation(log, ORPHAN, 1, t0, {a: [0, 1, 2], b: [3, 4, 5]})
    at = orphaned_at(spec, t0)
    log.event(ORPHAN, at - 200, "rebalance_started", None, "assignor update", 1)
    fr.classic_generation(log, ORPHAN, 2, at, {a: [0, 1], b: [2]})
    log.event(ORPHAN, at, "rebalance_completed", None, None, 2)
    return [{"group": ORPHAN, "protocol": "classic", "to_epoch": 2, "start_ms": at - 200,
             "end_ms": at, "duration_ms": 200, "joined": [], "left": [], "estimated": False}]


def _streams(log: fr.CoordinatorLog, t0: int) -> None:
    member = f"{STREAMS}-1"
    group = CoordinatorRecord(sgmeta.StreamsGroupMetadataKey(group_id=STREAMS),
                              sgmeta.StreamsGroupMetadataValue(epoch=1, metadata_hash=0,
                                                               validated_topology_epoch=0), 0)
    meta = CoordinatorRecord(
        smeta.StreamsGroupMemberMetadataKey(group_id=STREAMS, member_id=member),
        smeta.StreamsGroupMemberMetadataValue(client_id=STREAMS, client_host="/10.0.0.9",
                                              rebalance_timeout_ms=300_000,
                                              topology_epoch=0, process_id="p-1"), 0)
    log.records(STREAMS, t0, [(r.key_bytes(), r.value_bytes()) for r in (meta, group)])


def plan(log: fr.CoordinatorLog, anomalies: tuple[str, ...], spec: FixtureSpec, t0: int
         ) -> list[dict[str, Any]]:
    """Write the scenario groups' membership and events; returns the expected rebalances."""
    expect: list[dict[str, Any]] = []
    if STORM in anomalies:
        expect += _storm(log, spec, t0)
    if ORPHAN in anomalies:
        expect += _orphan(log, spec, t0)
    if STREAMS in anomalies:
        _streams(log, t0)
    return expect
