"""A group's internal state as plain JSON-ready data, for tests: what the describe APIs
show, plus what they do not (generation, leader, per-member session deadlines, armed
timers with their deadlines, committed offsets).

It runs as an ordinary read-only operation on the group's coordinator shard, so it sees the
state between two operations, never half-way through one. `timers` are the shard's keyed
timers whose key names the group: `[kind, deadline_ms]` pairs plus the rest of the key
(`("heartbeat", group, member)` -> `{"kind": "heartbeat", "key": [member], ...}`).
"""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.result import Result
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.broker import Broker


async def describe_group(broker: Broker, group_id: str) -> dict[str, Any]:
    """The state of `group_id` (`"type": "none"` when no group of that id exists)."""
    runtime = broker.groups
    task = runtime.shard(runtime.partition_for(group_id))

    def read(shard: GroupCoordinatorShard, _ctx: Any, now_ms: int) -> Result:
        state = _group(shard, group_id)
        state["now_ms"] = now_ms
        state["coordinator_partition"] = task.partition
        state["timers"] = sorted(
            ({"kind": key[0], "key": list(key[2:]), "deadline_ms": deadline,
              "due_in_ms": deadline - now_ms}
             for key, (_seq, _handle, deadline) in task.timers.items()
             if len(key) > 1 and key[1] == group_id),
            key=lambda t: (t["deadline_ms"], t["kind"]))
        state["offsets"] = {
            topic: {str(p): o.offset for p, o in sorted(parts.items())}
            for topic, parts in sorted(shard.offsets.group(group_id).items())}
        return Result(response=state)

    result: dict[str, Any] = await runtime.call(group_id, read)
    return result


def _group(shard: GroupCoordinatorShard, group_id: str) -> dict[str, Any]:
    classic = shard.classic.get(group_id)
    if classic is not None:
        return {
            "group_id": group_id, "type": "classic", "state": classic.state.value,
            "generation_id": classic.generation_id, "leader_id": classic.leader_id,
            "protocol_type": classic.protocol_type, "protocol": classic.protocol_name,
            "members": [
                {"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                 "client_id": m.client_id, "client_host": m.client_host,
                 "session_timeout_ms": m.session_timeout_ms,
                 "rebalance_timeout_ms": m.rebalance_timeout_ms,
                 "awaiting_join": m.awaiting_join, "awaiting_sync": m.awaiting_sync,
                 "session_deadline_ms": m.heartbeat_deadline_ms}
                for m in classic.members.values()],
        }
    if shard.consumer.get(group_id) is not None:
        described = shard.consumer_group_describe(group_id).response
        return {"group_id": group_id, "type": "consumer", "state": described.group_state,
                **message_dict(described)}
    if group_id in shard.share.groups:
        described = shard.share_group_describe(group_id).response
        return {"group_id": group_id, "type": "share", "state": described.group_state,
                **message_dict(described)}
    return {"group_id": group_id, "type": "none", "members": []}


def message_dict(message: Any) -> Any:
    """A generated message as JSON-ready data (bytes as their length: assignments and
    metadata are opaque here)."""
    fields = getattr(type(message), "_FIELDS", None)
    if fields is not None:
        return {name: message_dict(getattr(message, name)) for name in fields}
    if isinstance(message, list):
        return [message_dict(item) for item in message]
    if isinstance(message, (bytes, bytearray, memoryview)):
        return {"bytes": len(message)}
    return message
