"""Control operations on a running broker's coordinators and nodes, for tests: a Python
API on the broker's loop and the `/cluster/...` routes of the control endpoint.

    GET  /cluster                                -> {"nodes": [{"node_id", "live", "ports"}]}
    POST /cluster/group       {"group"}          -> {"partition": P, "node": N}
    POST /cluster/move-group  {"group", "node"}  -> {"partition": P}
    POST /cluster/stop-node   {"node"}           -> {}
    POST /cluster/start-node  {"node"}           -> {}
    POST /cluster/unload-group {"group"}         -> {"partition": P}
    POST /cluster/load-group  {"group"}          -> {"partition": P}

Moving a group's coordinator and stopping or starting a node need several nodes
(`--nodes`, `server.cluster`); unloading and loading a group's shard work on one node too
(NOT_COORDINATOR while unloaded, COORDINATOR_LOAD_IN_PROGRESS while it replays again).
"""

from __future__ import annotations

from typing import Any

from groupcoord.server.broker import Broker
from groupcoord.server.cluster import ClusterControl


class ControlError(ValueError):
    """A control request that cannot be carried out (bad arguments, one node only)."""


def _control(broker: Broker) -> ClusterControl:
    try:
        return ClusterControl(broker)
    except ValueError as exc:
        raise ControlError(str(exc)) from exc


def _node(broker: Broker, node: Any) -> int:
    if broker.cluster is None or not isinstance(node, int) or isinstance(node, bool) \
            or node not in broker.cluster.nodes:
        raise ControlError(f"no node {node!r}")
    return node


def _group(group: Any) -> str:
    if not isinstance(group, str):
        raise ControlError("group must be a string")
    return group


def describe(broker: Broker) -> dict[str, Any]:
    if broker.cluster is None:
        return {"nodes": [{"node_id": broker.config.node_id, "live": True,
                           "ports": [b.port for b in broker.bound]}]}
    return {"nodes": [{"node_id": n.node_id, "live": n.live,
                       "ports": broker.node_ports.get(n.node_id, [])}
                      for n in broker.cluster.nodes.values()]}


def group_coordinator(broker: Broker, group: str) -> dict[str, int]:
    """The group's `__consumer_offsets` partition and the node coordinating it."""
    from groupcoord.logformat.internal_topics import OFFSETS_TOPIC

    partition = broker.groups.partition_for(_group(group))
    cluster = broker.cluster
    node = broker.config.node_id if cluster is None else cluster.owner(OFFSETS_TOPIC, partition)
    return {"partition": int(partition), "node": node}


def move_group(broker: Broker, group: str, node: int) -> int:
    """Move the coordinator of `group` to `node`; its `__consumer_offsets` partition."""
    return _control(broker).move_group_coordinator(_group(group), _node(broker, node))


async def stop_node(broker: Broker, node: int) -> None:
    await _control(broker).stop_node(_node(broker, node))


async def start_node(broker: Broker, node: int) -> None:
    await _control(broker).start_node(_node(broker, node))


def unload_group(broker: Broker, group: str) -> int:
    partition = broker.groups.partition_for(_group(group))
    broker.groups.unload(partition)
    return int(partition)


def load_group(broker: Broker, group: str) -> int:
    partition = broker.groups.partition_for(_group(group))
    broker.groups.load(partition)
    return int(partition)


async def route(broker: Broker, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """Answer a `/cluster` route; KeyError for an unknown path, ControlError for bad input."""
    if path == "/cluster":
        return describe(broker)
    if method != "POST":
        raise ControlError(f"{path} takes POST")
    if path == "/cluster/group":
        return group_coordinator(broker, _group(body.get("group")))
    if path == "/cluster/move-group":
        return {"partition": move_group(broker, _group(body.get("group")),
                                        _node(broker, body.get("node")))}
    if path == "/cluster/stop-node":
        await stop_node(broker, _node(broker, body.get("node")))
        return {}
    if path == "/cluster/start-node":
        await start_node(broker, _node(broker, body.get("node")))
        return {}
    if path == "/cluster/unload-group":
        return {"partition": unload_group(broker, _group(body.get("group")))}
    if path == "/cluster/load-group":
        return {"partition": load_group(broker, _group(body.get("group")))}
    raise KeyError(path)
