"""What the share admin operations (`share_admin`) and the DLQ writer (`share_dlq`) use of
the share runtime (`share_runtime`), as a typed port: the runtime imports them, they import
only this."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from groupcoord.coordinator.clock import Clock
    from groupcoord.coordinator.share.partition import ShareChange, SharePartition
    from groupcoord.server.broker_ports import CoordinatorHost
    from groupcoord.server.share_configs import GroupConfigStore
    from groupcoord.server.share_state import ShareStateLog, ShareStates

# A share-partition: (group id, topic id, partition).
SPKey = tuple[str, bytes, int]


class ShareHost(Protocol):
    """The live share-partitions, their persisted state and the writes that change it."""

    @property
    def broker(self) -> CoordinatorHost: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def partitions(self) -> dict[SPKey, SharePartition]: ...

    @property
    def store(self) -> ShareStates: ...

    @property
    def state(self) -> ShareStateLog: ...

    @property
    def group_configs(self) -> GroupConfigStore: ...

    def partition(self, group_id: str, topic: Any, index: int) -> SharePartition: ...

    def drop(self, key: SPKey) -> None: ...

    def commit(self, sp: SharePartition, change: ShareChange, topic_name: str) -> int: ...
