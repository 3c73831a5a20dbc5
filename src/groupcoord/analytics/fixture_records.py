"""Coordinator and group-event records for the synthetic fixture (see ``fixture``).

``CoordinatorLog`` collects records per ``__consumer_offsets`` partition and writes them in
time order; ``plan_membership`` adds the group-membership story of each fixture group:
a first classic generation for every classic group, a classic member leaving with its
events (``churn``), a lopsided classic assignment (``unbalanced``) and a KIP-848 member
joining with a reconciliation of known duration (``rebalance``). Values are written at the
versions Kafka writes (GroupMetadataValue v3, OffsetCommitValue v3 and the flexible v4,
consumer-group records v0).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from groupcoord.analytics.codec import encode, encode_versioned
from groupcoord.analytics.fixture_spec import FixtureGroup, FixtureSpec
from groupcoord.analytics.logwriter import LogWriters
from groupcoord.analytics.schema import (
    CONSUMER_ASSIGNMENT,
    CONSUMER_SUBSCRIPTION,
    COORDINATOR_RECORDS,
    SHARE_STATE_RECORDS,
)
from groupcoord.logformat.internal_topics import (
    GROUP_EVENTS_TOPIC,
    OFFSETS_TOPIC,
    SHARE_STATE_TOPIC,
)

TXN_PRODUCER_ID = 4242

STABLE, UNREVOKED, UNRELEASED = 0, 1, 2
SESSION_TIMEOUT_MS = 45_000  # every classic member's, as Kafka's consumer default


def key_bytes(record_type: int, **fields: Any) -> bytes:
    return record_type.to_bytes(2, "big") + encode(COORDINATOR_RECORDS[record_type][0], fields, 0)


def value_bytes(record_type: int, version: int, **fields: Any) -> bytes:
    return encode_versioned(COORDINATOR_RECORDS[record_type][1], fields, version)


class CoordinatorLog:
    """Records of every coordinator partition, written sorted by time at ``flush``."""

    def __init__(self, partition_for: Callable[[str], int], partitions: int) -> None:
        self.partition_for = partition_for
        self.partitions = partitions
        self._entries: list[tuple[int, int, str, int, Any]] = []
        self.record_count = 0
        self.aborted_rows = 0
        self.events = 0
        self.classic_generations = 0
        self.offset_value_version: dict[str, int] = {}

    def _add(self, ts: int, topic: str, partition: int, item: Any) -> None:
        self._entries.append((ts, len(self._entries), topic, partition, item))

    def records(self, group: str, ts: int, recs: Sequence[tuple[bytes, bytes | None]],
                txn: bool = False) -> None:
        self._add(ts, OFFSETS_TOPIC, self.partition_for(group), ("batch", recs, txn))
        self.record_count += len(recs)

    def share_state(self, ts: int, kind: int, key: dict[str, Any], value: dict[str, Any]) -> None:
        """A ``__share_group_state`` record (0 ShareSnapshot, 1 ShareUpdate), partition 0."""
        k_layout, v_layout = SHARE_STATE_RECORDS[kind]
        rec = (kind.to_bytes(2, "big") + encode(k_layout, key, 0),
               encode_versioned(v_layout, value, 0))
        self._add(ts, SHARE_STATE_TOPIC, 0, ("batch", [rec], False))

    def marker(self, group: str, ts: int, commit: bool) -> None:
        self._add(ts, OFFSETS_TOPIC, self.partition_for(group), ("marker", commit))

    def event(self, group: str, ts: int, kind: str, member: str | None, reason: str | None,
              generation: int, **detail: Any) -> None:
        self.events += 1
        body = {"group_id": group, "kind": kind, "member_id": member, "reason": reason,
                "generation": generation, "timestamp_ms": ts, "detail": detail}
        self._add(ts, GROUP_EVENTS_TOPIC, 0, ("batch", [(group.encode(), json.dumps(body).encode())],
                                         False))

    def commit(self, group: str, topic: str, offsets: dict[int, int], ts: int,
               transactional: bool = False) -> None:
        version = self.offset_value_version.get(group, 3)
        recs = [(key_bytes(1, group=group, topic=topic, partition=p),
                 value_bytes(1, version, offset=o, leaderEpoch=0, metadata="", commitTimestamp=ts))
                for p, o in sorted(offsets.items())]
        self.records(group, ts, recs, transactional)
        if transactional:
            self.marker(group, ts + 1, True)

    def aborted_commit(self, group: str, topic: str, partitions: int, ts: int) -> None:
        self.commit(group, topic, dict.fromkeys(range(partitions), 10_000_000), ts, False)
        # turn the plain commit just added into an aborted transaction
        ts0, seq, top, part, (_kind, recs, _txn) = self._entries.pop()
        self._entries.append((ts0, seq, top, part, ("batch", recs, True)))
        self.marker(group, ts + 1, False)
        self.aborted_rows += partitions

    def flush(self, writers: LogWriters) -> None:
        for p in range(self.partitions):  # every partition exists, even when empty
            writers.get(OFFSETS_TOPIC, p)
        for ts, _seq, topic, part, item in sorted(self._entries, key=lambda e: (e[0], e[1])):
            w = writers.get(topic, part)
            if item[0] == "marker":
                w.append_marker(TXN_PRODUCER_ID, item[1], ts)
            else:
                pid = TXN_PRODUCER_ID if item[2] else -1
                w.append([(k, v, ts) for k, v in item[1]], producer_id=pid, transactional=item[2])


def _subscription(topic: str) -> bytes:
    return encode_versioned(CONSUMER_SUBSCRIPTION, {"topics": [topic], "generationId": 1}, 3)


def _assignment(topic: str, parts: list[int]) -> bytes:
    return encode_versioned(CONSUMER_ASSIGNMENT,
                            {"assignedPartitions": [{"topic": topic, "partitions": parts}]}, 3)


def classic_generation(log: CoordinatorLog, group: str, generation: int, ts: int,
                       assignment: dict[str, list[int]],
                       client_id: Callable[[str], str] = lambda m: m.rsplit("-", 1)[-1]) -> None:
    topic = f"t-{group}"
    log.classic_generations += 1
    members = [{"memberId": m, "clientId": client_id(m), "clientHost": f"/10.0.0.{i + 1}",
                "rebalanceTimeout": 300_000, "sessionTimeout": SESSION_TIMEOUT_MS,
                "subscription": _subscription(topic), "assignment": _assignment(topic, parts)}
               for i, (m, parts) in enumerate(sorted(assignment.items()))]
    value = value_bytes(2, 3, protocolType="consumer", generation=generation, protocol="range",
                        leader=min(assignment) if assignment else None,
                        currentStateTimestamp=ts, members=members)
    log.records(group, ts, [(key_bytes(2, group=group), value)])


def _split(members: list[str], partitions: int) -> dict[str, list[int]]:
    per = partitions // len(members)
    return {m: list(range(i * per, (i + 1) * per)) for i, m in enumerate(members)}


# groups whose membership records fixture_story or fixture_scenarios write themselves
OWN_MEMBERSHIP = ("rebalance", "story", "storm", "orphan", "streams-app")


def plan_membership(log: CoordinatorLog, groups: dict[str, FixtureGroup], spec: FixtureSpec, t0: int,
                    topic_id_for: Callable[[str], bytes]) -> dict[str, Any]:
    """Write every group's membership records; returns the manifest's expectations."""
    for key, g in groups.items():
        if key in OWN_MEMBERSHIP:
            continue
        if key == "unbalanced":
            assign = {"unbalanced-a": [0, 1, 2, 3], "unbalanced-b": [4], "unbalanced-c": [5]}
        else:
            assign = _split([f"{g.name}-m0", f"{g.name}-m1"], g.partitions)
        classic_generation(log, g.name, 1, t0, assign)
    expect: dict[str, Any] = {"expect_rebalances": [], "expect_balance": {}}
    if "churn" in groups:
        at = t0 + spec.seconds // 2 * 1000
        expect["expect_rebalances"].append(_churn(log, groups["churn"], t0, at))
    if "rebalance" in groups:
        at = t0 + spec.seconds // 3 * 1000
        expect["expect_rebalances"].append(_kip848(log, groups["rebalance"], t0, at,
                                                   topic_id_for))
    if "healthy-1" in groups:
        # a second generation with no group events: its start must be estimated
        g1 = groups["healthy-1"]
        at = t0 + spec.seconds * 2 // 3 * 1000
        classic_generation(log, g1.name, 2, at, _split([f"{g1.name}-m0", f"{g1.name}-m1"],
                                                       g1.partitions))
        last = max(t for t in range(t0 + 5_500, at, 5_000))
        expect["expect_estimated_rebalance"] = {"group": g1.name, "to_epoch": 2,
                                                "start_ms": last, "end_ms": at}
    if "healthy-0" in groups:
        expect["expect_share"] = _share_state(log, groups["healthy-0"], t0, spec.rate,
                                              topic_id_for)
    if "unbalanced" in groups:
        expect["expect_balance"]["unbalanced"] = {"members": 3, "partitions": 6, "max": 4,
                                                  "min": 1, "imbalance": 2.0}
    if "healthy-0" in groups:
        expect["expect_balance"]["healthy-0"] = {"members": 2, "partitions": spec.partitions,
                                                 "imbalance": 1.0}
    return expect


def _churn(log: CoordinatorLog, g: FixtureGroup, t0: int, start: int) -> dict[str, Any]:
    end = start + 3_000
    leaver = f"{g.name}-m1"
    log.event(g.name, start, "member_left", leaver, "the consumer is being closed", 1)
    log.event(g.name, start, "rebalance_started", None, f"removing member {leaver} on LeaveGroup",
              1)
    classic_generation(log, g.name, 2, end, {f"{g.name}-m0": list(range(g.partitions))})
    log.event(g.name, end, "rebalance_completed", None, None, 2)
    return {"group": g.name, "protocol": "classic", "to_epoch": 2, "start_ms": start,
            "end_ms": end, "duration_ms": end - start, "left": [leaver], "joined": [],
            "estimated": False}


def _cg_assign(tid: bytes, parts: list[int]) -> list[dict[str, Any]]:
    return [{"TopicId": tid, "Partitions": parts}] if parts else []


def _share_state(log: CoordinatorLog, g: FixtureGroup, t0: int, rate: int,
                 topic_id_for: Callable[[str], bytes]) -> dict[str, Any]:
    """Share group ``share-a`` on ``t-<g>`` p0: a snapshot 200 records behind the end at
    60 s, then an update 50 behind at 120 s."""
    key = {"GroupId": "share-a", "TopicId": topic_id_for(f"t-{g.name}"), "Partition": 0}
    snap_ts, upd_ts = t0 + 60_000, t0 + 120_000
    spso1 = (snap_ts - t0) // 1000 * rate + rate - 200
    spso2 = (upd_ts - t0) // 1000 * rate + rate - 50
    log.share_state(snap_ts, 0, key, {
        "SnapshotEpoch": 1, "StateEpoch": 1, "LeaderEpoch": 0, "StartOffset": spso1,
        "CreateTimestamp": snap_ts, "WriteTimestamp": snap_ts, "StateBatches": [
            {"FirstOffset": spso1, "LastOffset": spso1 + 49, "DeliveryState": 2,
             "DeliveryCount": 1},
            {"FirstOffset": spso1 + 50, "LastOffset": spso1 + 99, "DeliveryState": 0,
             "DeliveryCount": 3}]})
    log.share_state(upd_ts, 1, key, {
        "SnapshotEpoch": 1, "LeaderEpoch": 0, "StartOffset": spso2, "StateBatches": [
            {"FirstOffset": spso2, "LastOffset": spso2 + 9, "DeliveryState": 4,
             "DeliveryCount": 5}]})
    return {"group": "share-a", "topic": f"t-{g.name}", "partition": 0,
            "rows": [{"ts_ms": snap_ts, "kind": "snapshot", "start_offset": spso1, "lag": 200,
                      "acked": 50, "available": 50, "archived": 0, "max_delivery_count": 3},
                     {"ts_ms": upd_ts, "kind": "update", "start_offset": spso2, "lag": 50,
                      "acked": 0, "available": 0, "archived": 10, "max_delivery_count": 5}]}


class _ConsumerGroupWriter:
    """Writes one KIP-848 group's records (types 3, 5, 6, 7, 8) into a CoordinatorLog."""

    def __init__(self, log: CoordinatorLog, group: str, topic_id: bytes, topic: str) -> None:
        self.log, self.group, self.tid, self.topic = log, group, topic_id, topic

    def member(self, ts: int, m: str) -> None:
        self.log.records(self.group, ts, [(
            key_bytes(5, GroupId=self.group, MemberId=m),
            value_bytes(5, 0, ClientId=m, ClientHost="/10.0.1.1",
                        SubscribedTopicNames=[self.topic], RebalanceTimeoutMs=300_000,
                        ServerAssignor="uniform"))])

    def epoch(self, ts: int, e: int, target: dict[str, list[int]]) -> None:
        g = self.group
        recs = [(key_bytes(3, GroupId=g), value_bytes(3, 0, Epoch=e)),
                (key_bytes(6, GroupId=g), value_bytes(6, 0, AssignmentEpoch=e))]
        recs += [(key_bytes(7, GroupId=g, MemberId=m),
                  value_bytes(7, 0, TopicPartitions=_cg_assign(self.tid, ps)))
                 for m, ps in sorted(target.items())]
        self.log.records(g, ts, recs)

    def current(self, ts: int, m: str, e: int, prev: int, state: int, owned: list[int],
                pending: Sequence[int] = ()) -> None:
        self.log.records(self.group, ts, [(
            key_bytes(8, GroupId=self.group, MemberId=m),
            value_bytes(8, 0, MemberEpoch=e, PreviousMemberEpoch=prev, State=state,
                        AssignedPartitions=_cg_assign(self.tid, owned),
                        PartitionsPendingRevocation=_cg_assign(self.tid, list(pending))))])


def _kip848(log: CoordinatorLog, g: FixtureGroup, t0: int, start: int,
            topic_id_for: Callable[[str], bytes]) -> dict[str, Any]:
    """m1 and m2 share 4 partitions; m3 joins at ``start`` and the group reconciles in 8 s."""
    topic = f"t-{g.name}"
    w = _ConsumerGroupWriter(log, g.name, topic_id_for(topic), topic)
    m1, m2, m3 = (f"{g.name}-m{i}" for i in (1, 2, 3))
    w.member(t0, m1)
    w.member(t0, m2)
    w.epoch(t0, 1, {m1: [0, 1], m2: [2, 3]})
    w.current(t0, m1, 1, 0, STABLE, [0, 1])
    w.current(t0, m2, 1, 0, STABLE, [2, 3])
    w.member(start, m3)
    w.epoch(start, 2, {m1: [0], m2: [2], m3: [1, 3]})
    w.current(start + 500, m3, 2, 0, UNRELEASED, [])
    w.current(start + 1_000, m1, 1, 1, UNREVOKED, [0], (1,))
    w.current(start + 1_500, m2, 1, 1, UNREVOKED, [2], (3,))
    w.current(start + 3_000, m1, 2, 1, STABLE, [0])
    w.current(start + 4_500, m2, 2, 1, STABLE, [2])
    w.current(start + 8_000, m3, 2, 0, STABLE, [1, 3])
    return {"group": g.name, "protocol": "consumer", "to_epoch": 2, "start_ms": start,
            "end_ms": start + 8_000, "duration_ms": 8_000, "joined": [m3], "left": [],
            "estimated": False}
