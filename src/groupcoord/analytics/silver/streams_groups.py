"""Streams groups (KIP-1071) in the analytics tables, on the driver.

Silver: ``sg_epochs`` (group epochs from type 17, with the reason-free metadata; target
epochs from type 20), ``sg_members`` (19), ``sg_target_assignment`` (21) and
``sg_current_assignment`` (22), tasks written ``<subtopology>_<partition>`` as Kafka
Streams names them. Gold: ``streams_rebalances`` (start = the group-epoch bump; end = the
latest time a target member's current assignment reached the new epoch in STABLE; joins,
leaves and the reasons from ``__group_events``; active tasks moved) and
``task_movements`` (one row per active or standby task whose target owner changed from
one target epoch to the next).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from groupcoord.analytics.silver.group_rows import by_group, epoch_bumps, reconciled

STREAMS_TYPES = frozenset({17, 19, 20, 21, 22})
STATE_NAMES = {1: "STABLE", 2: "UNREVOKED_TASKS", 3: "UNRELEASED_TASKS", 127: "UNKNOWN"}

Tasks = dict[str, str]  # task -> member id


def task_names(task_ids: list[dict[str, Any]] | None) -> list[str]:
    return [f"{t['SubtopologyId']}_{p}" for t in task_ids or [] for p in t["Partitions"]]


def dispatch(t: Any, rtype: int, key: dict[str, Any], v: dict[str, Any] | None,
             base: dict[str, Any]) -> None:
    """Append the row of one streams record to the membership tables `t`."""
    row = {"group_type": "streams", "group_id": key["GroupId"], **base}
    v = v or {}
    if rtype == 17:
        t.sg_epochs.append({**row, "kind": "group", "epoch": v.get("Epoch"),
                            "assignment_epoch": None,
                            "validated_topology_epoch": v.get("ValidatedTopologyEpoch")})
    elif rtype == 20:
        t.sg_epochs.append({**row, "kind": "target", "epoch": None,
                            "assignment_epoch": v.get("AssignmentEpoch"),
                            "validated_topology_epoch": None})
    elif rtype == 19:
        t.sg_members.append({
            **row, "member_id": key["MemberId"], "instance_id": v.get("InstanceId"),
            "rack_id": v.get("RackId"), "client_id": v.get("ClientId"),
            "client_host": v.get("ClientHost"), "process_id": v.get("ProcessId"),
            "topology_epoch": v.get("TopologyEpoch"),
            "rebalance_timeout_ms": v.get("RebalanceTimeoutMs")})
    elif rtype == 21:
        t.sg_target_assignment.append({
            **row, "member_id": key["MemberId"], "active": task_names(v.get("ActiveTasks")),
            "standby": task_names(v.get("StandbyTasks")),
            "warmup": task_names(v.get("WarmupTasks"))})
    elif rtype == 22:
        t.sg_current_assignment.append({
            **row, "member_id": key["MemberId"], "member_epoch": v.get("MemberEpoch"),
            "previous_member_epoch": v.get("PreviousMemberEpoch"),
            "state": STATE_NAMES.get(v.get("State", 127), str(v.get("State"))),
            "active": task_names(v.get("ActiveTasks")),
            "standby": task_names(v.get("StandbyTasks")),
            "warmup": task_names(v.get("WarmupTasks")),
            "active_pending_revocation": task_names(v.get("ActiveTasksPendingRevocation"))})


def target_snapshots(t: Any) -> dict[str, list[tuple[int, int, dict[str, dict[str, Any]]]]]:
    """Per group: (assignment epoch, ts, member -> its target row) after each type 20."""
    targets = by_group(t.sg_target_assignment)
    out: dict[str, list[tuple[int, int, dict[str, dict[str, Any]]]]] = defaultdict(list)
    for group, metas in by_group([e for e in t.sg_epochs if e["kind"] == "target"]).items():
        snap: dict[str, dict[str, Any]] = {}
        rows = iter(targets.get(group, []))
        pending = next(rows, None)
        for meta in metas:
            while pending is not None and (pending["record_ts_ms"], pending["log_offset"]) <= \
                    (meta["record_ts_ms"], meta["log_offset"]):
                if pending["tombstone"]:
                    snap.pop(pending["member_id"], None)
                else:
                    snap[pending["member_id"]] = pending
                pending = next(rows, None)
            if not meta["tombstone"]:
                out[group].append((meta["assignment_epoch"], meta["record_ts_ms"], dict(snap)))
    return out


def _owners(snap: dict[str, dict[str, Any]], role: str) -> Tasks:
    return {task: m for m, row in snap.items() for task in row[role]}


def task_movements(t: Any) -> list[dict[str, Any]]:
    out = []
    for group, snaps in target_snapshots(t).items():
        before: dict[str, Tasks] = {"active": {}, "standby": {}}
        for epoch, ts, snap in snaps:
            for role in ("active", "standby"):
                after = _owners(snap, role)
                for task in sorted(set(after) | set(before[role])):
                    frm, to = before[role].get(task), after.get(task)
                    if frm != to:
                        out.append({"group_id": group, "assignment_epoch": epoch, "ts_ms": ts,
                                    "task": task, "role": role, "from_member": frm,
                                    "to_member": to})
                before[role] = after
    return out


def streams_rebalances(t: Any, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per group-epoch bump, in the gold ``rebalances`` shape."""
    out = []
    snaps = target_snapshots(t)
    current = by_group(t.sg_current_assignment)
    ev_by_group = by_group([{**e, "record_ts_ms": e["timestamp_ms"]} for e in events])
    for group, epochs in by_group([e for e in t.sg_epochs if e["kind"] == "group"]).items():
        prev_members: set[str] = set()
        prev_active: Tasks = {}
        for prev_start, prev_epoch, e in epoch_bumps(epochs):
            start, epoch = e["record_ts_ms"], e["epoch"]
            snap = next((s for ep, _ts, s in snaps.get(group, []) if ep == epoch), None)
            members = set(snap) if snap is not None else prev_members
            _, end = reconciled(current.get(group, []), members, epoch, start)
            evs = [x for x in ev_by_group.get(group, [])
                   if prev_start < x["timestamp_ms"] <= (end or start)]
            active = _owners(snap, "active") if snap is not None else prev_active
            out.append({
                "group_type": "streams", "group_id": group, "from_epoch": prev_epoch,
                "to_epoch": epoch, "start_ts_ms": start, "end_ts_ms": end,
                "duration_ms": None if end is None else end - start,
                "members_before": len(prev_members), "members_after": len(members),
                "joined": sorted(members - prev_members), "left": sorted(prev_members - members),
                "reasons": [": ".join(x for x in (v["kind"], v.get("member_id"), v.get("reason"))
                                      if x) for v in evs if v.get("reason")],
                "tasks_moved": sum(1 for task, m in active.items() if prev_active.get(task) != m),
            })
            prev_members, prev_active = members, active
    return out
