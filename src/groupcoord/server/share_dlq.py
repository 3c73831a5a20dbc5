"""The share-group dead-letter queue writer (KIP-1191): phase 2 of Kafka's DLQ flow.

Mirrors Kafka 4.4's `SharePartition.initiateDLQAndArchive` with `ShareGroupDLQStateManager`
(server/src/main/java/org/apache/kafka/server/share/dlq/), in one process:

- Phase 1 is the share-partition's own write: a rejected record, or one released or
  expired at the delivery limit, is persisted ARCHIVING in `__share_group_state`.
- Phase 2, here, soon after on the event loop: the ARCHIVING records' DLQ records are
  appended to the group's DLQ topic (partition = source partition % DLQ partitions, one
  record per offset with Kafka's context headers; key and value copied from the source
  record with `errors.deadletterqueue.copy.record.enable`), then ARCHIVING -> ARCHIVED is
  written and replayed like every share-state change.
- When the DLQ cannot be written (no topic name, a name starting "__" or without the
  broker's `errors.deadletterqueue.topic.name.prefix`, a topic without
  `errors.deadletterqueue.group.enable=true`, a missing topic without
  `errors.deadletterqueue.auto.create.topics.enable`) Kafka logs the error and archives
  anyway; so does this. A missing topic with auto-create on is created as Kafka's DLQ
  manager asks for it (broker default partitions, the enable flag, CreateTime).
- Exactly once, where Kafka is at least once: Kafka resumes records found ARCHIVING after a
  restart by writing them again, so a crash between its DLQ produce and its ARCHIVED write
  duplicates them. Here the first flush of a share-partition loaded with ARCHIVING records
  scans its DLQ partition once for records whose headers name a still-ARCHIVING offset,
  and those are not written again.
  Records ARCHIVING at start-up are resumed at once, not on the partition's first fetch.

Single-threaded on the event loop; the pending flushes are keyed soft state. A flush runs as
a task holding its share-partition's lock (`ShareHost.locked`) from reading the ARCHIVING
records to applying their ARCHIVED write.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from groupcoord.apis import features
from groupcoord.apis.common import topic_name_error
from groupcoord.apis.topic_configs import DLQ_AUTO_CREATE, DLQ_GROUP_ENABLE, DLQ_TOPIC_PREFIX
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.share.configs import dlq_copy_record, dlq_topic
from groupcoord.coordinator.share.dlq import DlqCause, context_headers, dlq_partition, origin
from groupcoord.coordinator.share.records_state import RecordState
from groupcoord.coordinator.share.state_store import SharePartitionKey
from groupcoord.logformat.batch import (
    HEADER_SIZE,
    build_batch,
    decode_records,
    iter_batches,
    records_payload,
)
from groupcoord.logformat.record import record_size
from groupcoord.server.log_records import data_batches
from groupcoord.server.share_host import ShareHost
from groupcoord.storage.config import CorruptBatchError, RecordBatchTooLargeError

if TYPE_CHECKING:
    from groupcoord.coordinator.clock import TimerHandle
    from groupcoord.coordinator.share.partition import SharePartition

log = logging.getLogger("groupcoord.share.dlq")

# ARCHIVING records handled per flush, so that requests interleave with a long backlog.
FLUSH_RECORDS = 500
# A DLQ append that failed (storage error) is tried again this much later, and given up
# after as many attempts as Kafka's DLQ produce (`MAX_REQUEST_ATTEMPTS`).
RETRY_MS = 1_000
MAX_ATTEMPTS = 5
# Bytes of a v2 batch header, and a generous bound on one record's framing.
BATCH_OVERHEAD, RECORD_OVERHEAD = HEADER_SIZE, 32
SOURCE_READ_BYTES = 1024 * 1024


def share_version_supports_dlq() -> bool:
    """share.version >= 2 (`ShareVersion.supportsShareGroupDLQ`), as finalized in
    `apis.features` (Kafka 4.4's default level)."""
    return features.finalized_level(features.SHARE_VERSION) >= features.SHARE_VERSION_DLQ


class DlqTarget(NamedTuple):
    topic: str
    partitions: int
    copy_record: bool


class ShareDlq:
    """Writes the DLQ records of every share-partition's ARCHIVING records."""

    def __init__(self, runtime: ShareHost) -> None:
        self.runtime = runtime
        self.broker = runtime.broker
        self.clock = runtime.broker.clock
        self._pending: dict[SharePartitionKey, TimerHandle] = {}
        self._attempts: dict[SharePartitionKey, int] = {}
        # Offsets whose DLQ record is written but whose ARCHIVED is not yet.
        self._written: dict[SharePartitionKey, set[int]] = {}
        self._scanned: set[tuple[SharePartitionKey, str, int]] = set()
        # Share-partitions loaded with ARCHIVING records: their DLQ records may have been
        # written before the crash, so their DLQ partition is scanned once.
        self._loaded_archiving: set[SharePartitionKey] = set()

    def settings(self) -> GroupCoordinatorConfig:
        """The DLQ's broker settings: dynamic broker configs (IncrementalAlterConfigs on
        the BROKER resource; both are reconfigurable in Kafka) over `--group-config`."""
        dynamic = {k: v for k, v in self.broker.broker_configs.items()
                   if k in (DLQ_AUTO_CREATE, DLQ_TOPIC_PREFIX)}
        return GroupCoordinatorConfig.from_properties({**self.broker.config.extra, **dynamic})

    # -- scheduling ---------------------------------------------------------------------

    def schedule(self, sp: SharePartition, topic_name: str, delay_ms: int = 0) -> None:
        """Flush the share-partition's ARCHIVING records soon (once per key)."""
        key = sp.key
        if key in self._pending:
            return
        self._pending[key] = self.clock.call_at(
            self.clock.now_ms() + delay_ms,
            lambda: self.runtime.run_after_reply(self._flush(key, topic_name)))

    def resume_loaded(self, sp: SharePartition, topic_name: str) -> None:
        """A share-partition initialized from the log with ARCHIVING records: a DLQ write
        a crash (or a reload) interrupted; flush it, looking for copies already written."""
        self._loaded_archiving.add(sp.key)
        self.schedule(sp, topic_name)

    async def resume(self) -> int:
        """At start-up: initialize every persisted share-partition with ARCHIVING records,
        which schedules their flush (`SharePartition.maybeResumeDlqArchiving`, which Kafka
        runs when the share-partition is next initialized); how many."""
        count = 0
        for key, state in list(self.runtime.store.states.items()):
            if state.start_offset < 0 or not any(
                    s == RecordState.ARCHIVING for s, _ in state.offsets.values()):
                continue
            topic = self.broker.topics.by_id(key[1])
            if topic is None:
                continue
            await self.runtime.partition(key[0], topic, key[2])  # initializing schedules it
            count += 1
        return count

    def stop(self) -> None:
        for handle in self._pending.values():
            handle.cancel()
        self._pending.clear()

    def forget(self, key: SharePartitionKey) -> None:
        handle = self._pending.pop(key, None)
        if handle is not None:
            handle.cancel()
        self._written.pop(key, None)
        self._attempts.pop(key, None)
        self._loaded_archiving.discard(key)

    # -- one flush ----------------------------------------------------------------------

    async def _flush(self, key: SharePartitionKey, topic_name: str) -> None:
        self._pending.pop(key, None)
        async with self.runtime.locked(key):
            await self._flush_locked(key, topic_name)

    async def _flush_locked(self, key: SharePartitionKey, topic_name: str) -> None:
        sp = self.runtime.partitions.get(key)
        if sp is None:
            return
        pending = sp.archiving(FLUSH_RECORDS)
        if not pending:
            return
        try:
            self._deliver(sp, topic_name, pending)
        except Exception:
            attempts = self._attempts.get(key, 0) + 1
            self._attempts[key] = attempts
            if attempts < MAX_ATTEMPTS:
                log.warning("DLQ write for %s failed (attempt %d); retrying", key, attempts,
                            exc_info=True)
                self.schedule(sp, topic_name, RETRY_MS)
                return
            log.exception("Failed to write to DLQ, proceeding to ARCHIVED regardless: %s",
                          key)
        offsets = [offset for offset, _count, _cause in pending]
        if await self.runtime.commit(sp, sp.plan_archive(offsets), topic_name):
            self.schedule(sp, topic_name, RETRY_MS)  # the state write failed: again later
            return
        self._attempts.pop(key, None)
        self._written.get(key, set()).difference_update(offsets)
        if sp.archiving(1):
            self.schedule(sp, topic_name)

    def _deliver(self, sp: SharePartition, topic_name: str,
                 pending: list[tuple[int, int, DlqCause]]) -> None:
        """Append the DLQ records not written yet; a config problem is logged, as Kafka
        fails the DLQ write and archives anyway."""
        target = self.target(sp.group_id)
        if isinstance(target, str):
            log.error("Failed to write to DLQ, proceeding to ARCHIVED regardless: %s", target)
            return
        part = dlq_partition(sp.partition, target.partitions)
        done = self._already_written(sp.key, target.topic, part)
        todo = [p for p in pending if p[0] not in done]
        if not todo:
            return
        plog = self.broker.topics.log(target.topic, part)
        limit = plog.config.max_message_bytes if plog is not None else 1_048_588
        sources = self._sources(topic_name, sp.partition, [p[0] for p in todo], limit) \
            if target.copy_record else {}
        now = self.clock.now_ms()
        rows = []
        for offset, count, cause in todo:
            key, value = sources.get(offset, (None, None))
            rows.append((offset, (key, value, context_headers(
                topic_name, sp.partition, offset, sp.group_id, count, cause), now)))
        for chunk in _chunks(rows, limit):
            try:
                self.broker.append(target.topic, part, build_batch([r for _o, r in chunk]),
                                   now)
            except RecordBatchTooLargeError as exc:
                # Kafka's broker rejects the oversized record; its handler fails and the
                # record is archived without a DLQ copy.
                log.error("DLQ record of %s-%d offset %d rejected: %s", topic_name,
                          sp.partition, chunk[0][0], exc)
            done.update(offset for offset, _row in chunk)

    # -- the DLQ topic ------------------------------------------------------------------

    def target(self, group_id: str) -> DlqTarget | str:
        """Where the group's DLQ records go, or why they cannot be written
        (`ProduceRequestHandler.validateDlqTopic`, `createTopicBuilder`)."""
        overrides = self.runtime.group_configs.get(group_id)
        name = dlq_topic(overrides)
        settings = self.settings()
        if not name:
            return f"Configured DLQ topic name in share group: {group_id} is empty."
        if name.startswith("__"):
            return (f"Configured DLQ topic name in share group: {group_id} cannot start "
                    f"with __, topic: {name}.")
        topic = self.broker.topics.get(name)
        if topic is not None and topic.configs.get(DLQ_GROUP_ENABLE, "false").lower() != "true":
            return (f"DLQ is not enabled on configured DLQ topic for share group: {group_id}, "
                    f"topic: {name}.")
        auto_create = settings.errors_deadletterqueue_auto_create_topics_enable
        if topic is None and not auto_create:
            return (f"DLQ topic does not exist and auto create is disabled on cluster for "
                    f"share group: {group_id}, topic: {name}.")
        prefix = settings.errors_deadletterqueue_topic_name_prefix
        if prefix and not name.startswith(prefix):
            return (f"Configured DLQ topic name does not comply with the DLQ topic prefix in "
                    f"share group: {group_id}, topic: {name}, prefix: {prefix}.")
        if topic is None:
            # Kafka's CreateTopics would refuse it (INVALID_TOPIC_EXCEPTION) and the DLQ
            # write fail; a name is never a path of its own here.
            problem = topic_name_error(name)
            if problem:
                return f"Unable to create DLQ topic {name} for share group {group_id}: {problem}"
            topic = self.broker.topics.create(name, self.broker.config.default_partitions, {
                DLQ_GROUP_ENABLE: "true", "message.timestamp.type": "CreateTime"})
            log.info("created DLQ topic %s for share group %s", name, group_id)
        return DlqTarget(name, topic.num_partitions, dlq_copy_record(overrides))

    def _already_written(self, key: SharePartitionKey, dlq_topic_name: str,
                         part: int) -> set[int]:
        """The key's ARCHIVING offsets that already have a DLQ record: those written in
        this process, and, for a share-partition loaded with ARCHIVING records, those found
        in the DLQ partition (written before a crash that came before their ARCHIVED),
        scanned once per DLQ partition: O(its size), at the first such flush only."""
        if key in self._loaded_archiving and (key, dlq_topic_name, part) not in self._scanned:
            # One scan serves every share-partition loaded so far (all of them, at start-up).
            loaded = set(self._loaded_archiving)
            self._scanned.update((k, dlq_topic_name, part) for k in loaded)
            for found_key, offset in self._scan(dlq_topic_name, part):
                if found_key in loaded:
                    self._written.setdefault(found_key, set()).add(offset)
        return self._written.setdefault(key, set())

    def _scan(self, dlq_topic_name: str, part: int) -> Iterable[tuple[SharePartitionKey, int]]:
        for view in data_batches(self.broker.topics.log(dlq_topic_name, part)):
            for rec in decode_records(view):
                named = origin(rec.headers)
                if named is None:
                    continue
                group_id, topic_name, partition, offset = named
                topic = self.broker.topics.get(topic_name)
                if topic is None:
                    continue
                key = (group_id, bytes(topic.topic_id), partition)
                state = self.runtime.store.get(key)
                if state is not None and state.offsets.get(offset, (None,))[0] \
                        == RecordState.ARCHIVING:
                    yield key, offset

    def _sources(self, topic_name: str, partition: int, offsets: list[int],
                 limit: int) -> dict[int, tuple[bytes | None, bytes | None]]:
        """Key and value of the source records at `offsets` (`ShareGroupDLQRecordFetcher`);
        left out (the DLQ record gets headers only): an offset no longer in the log, a
        record larger than `limit` (the DLQ topic's max.message.bytes), every record of a
        compressed batch whose records section alone decompresses past `limit`, and every
        record from damaged stored bytes on."""
        plog = self.broker.topics.log(topic_name, partition)
        wanted, found = set(offsets), {}
        pos, last = min(offsets), max(offsets)
        while plog is not None and pos <= last:
            try:
                data = plog.read(pos, SOURCE_READ_BYTES)
            except CorruptBatchError:
                break  # damaged stored bytes: the rest go with headers only
            moved = pos
            for header, view in iter_batches(data):
                moved = max(moved, header.last_offset + 1)
                if header.is_control or not wanted.intersection(
                        range(header.base_offset, header.last_offset + 1)):
                    continue
                if header.compression and len(records_payload(view, header)) > limit:
                    continue
                for rec in decode_records(view):
                    offset = header.base_offset + rec.offset_delta
                    if offset in wanted and record_size(rec) <= limit:
                        found[offset] = (rec.key, rec.value)
            if moved == pos:
                break
            pos = moved
        return found


def _chunks(rows: list[tuple[int, tuple[bytes | None, bytes | None, list, int]]],
            limit: int) -> Iterable[list]:
    """Rows cut into batches under `limit` bytes; a record over it alone goes alone."""
    chunk: list = []
    size = BATCH_OVERHEAD
    for row in rows:
        key, value, headers, _ts = row[1]
        need = RECORD_OVERHEAD + len(key or b"") + len(value or b"") + sum(
            len(n) + len(v) + 10 for n, v in headers)
        if chunk and size + need > limit:
            yield chunk
            chunk, size = [], BATCH_OVERHEAD
        chunk.append(row)
        size += need
    if chunk:
        yield chunk
