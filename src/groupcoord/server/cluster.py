"""Changes to the nodes of one process: stop and start a node, move a coordinator.

What Kafka's controller and brokers do on a leadership change, applied to the shared
storage (`server.cluster_map` decides who serves what):

- stopping a node closes its listeners and connections and hands what it served to the
  surviving nodes; starting it again opens its listeners on the same ports and gives back
  what it prefers;
- a `__consumer_offsets` partition that changes node is unloaded (its queued and parked
  requests answer NOT_COORDINATOR, its state goes) and loaded again for the new node, which
  answers COORDINATOR_LOAD_IN_PROGRESS until the replay of the partition ends, as a Kafka
  broker resigning and another one electing itself do;
- data partitions and the `__share_group_state` and `__transaction_state` coordinators
  change node with no unload: their in-memory state is the one process's and stays valid,
  so only the answers change (NOT_LEADER_OR_FOLLOWER / NOT_COORDINATOR on the old node).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from groupcoord.logformat.internal_topics import OFFSETS_TOPIC
from groupcoord.server.cluster_map import ClusterMap

if TYPE_CHECKING:
    from groupcoord.server.broker import Broker

log = logging.getLogger("groupcoord.cluster")


class ClusterControl:
    """Node and coordinator operations of a multi-node broker (`config.nodes` > 1)."""

    def __init__(self, broker: Broker) -> None:
        if broker.cluster is None:
            raise ValueError("the broker serves one node: start it with nodes > 1")
        self.broker = broker
        self.cluster: ClusterMap = broker.cluster

    def _offsets_owners(self) -> list[int]:
        return [self.cluster.owner(OFFSETS_TOPIC, p)
                for p in range(self.broker.groups.num_partitions)]

    def _move_shards(self, before: list[int]) -> list[int]:
        """Unload and load again every offsets shard whose node changed."""
        runtime = self.broker.groups
        moved = [p for p, node in enumerate(self._offsets_owners()) if node != before[p]]
        for partition in moved:
            if partition in runtime.shards or partition in runtime.unloaded:
                runtime.unload(partition)
                runtime.load(partition)
        if moved:
            log.info("offsets partitions moved: %s", moved)
        return moved

    def move_partition(self, topic: str, partition: int, node_id: int) -> None:
        """Pin a partition (data or coordinator) to a node."""
        before = self._offsets_owners()
        self.cluster.pin(topic, partition, node_id)
        self._move_shards(before)

    def move_group_coordinator(self, group_id: str, node_id: int) -> int:
        """Move the coordinator of a group to a node; the `__consumer_offsets` partition."""
        partition = self.broker.groups.partition_for(group_id)
        self.move_partition(OFFSETS_TOPIC, partition, node_id)
        return partition

    async def stop_node(self, node_id: int) -> None:
        node = self.cluster.nodes[node_id]
        if not node.live:
            return
        before = self._offsets_owners()
        node.live = False
        await self.broker.close_node(node_id)
        self._move_shards(before)
        log.info("node %d stopped", node_id)

    async def start_node(self, node_id: int) -> None:
        node = self.cluster.nodes[node_id]
        if node.live:
            return
        await self.broker.bind_node(node_id, self.broker.node_ports[node_id])
        before = self._offsets_owners()
        node.live = True
        self._move_shards(before)
        log.info("node %d started", node_id)
