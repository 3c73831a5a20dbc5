"""A client workload for a cluster under faults (checked by helpers.cluster_checks).

Real confluent-kafka clients run in threads of the test process, every event stamped with
this process's monotonic clock (so the events of different clients compare):

- two keyed producers on the `events` topic, acks=all: one idempotent (retries on), one plain
  with retries off. Retries off does not make the plain one send each record once: librdkafka
  sends a request again, retries off or not, when it counts it as not persisted, and it counts
  so the requests in flight to a broker it drops because a Metadata answer no longer lists it
  (`Local: Broker handle destroyed`, actions Refresh,MsgNotPersisted), although that broker may
  have stored them. Only the idempotent producer is deduplicated by the broker;
- a transactional producer on the `txn` topic, each transaction a few records to one partition,
  every fifth aborted on purpose. Transactions complete only where the transaction coordinator
  and the partition's leader are one node (WriteTxnMarkers between nodes is not done yet), so
  before each transaction it picks a partition led by its coordinator's node (none: it waits);
- consumer groups on `events`, classic and consumer protocol, two members each, committing
  every COMMIT_INTERVAL_S and reporting every assignment change;
- a watcher asking each group's coordinator for its committed offsets and state every
  WATCH_INTERVAL_S.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import cast

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.coordinator.classic.consumer_protocol import decode_assignment
from groupcoord.wire.generated.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from groupcoord.wire.generated.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from groupcoord.wire.generated.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupcoord.wire.generated.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from helpers.postgres_cluster import GROUP_KEY
from helpers.wire_client import WireConnection

EVENTS_TOPIC = "events"
EVENTS_PARTITIONS = 6
TXN_TOPIC = "txn"
TXN_PARTITIONS = 3
TRANSACTIONAL_ID = "fault-run-txn"
# How often the consumers commit and the watcher looks.
COMMIT_INTERVAL_S = 0.25
WATCH_INTERVAL_S = 0.25
# A node that does not answer in this long is down or paused: ask the next.
ASK_TIMEOUT_S = 2.0
READ_BACK_TIMEOUT_S = 90.0
# librdkafka logs critical messages only: its connection errors while nodes die are expected.
QUIET = {"log_level": 2}


def now() -> float:
    return time.monotonic()


def create_topics(bootstrap: str, replication: int = 1) -> None:
    """The workload's two topics (groupcoord on PostgreSQL has one copy of record: 1)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    futures = admin.create_topics([NewTopic(EVENTS_TOPIC, EVENTS_PARTITIONS, replication),
                                   NewTopic(TXN_TOPIC, TXN_PARTITIONS, replication)])
    for future in futures.values():
        future.result(timeout=30)


class ClientThread(threading.Thread):
    """A client of the workload in its own thread, running until `stopping` is set."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.stopping = threading.Event()


# --- producers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Ack:
    partition: int
    offset: int
    at: float


@dataclass
class ProducerLog:
    """What one producer sent and what the cluster acknowledged, by sequence; `deduplicated`:
    the broker must store each of its records once even when the client sends it again
    (idempotent)."""

    name: str
    deduplicated: bool
    sent: dict[int, float] = field(default_factory=dict)
    acked: dict[int, Ack] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    fatal_errors: list[str] = field(default_factory=list)

    def value(self, seq: int) -> bytes:
        return f"{self.name}:{seq}".encode()


def sequence_of(value: bytes) -> tuple[str, int]:
    name, seq = value.decode().rsplit(":", 1)
    return name, int(seq)


class KeyedProducer(ClientThread):
    """Produces `name:seq` records to `events` at `rate` a second until stopped."""

    def __init__(self, bootstrap: str, name: str, idempotent: bool, rate: int) -> None:
        super().__init__(f"producer-{name}")
        self.bootstrap = bootstrap
        self.idempotent = idempotent
        self.rate = rate
        self.log = ProducerLog(name, deduplicated=idempotent)
        self.drained = True

    def _producer(self) -> Producer:
        config: dict[str, object] = {
            "bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5,
            "enable.idempotence": self.idempotent, "message.timeout.ms": 120_000, **QUIET}
        if not self.idempotent:
            config["retries"] = 0  # sent once: stored at most once
        return Producer(config)

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        _, seq = sequence_of(cast(bytes, msg.value()))
        if err is None:
            self.log.acked[seq] = Ack(cast(int, msg.partition()), cast(int, msg.offset()), now())
        else:
            self.log.failed[seq] = str(err)
            if err.fatal():
                self.log.fatal_errors.append(str(err))

    def run(self) -> None:
        producer = self._producer()
        seq = 0
        started = now()
        fatal_seen = 0
        while not self.stopping.is_set():
            producer.poll(0)
            if len(self.log.fatal_errors) > fatal_seen:
                # A fatal idempotence error leaves the producer unusable: go on with a new one
                # (the checker reports the error).
                fatal_seen = len(self.log.fatal_errors)
                producer.flush(10)
                producer = self._producer()
            value = self.log.value(seq)
            try:
                producer.produce(EVENTS_TOPIC, key=str(seq % 97).encode(), value=value,
                                 on_delivery=self._delivered)
            except BufferError:
                producer.poll(0.05)
                continue
            self.log.sent[seq] = now()
            seq += 1
            pause = started + seq / self.rate - now()
            if pause > 0:
                self.stopping.wait(pause)
        self.drained = producer.flush(120) == 0


class TxnOutcome(Enum):
    COMMITTED = "committed"
    ABORTED = "aborted"
    UNKNOWN = "unknown"  # the producer failed fatally before knowing


@dataclass
class TxnLog:
    """Each transaction's records (its id, count, partition) and outcome."""

    sizes: dict[int, int] = field(default_factory=dict)
    outcomes: dict[int, TxnOutcome] = field(default_factory=dict)
    committed_at: dict[int, float] = field(default_factory=dict)
    # Rounds with no partition led by the coordinator's node (transactions spanning nodes
    # cannot complete yet), and errors the producer recovered from.
    skipped_rounds: int = 0
    errors: list[str] = field(default_factory=list)


def txn_value(txn: int, index: int, size: int) -> bytes:
    return f"txn:{txn}:{index}/{size}".encode()


class TransactionalProducer(ClientThread):
    """Transactions of 2-5 records on one `txn` partition, every fifth aborted on purpose."""

    def __init__(self, bootstrap: str, coordinator_of: Callable[[str], int | None],
                 seed: int, pause_s: float = 0.1) -> None:
        super().__init__("producer-txn")
        self.bootstrap = bootstrap
        self.coordinator_of = coordinator_of
        self.random = random.Random(seed)
        self.pause_s = pause_s
        self.log = TxnLog()

    def _producer(self) -> Producer:
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                             "transactional.id": TRANSACTIONAL_ID, "linger.ms": 5,
                             "transaction.timeout.ms": 30_000, **QUIET})
        while not self.stopping.is_set():
            try:
                producer.init_transactions(30)
                return producer
            except KafkaException as exc:
                self.log.errors.append(f"init: {exc.args[0]}")
                self.stopping.wait(0.5)
        return producer

    def _partition(self, producer: Producer) -> int | None:
        """A `txn` partition whose leader is the transaction coordinator's node."""
        coordinator = self.coordinator_of(TRANSACTIONAL_ID)
        if coordinator is None:
            return None
        try:
            topic = producer.list_topics(TXN_TOPIC, timeout=5).topics[TXN_TOPIC]
        except KafkaException:
            return None
        led = [p for p, meta in topic.partitions.items() if meta.leader == coordinator]
        return self.random.choice(sorted(led)) if led else None

    def run(self) -> None:
        producer = self._producer()
        txn = 0
        while not self.stopping.is_set():
            partition = self._partition(producer)
            if partition is None:
                self.log.skipped_rounds += 1
                self.stopping.wait(self.pause_s)
                continue
            size = self.random.randint(2, 5)
            abort = txn % 5 == 4
            self.log.sizes[txn] = size
            outcome = self._one(producer, txn, partition, size, abort)
            self.log.outcomes[txn] = outcome
            if outcome is TxnOutcome.COMMITTED:
                self.log.committed_at[txn] = now()
            if outcome is TxnOutcome.UNKNOWN:
                producer = self._producer()  # a new one fences the old (init_transactions)
            txn += 1
            self.stopping.wait(self.pause_s)

    def _one(self, producer: Producer, txn: int, partition: int, size: int,
             abort: bool) -> TxnOutcome:
        try:
            producer.begin_transaction()
            for index in range(size):
                producer.produce(TXN_TOPIC, value=txn_value(txn, index, size),
                                 partition=partition)
            if abort:
                producer.abort_transaction(30)
                return TxnOutcome.ABORTED
            return self._commit(producer)
        except KafkaException as exc:
            error = cast(KafkaError, exc.args[0])
            self.log.errors.append(f"txn {txn}: {error}")
            if error.txn_requires_abort():
                return self._abort(producer)
            return TxnOutcome.UNKNOWN

    def _commit(self, producer: Producer) -> TxnOutcome:
        for _attempt in range(10):
            try:
                producer.commit_transaction(30)
                return TxnOutcome.COMMITTED
            except KafkaException as exc:
                error = cast(KafkaError, exc.args[0])
                if error.retriable():
                    continue  # librdkafka: call commit again to learn the outcome
                raise
        return TxnOutcome.UNKNOWN

    def _abort(self, producer: Producer) -> TxnOutcome:
        try:
            producer.abort_transaction(30)
            return TxnOutcome.ABORTED
        except KafkaException as exc:
            self.log.errors.append(f"abort: {exc.args[0]}")
            return TxnOutcome.UNKNOWN


# --- consumer groups ---------------------------------------------------------------------


class Change(Enum):
    ASSIGNED = "assigned"
    REVOKED = "revoked"
    LOST = "lost"


@dataclass(frozen=True)
class OwnershipChange:
    member: str
    change: Change
    partitions: tuple[int, ...]
    at: float


@dataclass(frozen=True)
class Consumed:
    partition: int
    offset: int
    value: bytes
    at: float


class GroupMember(ClientThread):
    """One member of `group` on `events`: consumes, commits every COMMIT_INTERVAL_S, and
    reports each assignment change as its callback starts: the member owns partitions from
    the assignment callback until the revocation (or loss) callback is called. (Ending at the
    revocation callback's end instead, the check flagged a 0.3 s overlap on Apache Kafka 4.4
    too: librdkafka may tell the coordinator before the callback returns.)"""

    def __init__(self, bootstrap: str, group: str, protocol: str, name: str,
                 changes: list[OwnershipChange]) -> None:
        super().__init__(f"member-{name}")
        self.bootstrap = bootstrap
        self.group = group
        self.protocol = protocol
        self.member = name
        self.changes = changes
        self.consumed: list[Consumed] = []
        self.commit_errors: list[str] = []
        self.fatal_errors: list[str] = []

    def _assigned(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.changes.append(OwnershipChange(self.member, Change.ASSIGNED,
                                            tuple(tp.partition for tp in partitions), now()))

    def _revoked(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.changes.append(OwnershipChange(self.member, Change.REVOKED,
                                            tuple(tp.partition for tp in partitions), now()))
        self._commit(consumer)

    def _lost(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.changes.append(OwnershipChange(self.member, Change.LOST,
                                            tuple(tp.partition for tp in partitions), now()))

    def _commit(self, consumer: Consumer) -> None:
        try:
            consumer.commit(asynchronous=False)
        except KafkaException as exc:
            error = cast(KafkaError, exc.args[0])
            if error.code() != KafkaError._NO_OFFSET:
                self.commit_errors.append(str(error))

    def run(self) -> None:
        config: dict[str, object] = {
            "bootstrap.servers": self.bootstrap, "group.id": self.group,
            "group.protocol": self.protocol, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "client.id": self.member, **QUIET}
        if self.protocol == "classic":
            config["session.timeout.ms"] = 10_000
        consumer = Consumer(config)
        consumer.subscribe([EVENTS_TOPIC], on_assign=self._assigned, on_revoke=self._revoked,
                           on_lost=self._lost)
        last_commit = now()
        try:
            while not self.stopping.is_set():
                for msg in consumer.consume(num_messages=500, timeout=0.1):
                    error = msg.error()
                    if error is not None:
                        if error.fatal():
                            self.fatal_errors.append(str(error))
                        continue
                    self.consumed.append(Consumed(cast(int, msg.partition()),
                                                  cast(int, msg.offset()),
                                                  cast(bytes, msg.value()), now()))
                if now() - last_commit >= COMMIT_INTERVAL_S:
                    self._commit(consumer)
                    last_commit = now()
            self._commit(consumer)
        finally:
            consumer.close()


@dataclass(frozen=True)
class GroupView:
    """What the watcher read of one group at one moment."""

    at: float
    committed: dict[int, int] | None  # None: OffsetFetch failed
    state: str | None  # upper case; None: the describe failed
    members: int
    assigned: int  # partitions assigned over all members


def find_coordinator(host: str, port: int, key: str, key_type: int) -> Coordinator | None:
    """The coordinator of `key` as the broker at host:port tells it; None when that broker
    does not answer in ASK_TIMEOUT_S or knows none."""
    try:
        conn = WireConnection(host, port, timeout=ASK_TIMEOUT_S)
        try:
            response = conn.call(FindCoordinatorRequest(key_type=key_type,
                                                        coordinator_keys=[key]), 4)
        finally:
            conn.close()
    except OSError:
        return None
    assert isinstance(response, FindCoordinatorResponse)
    found = response.coordinators[0]
    return found if found.error_code == 0 else None


def _addresses(bootstrap: str) -> list[tuple[str, int]]:
    return [(host, int(port)) for host, port in
            (address.rsplit(":", 1) for address in bootstrap.split(","))]


class GroupWatcher(ClientThread):
    """Reads each group's committed offsets (OffsetFetch) and state (DescribeGroups for a
    classic group, ConsumerGroupDescribe for the consumer protocol) from its coordinator, found
    through whichever bootstrap address answers; over our own wire client, as an admin client
    asked while coordinators move is what the test would then be testing."""

    def __init__(self, bootstrap: str, groups: dict[str, str]) -> None:
        super().__init__("group-watcher")
        self.addresses = _addresses(bootstrap)
        self.groups = dict(groups)
        self.views: dict[str, list[GroupView]] = {g: [] for g in groups}

    def _coordinator(self, group: str) -> tuple[str, int] | None:
        for host, port in self.addresses:
            found = find_coordinator(host, port, group, GROUP_KEY)
            if found is not None:
                return "127.0.0.1" if found.host == "localhost" else found.host, found.port
        return None

    def _view(self, conn: WireConnection, group: str) -> GroupView:
        fetch = conn.call(OffsetFetchRequest(group_id=group, topics=[OffsetFetchRequestTopic(
            name=EVENTS_TOPIC, partition_indexes=list(range(EVENTS_PARTITIONS)))]), 7)
        assert isinstance(fetch, OffsetFetchResponse)
        committed = None if fetch.error_code != 0 else {
            p.partition_index: p.committed_offset for t in fetch.topics for p in t.partitions
            if p.error_code == 0}
        if self.groups[group] == "classic":
            described = conn.call(DescribeGroupsRequest(groups=[group]), 5)
            assert isinstance(described, DescribeGroupsResponse)
            found = described.groups[0]
            if found.error_code != 0:
                return GroupView(now(), committed, None, 0, 0)
            assigned = sum(len(decode_assignment(m.member_assignment).get(EVENTS_TOPIC, []))
                           for m in found.members)
            return GroupView(now(), committed, found.group_state.upper(), len(found.members),
                             assigned)
        consumer = conn.call(ConsumerGroupDescribeRequest(group_ids=[group]), 0)
        assert isinstance(consumer, ConsumerGroupDescribeResponse)
        group_found = consumer.groups[0]
        if group_found.error_code != 0:
            return GroupView(now(), committed, None, 0, 0)
        assigned = sum(len(tp.partitions) for m in group_found.members
                       for tp in m.assignment.topic_partitions)
        return GroupView(now(), committed, group_found.group_state.upper(),
                         len(group_found.members), assigned)

    def look(self) -> None:
        for group in self.groups:
            address = self._coordinator(group)
            view = GroupView(now(), None, None, 0, 0)
            if address is not None:
                try:
                    conn = WireConnection(*address, timeout=ASK_TIMEOUT_S)
                    try:
                        view = self._view(conn, group)
                    finally:
                        conn.close()
                except OSError:
                    pass  # the coordinator went away meanwhile: this look found nothing
            self.views[group].append(view)

    def run(self) -> None:
        while not self.stopping.is_set():
            self.look()
            self.stopping.wait(WATCH_INTERVAL_S)


# --- the workload ------------------------------------------------------------------------

GROUP_PROTOCOLS = ("classic", "consumer")
MEMBERS_PER_GROUP = 2


@dataclass(frozen=True)
class WorkloadPlan:
    bootstrap: str
    groups: dict[str, str]  # group -> protocol
    coordinator_of: Callable[[str], int | None]
    rate: int = 100  # records a second per keyed producer
    seed: int = 0


class Workload:
    """Every client of the plan, started and stopped together."""

    def __init__(self, plan: WorkloadPlan) -> None:
        self.plan = plan
        self.producers = [KeyedProducer(plan.bootstrap, "idempotent", True, plan.rate),
                          KeyedProducer(plan.bootstrap, "plain", False, plan.rate)]
        self.transactions = TransactionalProducer(plan.bootstrap, plan.coordinator_of,
                                                  plan.seed)
        self.changes: dict[str, list[OwnershipChange]] = {g: [] for g in plan.groups}
        self.members = [GroupMember(plan.bootstrap, group, protocol, f"{group}-{i}",
                                    self.changes[group])
                        for group, protocol in plan.groups.items()
                        for i in range(MEMBERS_PER_GROUP)]
        self.watcher = GroupWatcher(plan.bootstrap, plan.groups)

    def start(self) -> None:
        for thread in (*self.members, *self.producers, self.transactions, self.watcher):
            thread.start()

    def stop_producing(self) -> None:
        for producer in (*self.producers, self.transactions):
            producer.stopping.set()
        for producer in (*self.producers, self.transactions):
            producer.join(180)

    def caught_up(self, ends: dict[int, int]) -> bool:
        """Every group's committed offsets (as the watcher last read them) at `ends`."""
        for views in self.watcher.views.values():
            latest = next((v.committed for v in reversed(list(views))
                           if v.committed is not None),
                          None)
            if latest is None or any(latest.get(p, -1) < end for p, end in ends.items()):
                return False
        return True

    def stop(self) -> None:
        self.stop_producing()
        for thread in (*self.members, self.watcher):
            thread.stopping.set()
        for thread in (*self.members, self.watcher):
            thread.join(60)
