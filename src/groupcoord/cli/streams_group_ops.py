"""What `groupcoord groups` asks the broker about streams groups (KIP-1071), as plain data.

Mirrors Kafka's `kafka-streams-groups.sh` (StreamsGroupCommand): StreamsGroupDescribe for
the state, topology and members with their tasks; committed offsets (OffsetFetch) and end
offsets (ListOffsets) of each task's input partitions for the lag per task. A task
`<subtopology>_<partition>` reads partition <partition> of each of its subtopology's
source and repartition-source topics.
"""

from __future__ import annotations

from typing import Any

from groupcoord.cli import group_ops as ops
from groupcoord.cli.wire_client import WireClient, check
from groupcoord.wire.generated import streams_group_describe as sgd


def _tasks(task_ids: list[Any]) -> list[str]:
    return [f"{t.subtopology_id}_{p}" for t in task_ids for p in t.partitions]


def describe_streams_group(client: WireClient, group: str) -> dict[str, Any]:
    response, _ = client.request(sgd.StreamsGroupDescribeRequest(group_ids=[group]), 1)
    described = response.groups[0]
    check(described.error_code, f"StreamsGroupDescribe {group}")
    inputs: dict[str, list[str]] = {}
    if described.topology is not None:
        for s in described.topology.subtopologies or []:
            inputs[s.subtopology_id] = sorted(
                list(s.source_topics) + [t.name for t in s.repartition_source_topics])
    return {
        **ops.group_summary(described, "streams"),
        "topology_epoch": described.topology.epoch if described.topology else None,
        "inputs": inputs,
        "members": [{
            "member_id": m.member_id, "instance_id": m.instance_id, "host": m.client_host,
            "client_id": m.client_id, "process_id": m.process_id,
            "member_epoch": m.member_epoch, "topology_epoch": m.topology_epoch,
            "active": _tasks(m.assignment.active_tasks),
            "standby": _tasks(m.assignment.standby_tasks),
            "warmup": _tasks(m.assignment.warmup_tasks),
            "target_active": _tasks(m.target_assignment.active_tasks),
            "target_standby": _tasks(m.target_assignment.standby_tasks),
        } for m in described.members],
    }


def task_rows(client: WireClient, group: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per active task: its input partitions' committed offset, end and lag."""
    committed = ops.committed_offsets(client, group["group"])
    owned = [(task, m) for m in group["members"] for task in m["active"]]
    partitions = sorted({(topic, int(task.rsplit("_", 1)[1]))
                         for task, _ in owned
                         for topic in group["inputs"].get(task.rsplit("_", 1)[0], [])})
    ends = ops.list_offsets(client, partitions, ops.LATEST) if partitions else {}
    rows = []
    for task, member in sorted(owned, key=lambda tm: _task_key(tm[0])):
        subtopology, partition = task.rsplit("_", 1)
        for topic in group["inputs"].get(subtopology, []):
            tp = (topic, int(partition))
            current, end = committed.get(tp), ends.get(tp)
            rows.append({
                "group": group["group"], "task": task, "topic": topic,
                "partition": int(partition), "current_offset": current, "log_end_offset": end,
                "lag": None if current is None or end is None else max(end - current, 0),
                "member_id": member["member_id"], "process_id": member["process_id"],
            })
    return rows


def _task_key(task: str) -> tuple[str, int]:
    subtopology, partition = task.rsplit("_", 1)
    return subtopology, int(partition)
