"""Gold ``rebalances`` and ``assignment_balance`` from the membership tables (driver side).

Classic groups: each GroupMetadata record with a new generation ends a rebalance. Its start
comes from the group event log (``__group_events``; the last rebalance-start event since
the previous generation); without events the start is unknown and the row is flagged
``estimated`` with no duration. Joins, leaves and reasons are the member-set difference and
the events in between.

Group events follow docs/group-events.md (JSON values keyed by group id).

KIP-848 groups (analytics.md 5.3): start = the group-epoch bump (type 3); the target is the
type 7 assignment written with the type 6 record of that epoch; end = the latest time at which
a target member's current assignment (type 8) reached the new epoch in state STABLE. A
target member that never got there leaves the rebalance open (no end).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from groupcoord.analytics.silver.group_rows import by_group, epoch_bumps, reconciled
from groupcoord.analytics.silver.membership import MembershipTables

Owners = dict[tuple[str, int], str]  # (topic, partition) -> member id


EVENT_CLASSES = {
    # docs/group-events.md kinds
    "rebalance_started": "start", "rebalance_completed": "end", "member_joined": "join",
    "member_left": "leave", "member_expired": "leave", "member_fenced": "leave",
    "member_removed": "leave",
}


# The events kept, structured, in a rebalance's ``causes`` (``story`` tells them in words).
CAUSE_KINDS = frozenset(("member_joined", "member_left", "member_expired", "member_fenced",
                         "member_removed", "rebalance_started"))


def event_class(kind: str) -> str:
    """start / end / join / leave / other for a ``__group_events`` kind.

    Known kinds come from docs/group-events.md; unknown ones (readers must tolerate new
    kinds) are classed by wording so a new "..._started" still marks a rebalance start.
    """
    if kind in EVENT_CLASSES:
        return EVENT_CLASSES[kind]
    k = kind.lower()
    for word, cls in (("start", "start"), ("complet", "end"), ("join", "join"),
                      ("leave", "leave"), ("left", "leave")):
        if word in k:
            return cls
    return "other"


def _moved(before: Owners, after: Owners) -> int:
    return sum(1 for tp, m in after.items() if before.get(tp) != m)


def classic_owners(gen: dict[str, Any]) -> Owners:
    return {(a["topic"], p): m["member_id"] for m in gen["members"] for a in m["assigned"]
            for p in a["partitions"]}


def _events_between(events: list[dict[str, Any]], lo: int, hi: int) -> list[dict[str, Any]]:
    return [e for e in events if lo < e["timestamp_ms"] <= hi]


def _row(gtype: str, group: str, frm: int | None, to: int, start: int | None, end: int | None,
         before: set[str], after: set[str], evs: list[dict[str, Any]], moved: int,
         assignor: str | None, estimated: bool) -> dict[str, Any]:
    return {
        "group_type": gtype, "group_id": group, "from_epoch": frm, "to_epoch": to,
        "start_ts_ms": start, "end_ts_ms": end,
        "duration_ms": None if start is None or end is None else end - start,
        "members_before": len(before), "members_after": len(after),
        "joined": sorted(after - before), "left": sorted(before - after),
        "reasons": [": ".join(x for x in (e["kind"], e.get("member_id"), e["reason"]) if x)
                    for e in evs if e.get("reason")],
        "causes": [{"kind": e["kind"], "member_id": e.get("member_id"),
                    "reason": e.get("reason"), "ts_ms": e["timestamp_ms"]}
                   for e in evs if e["kind"] in CAUSE_KINDS],
        "partitions_moved": moved, "assignor": assignor, "estimated": estimated,
        "reconciled": [],
    }


def classic_rebalances(t: MembershipTables, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    ev_by_group = by_group(events)
    for group, gens in by_group(t.classic_generations).items():
        prev: dict[str, Any] | None = None
        for g in gens:
            if g["tombstone"] or (prev and g["generation"] == prev["generation"]):
                prev = None if g["tombstone"] else prev
                continue
            if prev is None and g["generation"] == 0 and not g["members"]:
                # the empty record written when a JoinGroup creates the group (as Kafka's
                # coordinator does): the group's start, not a rebalance
                prev = g
                continue
            lo = prev["record_ts_ms"] if prev else -1
            evs = _events_between(ev_by_group.get(group, []), lo, g["record_ts_ms"])
            starts = [e["timestamp_ms"] for e in evs if event_class(e["kind"]) == "start"]
            before = {m["member_id"] for m in prev["members"]} if prev else set()
            after = {m["member_id"] for m in g["members"]}
            moved = _moved(classic_owners(prev) if prev else {}, classic_owners(g))
            out.append(_row("classic", group, prev["generation"] if prev else None,
                            g["generation"], starts[-1] if starts else None, g["record_ts_ms"],
                            before, after, evs, moved, g["protocol"], not starts))
            prev = g
    return out


def _target_snapshots(t: MembershipTables) -> dict[str, list[tuple[int, int, dict[str, Owners]]]]:
    """Per group: (assignment epoch, ts, member -> owners) after each type 6 record."""
    targets = by_group(t.cg_target_assignment)
    out: dict[str, list[tuple[int, int, dict[str, Owners]]]] = defaultdict(list)
    for group, metas in by_group([e for e in t.cg_epochs if e.get("kind") == "target"]).items():
        for meta in metas:
            if meta["tombstone"]:
                continue
            snap: dict[str, Owners] = {}
            for r in targets.get(group, []):
                if r["record_ts_ms"] > meta["record_ts_ms"]:
                    break
                if r["tombstone"]:
                    snap.pop(r["member_id"], None)
                else:
                    snap[r["member_id"]] = {(a["topic"], p): r["member_id"]
                                            for a in r["assigned"] for p in a["partitions"]}
            out[group].append((meta["assignment_epoch"], meta["record_ts_ms"], snap))
    return out


def consumer_rebalances(t: MembershipTables, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    snaps = _target_snapshots(t)
    current = by_group(t.cg_current_assignment)
    members = by_group(t.cg_members)
    ev_by_group = by_group(events)
    for group, epochs in by_group([e for e in t.cg_epochs if e.get("kind") == "group"]).items():
        prev_members: set[str] = set()
        prev_owners: Owners = {}
        for prev_start, prev_epoch, e in epoch_bumps(epochs):
            start, epoch = e["record_ts_ms"], e["epoch"]
            snap = next((s for ep, _ts, s in snaps.get(group, []) if ep == epoch), {})
            owners = {tp: m for o in snap.values() for tp, m in o.items()}
            ends, end = reconciled(current.get(group, []), snap, epoch, start)
            joined_left = [r for r in members.get(group, []) if prev_start < r["record_ts_ms"] <= start]
            after = (prev_members | {r["member_id"] for r in joined_left if not r["tombstone"]}) \
                - {r["member_id"] for r in joined_left if r["tombstone"]}
            after = set(snap) or after
            evs = _events_between(ev_by_group.get(group, []), prev_start, end or start)
            row = _row(e["group_type"], group, prev_epoch, epoch, start, end, prev_members,
                       after, evs, _moved(prev_owners, owners), None, False)
            row["reconciled"] = [{"member_id": m, "ts_ms": t}
                                 for m, t in zip(snap, ends, strict=True)]
            out.append(row)
            prev_members, prev_owners = after, owners
    return out


def _balance(group: str, gtype: str, epoch: int, ts: int, per_member: dict[str, int],
             unassigned: int | None) -> dict[str, Any]:
    counts = list(per_member.values()) or [0]
    mean = sum(counts) / len(counts)
    return {"group_id": group, "group_type": gtype, "epoch_or_generation": epoch, "ts_ms": ts,
            "members": len(per_member), "partitions": sum(counts),
            "min_per_member": min(counts), "max_per_member": max(counts),
            "mean_per_member": mean, "imbalance": (max(counts) / mean) if mean else None,
            "unassigned_partitions": unassigned,
            "per_member": [{"member_id": m, "partitions": n} for m, n in sorted(per_member.items())]}


def assignment_balance(t: MembershipTables, topic_sizes: dict[str, int]) -> list[dict[str, Any]]:
    out = []
    for group, gens in by_group(t.classic_generations).items():
        for g in gens:
            if g["tombstone"]:
                continue
            per = {m["member_id"]: sum(len(a["partitions"]) for a in m["assigned"])
                   for m in g["members"]}
            topics = {tp for m in g["members"] for tp in m["topics"]}
            total = sum(topic_sizes.get(tp, 0) for tp in topics)
            out.append(_balance(group, "classic", g["generation"], g["record_ts_ms"], per,
                                max(0, total - sum(per.values())) if topics else None))
    for group, snaps in _target_snapshots(t).items():
        for epoch, ts, snap in snaps:
            per = {m: len(o) for m, o in snap.items()}
            topics = {tp for o in snap.values() for tp, _p in o}
            total = sum(topic_sizes.get(tp, 0) for tp in topics)
            out.append(_balance(group, "consumer", epoch, ts, per,
                                max(0, total - sum(per.values())) if topics else None))
    return out


def latest_owners(t: MembershipTables) -> dict[tuple[str, str, int], dict[str, Any]]:
    """(group, topic, partition) -> the owning member of the newest generation/target
    (for classic groups, the newest with members)."""
    out: dict[tuple[str, str, int], dict[str, Any]] = {}
    for group, gens in by_group(t.classic_generations).items():
        # an emptied group's last owners are the ones to name, not its empty generation
        live = [g for g in gens if not g["tombstone"] and g["members"]]
        if live:
            for m in live[-1]["members"]:
                for a in m["assigned"]:
                    for p in a["partitions"]:
                        out[(group, a["topic"], p)] = {"member_id": m["member_id"],
                                                       "client_id": m["client_id"],
                                                       "client_host": m["client_host"]}
    info = {(r["group_id"], r["member_id"]): r for r in t.cg_members if not r["tombstone"]}
    for group, snaps in _target_snapshots(t).items():
        if snaps:
            for (topic, p), m in {tp: m for o in snaps[-1][2].values() for tp, m in o.items()}.items():
                meta = info.get((group, m), {})
                out[(group, topic, p)] = {"member_id": m, "client_id": meta.get("client_id"),
                                          "client_host": meta.get("client_host")}
    return out


FOREVER = 2**62


def _close_open(open_: dict[tuple[str, int], tuple[str, int]], tp: tuple[str, int], ts: int,
                group: str, out: list[dict[str, Any]]) -> None:
    member, since = open_.pop(tp)
    if ts > since:
        out.append({"group_id": group, "topic": tp[0], "partition": tp[1], "member_id": member,
                    "from_ts_ms": since, "to_ts_ms": ts})


def _replay_owners(group: str, steps: list[tuple[int, dict[tuple[str, int], str]]],
                   out: list[dict[str, Any]]) -> None:
    """Turn successive full owner maps of one group into ownership intervals."""
    open_: dict[tuple[str, int], tuple[str, int]] = {}
    for ts, owners in steps:
        for tp in [tp for tp, (m, _s) in open_.items() if owners.get(tp) != m]:
            _close_open(open_, tp, ts, group, out)
        for tp, m in owners.items():
            open_.setdefault(tp, (m, ts))
    for tp in list(open_):
        _close_open(open_, tp, FOREVER, group, out)


def ownership_intervals(t: MembershipTables) -> list[dict[str, Any]]:
    """Who owned each partition when: classic generations and KIP-848 current assignments."""
    out: list[dict[str, Any]] = []
    for group, gens in by_group(t.classic_generations).items():
        _replay_owners(group, [(g["record_ts_ms"], {} if g["tombstone"] else classic_owners(g))
                               for g in gens], out)
    for group, recs in by_group(t.cg_current_assignment).items():
        per_member: dict[str, Owners] = {}
        steps = []
        for r in recs:
            per_member[r["member_id"]] = {} if r["tombstone"] else {
                (a["topic"], p): r["member_id"] for a in r["assigned"] for p in a["partitions"]}
            steps.append((r["record_ts_ms"], {tp: m for o in per_member.values()
                                              for tp, m in o.items()}))
        _replay_owners(group, steps, out)
    return out
