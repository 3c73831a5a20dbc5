"""What the share admin operations (`share_admin`) and the DLQ writer (`share_dlq`) use of
the share runtime (`share_runtime`), as a typed port: the runtime imports them, they import
only this."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Protocol

from groupcoord.apis.services import Shares
from groupcoord.server.broker_ports import BrokerRuntime

if TYPE_CHECKING:
    from groupcoord.coordinator.share.partition import ShareChange, SharePartition
    from groupcoord.coordinator.share.state_store import SharePartitionKey
    from groupcoord.server.share_state import ShareStateLog, ShareStates


class ShareHost(Shares, BrokerRuntime, Protocol):
    """The share runtime as handlers use it (`apis.services.Shares`), with every persisted
    state, the log that writes them, and the writes that change a share-partition."""

    @property
    def store(self) -> ShareStates: ...

    @property
    def state(self) -> ShareStateLog: ...

    def drop(self, key: SharePartitionKey) -> None: ...

    def locked(self, key: SharePartitionKey) -> AbstractAsyncContextManager[None]: ...

    async def commit(self, sp: SharePartition, change: ShareChange, topic_name: str) -> int: ...
