"""Real clients keep their groups running while coordinators move (issue 11's unload and
load of a shard on one node; issue 13's three nodes in one process, coordinators moved twice
and a node stopped and started).

Five groups read one topic that is produced to the whole time: confluent-kafka classic and
consumer protocol members (`member_host.py`), Java 4.4 classic and consumer protocol members
(the harness's `group-members`, logging through slf4j-simple so its coordinator rediscovery
shows), and a confluent-kafka `ShareConsumer` acknowledging what it gets. While they run,
each group's coordinator is unloaded (NOT_COORDINATOR) and loaded again
(COORDINATOR_LOAD_IN_PROGRESS until replayed), or moved to another node; on three nodes one
node is stopped and started too. At the end: every acknowledged record was processed by every
consumer group and delivered to the share group, whose acknowledgement of it was confirmed or
failed on the way (a lost one brings the record back), nothing was committed twice, no partition
was owned by two members at once (from the rebalance callbacks' own timestamps), and the
clients' logs show them finding the coordinator again.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import confluent_kafka as ck
import confluent_kafka.admin as ck_admin
import pytest
from helpers import confluent_io, java
from helpers.group_checks import StreamProducer, check_delivery, ownership_overlaps
from helpers.group_members import MEMBER_HOST, Ledger, MemberHost, wait_for

from groupcoord.cli import share_group_ops
from groupcoord.cli.wire_client import WireClient
from groupcoord.testing import KafkaBroker

pytestmark = pytest.mark.interop

PARTITIONS = 6
MEMBERS = 2
BROKER_ARGS = [
    "--group-config", "group.consumer.min.heartbeat.interval.ms=100",
    "--group-config", "group.consumer.heartbeat.interval.ms=500",
]
SLF4J_SIMPLE = java.CACHE / "m2" / "org" / "slf4j" / "slf4j-simple" / "1.7.36" / \
    "slf4j-simple-1.7.36.jar"
JAVA_LOGGING = ["-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients.consumer.internals=info"]
DRAIN_TIMEOUT_S = 120.0
# What the clients log when they lose and find the coordinator again (librdkafka with
# debug=cgrp: the error answers, or a change from a known coordinator to another).
CONFLUENT_REDISCOVERY = re.compile(
    r"Broker: Not coordinator|Broker: Coordinator load in progress"
    r"|changing coordinator \d+ -> -?\d+")
JAVA_REDISCOVERY = "Rediscovery will be attempted"


class ShareMember(threading.Thread):
    """A confluent-kafka ShareConsumer acknowledging (ACCEPT) everything it gets; remembers
    the (partition, offset) pairs it got, those whose acknowledgement was confirmed, and
    those whose acknowledgement failed on its way (applied or not: a record whose
    acknowledgement was lost comes back once its lock ends)."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        super().__init__(daemon=True, name=f"share-{group}")
        self.consumer = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                                          "share.acknowledgement.mode": "explicit",
                                          "debug": "cgrp"})
        self.consumer.subscribe([topic])
        self.stop = threading.Event()
        self.seen: set[tuple[int, int]] = set()
        self.accepted: set[tuple[int, int]] = set()
        self.uncertain: set[tuple[int, int]] = set()
        self.errors: list[str] = []
        self.lock = threading.Lock()

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self._poll_once()
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on it
            self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            self.consumer.close()

    def _poll_once(self) -> None:
        batch = [m for m in self.consumer.poll(0.5) if m.error() is None]
        if not batch:
            return
        got = {(m.partition(), m.offset()) for m in batch}
        for msg in batch:
            self.consumer.acknowledge(msg, ck.AcknowledgeType.ACCEPT)
        try:
            results = self.consumer.commit_sync(10)
        except ck.KafkaException:
            results = {}
        done = {tp.partition for tp, err in results.items() if err is None}
        with self.lock:
            self.seen |= got
            confirmed = {(p, o) for p, o in got if p in done}
            self.accepted |= confirmed
            self.uncertain |= got - confirmed


def _confluent_host(bootstrap: str, topic: str, group: str, protocol: str,
                    tmp: Path) -> Callable[[Ledger], MemberHost]:
    cmd = [sys.executable, str(MEMBER_HOST), "--client", "confluent", "--bootstrap", bootstrap,
           "--topic", topic, "--group", group, "--assignor", "range", "--protocol", protocol,
           "--prop", "debug=cgrp"]
    return lambda ledger: MemberHost(cmd, ledger, tmp / f"{group}.stderr")


def _java_host(bootstrap: str, topic: str, group: str, protocol: str,
               tmp: Path) -> Callable[[Ledger], MemberHost]:
    assert SLF4J_SIMPLE.exists(), f"{SLF4J_SIMPLE} is missing (make reference fetches it)"
    cmd = java.harness_command("group-members")
    cp = cmd.index("-cp")
    cmd[cp + 1] += f":{SLF4J_SIMPLE}"
    cmd[cp:cp] = JAVA_LOGGING
    cmd += ["--bootstrap", bootstrap, "--topic", topic, "--group", group,
            "--group-protocol", protocol]
    if protocol == "classic":
        cmd += ["--assignor", "range"]
    return lambda ledger: MemberHost(cmd, ledger, tmp / f"{group}.stderr")


class Groups:
    """The four consumer groups and the share group of one run."""

    def __init__(self, bootstrap: str, topic: str, tmp: Path) -> None:
        self.ledgers: dict[str, Ledger] = {}
        self.hosts: dict[str, MemberHost] = {}
        makers = {
            "ck-classic": _confluent_host(bootstrap, topic, "ck-classic", "classic", tmp),
            "ck-consumer": _confluent_host(bootstrap, topic, "ck-consumer", "consumer", tmp),
            "java-classic": _java_host(bootstrap, topic, "java-classic", "classic", tmp),
            "java-consumer": _java_host(bootstrap, topic, "java-consumer", "consumer", tmp),
        }
        for group, make in makers.items():
            self.ledgers[group] = Ledger()
            self.hosts[group] = make(self.ledgers[group])
            for idx in range(MEMBERS):
                self.hosts[group].start(idx)
        self.share = ShareMember(bootstrap, topic, "share")
        self.share.start()

    @property
    def names(self) -> list[str]:
        return [*self.ledgers, "share"]

    def settled(self) -> bool:
        """Every consumer group's members own every partition, each exactly once."""
        for ledger in self.ledgers.values():
            owned = list(ledger.owned().values())
            if sorted(p for parts in owned for p in parts) != list(range(PARTITIONS)):
                return False
        return True

    def missing(self, acked: set[tuple[int, int]]) -> dict[str, int]:
        """How many acknowledged records each group has not processed yet."""
        share = self.share
        with share.lock:
            unconfirmed = acked - share.accepted
            counts = {"share": len(acked - share.seen) + len(unconfirmed - share.uncertain)}
        counts.update({group: len(acked - ledger.processed())
                       for group, ledger in self.ledgers.items()})
        return {group: count for group, count in counts.items() if count}

    def close(self) -> None:
        self.share.stop.set()
        for host in self.hosts.values():
            host.close()
        self.share.join(30)


def _share_from_earliest(bootstrap: str, group: str) -> None:
    """The share group reads the records produced before it joined too."""
    entry = ck_admin.ConfigEntry("share.auto.offset.reset", "earliest",
                                 incremental_operation=ck_admin.AlterConfigOpType.SET)
    resource = ck_admin.ConfigResource(ck_admin.ResourceType.GROUP, group,
                                       incremental_configs=[entry])
    admin = ck_admin.AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def _run(broker: KafkaBroker, disturb: Callable[[list[str]], None], tmp: Path) -> Groups:
    bootstrap = broker.bootstrap_servers
    topic = "moves"
    confluent_io.create_topic(bootstrap, topic, PARTITIONS)
    _share_from_earliest(bootstrap, "share")
    producer = StreamProducer(bootstrap, topic, per_second=200)
    producer.start()
    groups = Groups(bootstrap, topic, tmp)
    try:
        # A KIP-848 member may take partitions from an older target it had not reported owning
        # while the coordinator gives them to a newcomer: a client-side race of the first
        # assignment (Kafka's coordinator answers alike), so exclusivity is checked from here.
        wait_for(groups.settled, "every group to be assigned", 90)
        since_ms = time.time() * 1000
        disturb(groups.names)
        acked = producer.finish()
        try:
            wait_for(lambda: not groups.missing(acked), "every group to process every record",
                     DRAIN_TIMEOUT_S)
        except AssertionError as exc:
            owned = {group: ledger.owned() for group, ledger in groups.ledgers.items()}
            raise AssertionError(f"{exc}: missing {groups.missing(acked)}, owned {owned}, "
                                 f"logs in {tmp}") from None
        wait_for(lambda: not _share_finished(broker, topic),
                 "the share group to acknowledge every record", DRAIN_TIMEOUT_S)
        assert not groups.share.errors, groups.share.errors
        for group, ledger in groups.ledgers.items():
            assert not ledger.errors(), (group, ledger.errors())
            check_delivery(acked, ledger, None)
            overlaps = ownership_overlaps(ledger, since_ms)
            assert overlaps == [], (group, overlaps, sorted(ledger.ownership))
    finally:
        producer.halt.set()
        groups.close()
    return groups


def _share_finished(broker: KafkaBroker, topic: str) -> dict[int, tuple[int | None, int]]:
    """Partitions whose share-partition start offset is not yet the high watermark (every
    record before it acknowledged): partition -> (start offset, high watermark). Asked of
    the group's coordinator."""
    port = broker.node_ports()[broker.group_coordinator("share")]
    ends = confluent_io.high_watermarks(broker.bootstrap_servers, topic, PARTITIONS)
    with WireClient(f"127.0.0.1:{port}", timeout_s=10) as client:
        rows = share_group_ops.share_offsets(client, "share")
    starts = {row["partition"]: row["start_offset"] for row in rows if row["topic"] == topic}
    return {p: (starts.get(p), ends[p]) for p in range(PARTITIONS)
            if ends[p] and starts.get(p) != ends[p]}


def _rediscovered(groups: Groups) -> None:
    for group, host in groups.hosts.items():
        text = host.stderr_path.read_text(errors="replace")
        if group.startswith("java"):
            assert JAVA_REDISCOVERY in text, (group, text[-3000:])
        else:
            assert CONFLUENT_REDISCOVERY.search(text), (group, text[-3000:])


def test_unload_and_load_of_shards_under_running_clients(tmp_path: Path) -> None:
    """Issue 11: on one node each group's shard is unloaded and loaded again, twice."""
    with KafkaBroker(subprocess=True, extra_args=BROKER_ARGS) as broker:
        def disturb(names: list[str]) -> None:
            for _round in range(2):
                for group in names:
                    broker.unload_group_coordinator(group)
                    time.sleep(1.0)  # clients answered NOT_COORDINATOR meanwhile
                    broker.load_group_coordinator(group)
                    time.sleep(2.0)

        groups = _run(broker, disturb, tmp_path)
    _rediscovered(groups)


def test_three_nodes_move_coordinators_and_survive_a_node_restart(tmp_path: Path) -> None:
    """Issue 13: every group's coordinator moves twice, then a node stops and starts."""
    with KafkaBroker(subprocess=True, nodes=3, extra_args=BROKER_ARGS) as broker:
        moves: list[tuple[str, int, int]] = []

        def disturb(names: list[str]) -> None:
            for _round in range(2):
                for group in names:
                    before = broker.group_coordinator(group)
                    target = (before + 1) % 3
                    broker.move_group_coordinator(group, target)
                    moves.append((group, before, target))
                    time.sleep(2.0)
            victim = broker.group_coordinator(names[0])
            broker.stop_node(victim)
            time.sleep(5.0)
            broker.start_node(victim)
            time.sleep(5.0)

        groups = _run(broker, disturb, tmp_path)
        assert len(moves) == 2 * len(groups.names)
        assert all(before != target for _, before, target in moves)
    _rediscovered(groups)
