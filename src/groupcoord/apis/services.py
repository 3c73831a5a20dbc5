"""The broker services a handler reaches through its `RequestContext`, as protocols: the
topics and their logs, the share-partitions, the transaction coordinator, the producer
state of the partitions and the fetch sessions. The server implements them
(`server.topics`, `server.share_runtime`, `server.transactions`, `server.producer_state`,
`server.fetch_sessions`); handlers see only what they use, so `apis` never imports
`server`."""

from __future__ import annotations

from collections.abc import Coroutine, Iterable, Mapping, Sequence
from typing import Any, Protocol

from groupcoord.coordinator.share.partition import Acquired, SharePartition
from groupcoord.coordinator.share.sessions import ShareSession, ShareSessionCache
from groupcoord.coordinator.share.state_store import PersistedState, SharePartitionKey
from groupcoord.coordinator.transactions.coordinator import TxnReply
from groupcoord.coordinator.transactions.state import (
    TopicPartition,
    TransactionMetadata,
    TxnMarker,
)

# -- topics -------------------------------------------------------------------------------


class PartitionLogView(Protocol):
    """The part of `storage.PartitionLog` handlers read."""

    @property
    def log_start_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    def read(self, offset: int, max_bytes: int,
             max_offset: int | None = None) -> memoryview: ...
    def offset_for_timestamp(self, timestamp: int) -> Any: ...


class TopicInfo(Protocol):
    name: str
    topic_id: bytes
    num_partitions: int
    internal: bool
    configs: dict[str, str]


class TopicMetadata(Protocol):
    """Topics of the broker (`server.topics.TopicStore`)."""

    def get(self, name: str) -> TopicInfo | None: ...
    def by_id(self, topic_id: bytes) -> TopicInfo | None: ...
    def all(self) -> Iterable[TopicInfo]: ...
    def create(self, name: str, num_partitions: int, configs: dict[str, str]) -> TopicInfo: ...
    def delete(self, name: str) -> None: ...
    def add_partitions(self, name: str, total: int) -> None: ...
    def set_configs(self, name: str, changes: dict[str, str | None]) -> None: ...
    def log(self, name: str, partition: int) -> PartitionLogView | None: ...
    def delete_records(self, name: str, partition: int, offset: int) -> int: ...


# -- share groups -------------------------------------------------------------------------


class GroupConfigs(Protocol):
    """Dynamic group configs (`server.share_configs.GroupConfigStore`)."""

    def get(self, group_id: str) -> Mapping[str, str]: ...
    def set(self, group_id: str, changes: Mapping[str, str | None]) -> None: ...


class PersistedStates(Protocol):
    """The share-state shards' persisted state (`server.share_state.ShareStates`)."""

    def get(self, key: SharePartitionKey) -> PersistedState | None: ...


class ShareSummary(Protocol):
    """One share-partition's offsets as DescribeShareGroupOffsets shows them."""

    @property
    def start_offset(self) -> int: ...
    @property
    def lag(self) -> int: ...


class Shares(Protocol):
    """The share-partitions and share sessions (`server.share_runtime.ShareRuntime`)."""

    @property
    def sessions(self) -> ShareSessionCache: ...
    @property
    def group_configs(self) -> GroupConfigs: ...
    @property
    def store(self) -> PersistedStates: ...
    @property
    def partitions(self) -> Mapping[SharePartitionKey, SharePartition]: ...

    async def partition(self, group_id: str, topic: TopicInfo,
                        index: int) -> SharePartition: ...
    async def acquire(self, sp: SharePartition, topic_name: str, member_id: str,
                      max_records: int, max_bytes: int, record_limit: bool = False,
                      batch_size: int = 0) -> tuple[memoryview | None, list[Acquired]]: ...
    async def acknowledge(self, sp: SharePartition, topic_name: str, member_id: str,
                          batches: Sequence[Any]) -> int: ...
    async def release_session(self, session: ShareSession) -> None: ...
    def reconfigure(self, group_id: str) -> None: ...
    def lock_duration_ms(self, group_id: str) -> int: ...
    def summary(self, group_id: str, topic: TopicInfo, index: int) -> ShareSummary: ...
    def state_partitions(self, group_id: str) -> dict[bytes, set[int]]: ...
    async def reset_start_offset(self, group_id: str, topic: TopicInfo, index: int,
                                 offset: int) -> None: ...
    async def initialize_state(self, group_id: str, parts: dict[bytes, Any],
                               state_epoch: int = 0,
                               start_offsets: Mapping[bytes, int] | None = None) -> None: ...
    async def delete_state(self, group_id: str, topic_id: bytes) -> None: ...
    async def delete_group_state(self, group_id: str) -> None: ...
    def run_after_reply(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` as a task of its own (the share-state initialization a heartbeat
        asks for, after its reply; a closed connection's release; a DLQ flush)."""
        ...


# -- transactions -------------------------------------------------------------------------


class Transactions(Protocol):
    """The transaction coordinator (`server.transactions.TransactionRuntime`)."""

    async def init_producer_id(self, tid: str, timeout_ms: int,
                               expected: tuple[int, int] | None) -> TxnReply: ...
    async def add_partitions(self, tid: str, pid: int, epoch: int,
                             partitions: list[TopicPartition], client_tv: int = 0) -> int: ...
    def verify_partitions(self, tid: str, pid: int, epoch: int,
                          partitions: list[TopicPartition]) -> dict[TopicPartition, int]: ...
    async def end_txn(self, tid: str, pid: int, epoch: int, commit: bool,
                      client_tv: int = 0) -> TxnReply: ...
    def metadata(self, tid: str) -> TransactionMetadata | None: ...
    async def verify_at_coordinator(self, tid: str, pid: int, epoch: int,
                                    tp: TopicPartition, add: bool) -> int:
        """KIP-890 for a partition leader: the transaction coordinator's answer (verified,
        or added when `add`), wherever it runs."""
        ...
    async def write_marker(self, tp: TopicPartition, marker: TxnMarker) -> int:
        """Append a marker to a partition this node hosts (WriteTxnMarkers); 0 or the
        partition's error."""
        ...
    def list_transactions(self, states: list[str], producer_ids: list[int], duration_ms: int,
                          pattern: str | None, now_ms: int
                          ) -> tuple[list[TransactionMetadata], list[str]]: ...


# -- producer state -----------------------------------------------------------------------


class AppendedBatch(Protocol):
    """A batch a producer appended (`server.producer_state.BatchMetadata`)."""

    @property
    def first_offset(self) -> int: ...


class ProducerView(Protocol):
    """One producer of a partition (`server.producer_state.ProducerEntry`)."""

    @property
    def epoch(self) -> int: ...
    @property
    def last_seq(self) -> int: ...
    @property
    def last_timestamp(self) -> int: ...
    @property
    def coordinator_epoch(self) -> int: ...
    @property
    def txn_first_offset(self) -> int: ...


class ProducerStateView(Protocol):
    """The producers of one partition (`server.producer_state.PartitionProducerState`)."""

    @property
    def producers(self) -> Mapping[int, ProducerView]: ...

    def last_stable_offset(self, high_watermark: int) -> int: ...
    def has_ongoing(self, pid: int, epoch: int) -> bool: ...
    def check_transactional(self, pid: int, transactional: bool) -> int: ...
    def check(self, pid: int, epoch: int, first_seq: int,
              last_seq: int) -> tuple[int, AppendedBatch | None]: ...
    def record(self, pid: int, epoch: int, first_seq: int, last_seq: int, first_offset: int,
               last_offset: int, timestamp: int) -> None: ...


class Producers(Protocol):
    """Producer ids and the producer state of every partition
    (`server.producer_state.ProducerStateManager`)."""

    def init_producer_id(self) -> tuple[int, int]: ...
    def partition(self, topic: str, partition: int) -> ProducerStateView | None: ...


# -- fetch sessions (KIP-227) ------------------------------------------------------------


class FetchPartition(Protocol):
    """One partition of a fetch (`server.fetch_sessions.CachedPartition`)."""

    @property
    def key(self) -> tuple[str | bytes, int]: ...
    @property
    def fetch_offset(self) -> int: ...
    @property
    def max_bytes(self) -> int: ...


class FetchContextView(Protocol):
    """One Fetch's session context (`server.fetch_sessions.FetchContext`)."""

    @property
    def error(self) -> int: ...
    @property
    def partitions(self) -> Sequence[FetchPartition]: ...

    def finish(self, results: list[tuple[Any, int, int, int, int]], uses_ids: bool,
               now_ms: int) -> tuple[int, list[int]]:
        """(session id, indexes of `results` to answer); each result starts with one of
        `partitions`."""
        ...


class FetchSessions(Protocol):
    """The fetch session cache (`server.fetch_sessions.FetchSessionCache`)."""

    def new_context(self, session_id: int, epoch: int,
                    requested: list[tuple[tuple[str | bytes, int], int, int]],
                    forgotten: list[tuple[str | bytes, int]], uses_ids: bool,
                    now_ms: int) -> FetchContextView: ...
