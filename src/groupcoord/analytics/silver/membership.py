"""Silver membership tables from the (small) non-commit coordinator records.

Group-membership records are a tiny share of ``__consumer_offsets`` (one GroupMetadata per
classic generation, a handful of KIP-848 records per member change), so they are decoded on
the driver into row dicts: ``classic_generations`` (subscription and assignment bytes
decoded), ``cg_epochs`` (types 3/11), ``cg_members`` (5/10), ``cg_target_assignment`` (7/13,
with the epoch from 6/12), ``cg_current_assignment`` (8/14), and the streams-group tables ``sg_*``
(``streams_groups``). KIP-848 records name topics by id; ``topic_names`` (from
``partition.metadata``) turns them into names.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from groupcoord.analytics.read.dump import uuid_to_string
from groupcoord.analytics.read.reader import decode_assignment, decode_record, decode_subscription
from groupcoord.analytics.silver import streams_groups

CONSUMER_TYPES = {3: "consumer", 5: "consumer", 6: "consumer", 7: "consumer", 8: "consumer",
                  11: "share", 10: "share", 12: "share", 13: "share", 14: "share"}
STATE_NAMES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS",
               127: "UNKNOWN"}


@dataclass
class MembershipTables:
    classic_generations: list[dict[str, Any]] = field(default_factory=list)
    cg_epochs: list[dict[str, Any]] = field(default_factory=list)
    cg_members: list[dict[str, Any]] = field(default_factory=list)
    cg_target_assignment: list[dict[str, Any]] = field(default_factory=list)
    cg_current_assignment: list[dict[str, Any]] = field(default_factory=list)
    sg_epochs: list[dict[str, Any]] = field(default_factory=list)
    sg_members: list[dict[str, Any]] = field(default_factory=list)
    sg_target_assignment: list[dict[str, Any]] = field(default_factory=list)
    sg_current_assignment: list[dict[str, Any]] = field(default_factory=list)
    skipped_unknown: int = 0


def _classic_member(m: dict[str, Any]) -> dict[str, Any]:
    sub = decode_subscription(m["subscription"]) or {}
    asg = decode_assignment(m["assignment"]) or {}
    return {
        "member_id": m["memberId"], "group_instance_id": m.get("groupInstanceId"),
        "client_id": m["clientId"], "client_host": m["clientHost"],
        "session_timeout_ms": m["sessionTimeout"], "rebalance_timeout_ms": m["rebalanceTimeout"],
        "topics": list(sub.get("topics") or []),
        "assigned": [{"topic": tp["topic"], "partitions": list(tp["partitions"])}
                     for tp in asg.get("assignedPartitions") or []],
    }


def _named(parts: list[dict[str, Any]] | None, names: dict[str, str]) -> list[dict[str, Any]]:
    out = []
    for tp in parts or []:
        tid = uuid_to_string(tp["TopicId"])
        out.append({"topic_id": tid, "topic": names.get(tid, tid),
                    "partitions": list(tp["Partitions"])})
    return out


def build(rows: Iterable[dict[str, Any]], topic_names: dict[str, str]) -> MembershipTables:
    """Decode bronze rows (``key``, ``value``, ``record_ts_ms``, ``log_offset``, ...) in log order."""
    t = MembershipTables()
    for row in rows:
        if row.get("txn_outcome") in ("aborted", "open") or row["key"] is None:
            continue
        rec = decode_record(row["key"], row["value"])
        if rec is None:
            t.skipped_unknown += 1
            continue
        base = {"record_ts_ms": row["record_ts_ms"], "coord_partition": row["coord_partition"],
                "log_offset": row["log_offset"], "tombstone": rec.value is None}
        _dispatch(t, rec.record_type, rec.key, rec.value, base, topic_names)
    return t


def _dispatch(t: MembershipTables, rtype: int, key: dict[str, Any], v: dict[str, Any] | None,
              base: dict[str, Any], names: dict[str, str]) -> None:
    if rtype == 2:
        v = v or {}
        t.classic_generations.append({
            "group_id": key["group"], **base, "generation": v.get("generation"),
            "protocol_type": v.get("protocolType"), "protocol": v.get("protocol"),
            "leader": v.get("leader"), "state_ts_ms": v.get("currentStateTimestamp"),
            "members": [_classic_member(m) for m in v.get("members") or []]})
        return
    if rtype in streams_groups.STREAMS_TYPES:
        streams_groups.dispatch(t, rtype, key, v, base)
        return
    gtype = CONSUMER_TYPES.get(rtype)
    if gtype is None:
        return
    row = {"group_type": gtype, "group_id": key["GroupId"], **base}
    v = v or {}
    if rtype in (3, 11):
        t.cg_epochs.append({**row, "epoch": v.get("Epoch"), "metadata_hash": v.get("MetadataHash")})
    elif rtype in (6, 12):
        t.cg_epochs.append({**row, "assignment_epoch": v.get("AssignmentEpoch"), "epoch": None,
                            "metadata_hash": None, "kind": "target"})
    elif rtype in (5, 10):
        t.cg_members.append({
            **row, "member_id": key["MemberId"], "instance_id": v.get("InstanceId"),
            "rack_id": v.get("RackId"), "client_id": v.get("ClientId"),
            "client_host": v.get("ClientHost"),
            "subscribed_topics": list(v.get("SubscribedTopicNames") or []),
            "subscribed_regex": v.get("SubscribedTopicRegex"),
            "rebalance_timeout_ms": v.get("RebalanceTimeoutMs"),
            "server_assignor": v.get("ServerAssignor"),
            "uses_classic_protocol": v.get("ClassicMemberMetadata") is not None})
    elif rtype in (7, 13):
        t.cg_target_assignment.append({**row, "member_id": key["MemberId"],
                                       "assigned": _named(v.get("TopicPartitions"), names)})
    elif rtype in (8, 14):
        t.cg_current_assignment.append({
            **row, "member_id": key["MemberId"], "member_epoch": v.get("MemberEpoch"),
            "previous_member_epoch": v.get("PreviousMemberEpoch"),
            "state": STATE_NAMES.get(v.get("State", 127), str(v.get("State"))),
            "assigned": _named(v.get("AssignedPartitions"), names),
            "pending_revocation": _named(v.get("PartitionsPendingRevocation"), names)})


def normalise_epoch_rows(t: MembershipTables) -> None:
    """Give every ``cg_epochs`` row the same keys (group epochs and target epochs share it)."""
    for r in t.cg_epochs:
        r.setdefault("kind", "group")
        r.setdefault("assignment_epoch", None)
