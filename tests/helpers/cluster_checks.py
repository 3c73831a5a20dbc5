"""The checker of a cluster workload's run (helpers.cluster_workload): it reads the topics
back and lists every violation of what a failover must keep, and measures how long after a
fault the workload worked again.

- every acknowledged record present exactly once per producer sequence, where it was
  acknowledged, and no sequence stored twice; but a record of the plain (not deduplicated)
  producer stored where it was acknowledged and also earlier in the same partition is a send
  librdkafka repeated (helpers.cluster_workload: at-least-once, not the broker storing a
  request twice), counted apart as re-sent by the client;
- committed offsets never moving back (nor vanishing) as OffsetFetch saw them;
- no partition owned by two consumer-protocol members at once, as the members reported it;
- read_committed readers seeing whole transactions only: committed ones whole, aborted ones not
  at all, those of unknown outcome either way;
- each group consuming every acknowledged record.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from helpers.cluster_workload import (
    EVENTS_PARTITIONS,
    EVENTS_TOPIC,
    MEMBERS_PER_GROUP,
    QUIET,
    TXN_PARTITIONS,
    TXN_TOPIC,
    Ack,
    Change,
    GroupView,
    OwnershipChange,
    ProducerLog,
    TxnLog,
    TxnOutcome,
    Workload,
    now,
    sequence_of,
)

READ_BACK_TIMEOUT_S = 90.0


# The mark of a deduplicated producer's record stored where it was acknowledged and also
# earlier in the same partition, the acknowledged copy the last: the fault run's open finding
# (docs/cluster.md, "What the fault run found").
EARLIER_COPY = "(an earlier copy too)"


@dataclass(frozen=True)
class Stored:
    """One record as read back."""

    partition: int
    offset: int
    value: bytes


def _read(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[Stored]:
    """Every record of `topic` from the start to the end its reader can reach: the high
    watermark (read_uncommitted), or past the last transaction marker (read_committed, whose
    position reaches the high watermark once every transaction is complete)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-back-{topic}",
                         "enable.auto.commit": False, "isolation.level": isolation, **QUIET})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1]
                for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        records: list[Stored] = []
        deadline = now() + READ_BACK_TIMEOUT_S
        while True:
            positions = {tp.partition: tp.offset
                         for tp in consumer.position([TopicPartition(topic, p)
                                                      for p in range(partitions)])}
            if all(positions[p] >= end for p, end in ends.items() if end > 0):
                return records
            if now() > deadline:
                raise AssertionError(f"{topic} ({isolation}) read stalled at {positions}, "
                                     f"ends {ends} (a transaction left open?)")
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                if msg.error() is None:
                    records.append(Stored(cast(int, msg.partition()), cast(int, msg.offset()),
                                          cast(bytes, msg.value())))
    finally:
        consumer.close()


@dataclass
class Verdict:
    violations: list[str] = field(default_factory=list)
    figures: dict[str, object] = field(default_factory=dict)

    def summary(self) -> str:
        figures = ", ".join(f"{k} {v}" for k, v in self.figures.items())
        if not self.violations:
            return f"no violation ({figures})"
        shown = "\n  ".join(self.violations[:30])
        return f"{len(self.violations)} violations ({figures}):\n  {shown}"


def check_producers(logs: Sequence[ProducerLog], records: list[Stored],
                    verdict: Verdict) -> None:
    """Every acknowledged sequence stored exactly once, where it was acknowledged (or, for a
    producer the broker does not deduplicate, there and at earlier sends the client repeated);
    no sequence stored twice."""
    stored: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
    for msg in records:
        stored[sequence_of(msg.value)].append((msg.partition, msg.offset))
    for log in logs:
        for error in log.fatal_errors:
            verdict.violations.append(f"{log.name}: fatal producer error {error}")
        resent = 0
        for seq, ack in log.acked.items():
            places = stored.get((log.name, seq), [])
            if not places:
                verdict.violations.append(f"{log.name} {seq} acknowledged at "
                                          f"{ack.partition}/{ack.offset}, lost")
            elif places == [(ack.partition, ack.offset)]:
                continue
            elif _resent_before(places, ack):
                if not log.deduplicated:
                    resent += 1
                else:
                    verdict.violations.append(f"{log.name} {seq} acknowledged at "
                                              f"{ack.partition}/{ack.offset}, stored at "
                                              f"{places} {EARLIER_COPY}")
            else:
                verdict.violations.append(f"{log.name} {seq} acknowledged at "
                                          f"{ack.partition}/{ack.offset}, stored at {places}")
        for seq in log.sent:
            places = stored.get((log.name, seq), [])
            if len(places) > 1 and seq not in log.acked:
                verdict.violations.append(f"{log.name} {seq} stored twice: {places}")
        verdict.figures[f"{log.name} acked"] = len(log.acked)
        verdict.figures[f"{log.name} failed"] = len(log.failed)
        if not log.deduplicated:
            verdict.figures[f"{log.name} re-sent by the client"] = resent


def _resent_before(places: list[tuple[int, int]], ack: Ack) -> bool:
    """Whether the record is stored once where it was acknowledged and otherwise only before
    it in the same partition: earlier sends of it, the last one acknowledged."""
    return places.count((ack.partition, ack.offset)) == 1 and all(
        partition == ack.partition and offset <= ack.offset for partition, offset in places)


def check_transactions(log: TxnLog, records: list[Stored], verdict: Verdict) -> None:
    """read_committed sees each transaction whole or not at all: committed ones whole,
    aborted ones not at all, unknown ones either; no record twice."""
    seen: dict[int, list[int]] = defaultdict(list)
    for msg in records:
        _, txn_text, part = msg.value.decode().split(":")
        seen[int(txn_text)].append(int(part.split("/")[0]))
    for txn, size in log.sizes.items():
        outcome = log.outcomes.get(txn, TxnOutcome.UNKNOWN)
        indexes = sorted(seen.get(txn, []))
        whole = indexes == list(range(size))
        if indexes and not whole:
            verdict.violations.append(f"transaction {txn} ({outcome.value}) seen in part: "
                                      f"records {indexes} of {size}")
        elif outcome is TxnOutcome.COMMITTED and not whole:
            verdict.violations.append(f"transaction {txn} committed, not seen")
        elif outcome is TxnOutcome.ABORTED and indexes:
            verdict.violations.append(f"transaction {txn} aborted, seen")
    for outcome in TxnOutcome:
        verdict.figures[f"transactions {outcome.value}"] = sum(
            1 for o in log.outcomes.values() if o is outcome)
    verdict.figures["transaction rounds skipped (no partition on the coordinator)"] = (
        log.skipped_rounds)


def check_offsets_monotonic(group: str, views: list[GroupView], verdict: Verdict) -> None:
    """A committed offset seen by OffsetFetch never moves back (nor vanishes)."""
    highest: dict[int, int] = {}
    for view in views:
        if view.committed is None:
            continue
        for partition in range(EVENTS_PARTITIONS):
            offset = max(view.committed.get(partition, -1), -1)  # none: -1 (or -1001)
            before = highest.get(partition, -1)
            if offset < before:
                verdict.violations.append(
                    f"{group} partition {partition}: committed offset moved back from "
                    f"{before} to {offset}")
            highest[partition] = max(offset, before)


def ownership_overlaps(changes: list[OwnershipChange]) -> list[str]:
    """Partitions two members owned at one instant, by the members' own reports: an
    ownership runs from its assignment callback to its revocation (or loss) callback."""
    intervals: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
    open_since: dict[tuple[str, int], float] = {}
    for change in sorted(changes, key=lambda c: c.at):
        for partition in change.partitions:
            key = (change.member, partition)
            if change.change is Change.ASSIGNED:
                open_since.setdefault(key, change.at)
            elif key in open_since:
                intervals[partition].append((open_since.pop(key), change.at, change.member))
    for (member, partition), since in open_since.items():
        intervals[partition].append((since, float("inf"), member))
    found = []
    for partition, spans in intervals.items():
        spans.sort()
        for (start_a, end_a, a), (start_b, end_b, b) in itertools.pairwise(spans):
            if a != b and start_b < end_a:
                found.append(f"partition {partition} owned by {a} ({start_a:.3f}-{end_a:.3f}) "
                             f"and {b} ({start_b:.3f}-{end_b:.3f}) at once")
    return found


def check(workload: Workload, bootstrap: str) -> Verdict:
    """Read both topics back and check every property; the workload must be stopped."""
    verdict = Verdict()
    events = _read(bootstrap, EVENTS_TOPIC, EVENTS_PARTITIONS, "read_uncommitted")
    check_producers([p.log for p in workload.producers], events, verdict)
    for producer in workload.producers:
        if not producer.drained:
            verdict.violations.append(f"{producer.log.name}: records undelivered at the end")
    committed_reads = _read(bootstrap, TXN_TOPIC, TXN_PARTITIONS, "read_committed")
    check_transactions(workload.transactions.log, committed_reads, verdict)
    acked = {(p.log.name, seq) for p in workload.producers for seq in p.log.acked}
    for group, protocol in workload.plan.groups.items():
        check_offsets_monotonic(group, workload.watcher.views[group], verdict)
        if protocol == "consumer":
            verdict.violations.extend(f"{group}: {overlap}" for overlap in
                                      ownership_overlaps(workload.changes[group]))
        consumed = {sequence_of(c.value) for m in workload.members if m.group == group
                    for c in m.consumed}
        missing = acked - consumed
        if missing:
            verdict.violations.append(f"{group}: {len(missing)} acknowledged records never "
                                      f"consumed, e.g. {sorted(missing)[:5]}")
    for member in workload.members:
        verdict.violations.extend(f"{member.member}: fatal {e}" for e in member.fatal_errors)
    verdict.figures["events stored"] = len(events)
    return verdict


# --- what a failover took ----------------------------------------------------------------


@dataclass(frozen=True)
class Recovery:
    """Seconds from a fault to each sign of service again (None: not seen)."""

    produce_s: float | None  # every partition acknowledged a record
    commits_s: dict[str, float | None]  # the group committed past its offsets at the fault
    stable_s: dict[str, float | None]  # ... and DescribeGroups says Stable, all assigned

    def summary(self) -> str:
        def show(value: float | None) -> str:
            return "-" if value is None else f"{value:.2f} s"
        parts = [f"produce resumed {show(self.produce_s)}"]
        for group in self.commits_s:
            parts.append(f"{group}: commits resumed {show(self.commits_s[group])}, "
                         f"stable {show(self.stable_s[group])}")
        return "; ".join(parts)


def recovery_after(workload: Workload, fault_at: float) -> Recovery:
    first_acks: dict[int, float] = {}
    for producer in workload.producers:
        for ack in list(producer.log.acked.values()):  # a copy: the producer adds to it
            if ack.at > fault_at:
                first_acks[ack.partition] = min(ack.at, first_acks.get(ack.partition, ack.at))
    produce_s = (max(first_acks.values()) - fault_at
                 if len(first_acks) == EVENTS_PARTITIONS else None)
    commits_s: dict[str, float | None] = {}
    stable_s: dict[str, float | None] = {}
    for group in workload.plan.groups:
        views = list(workload.watcher.views[group])
        before = next((v.committed for v in reversed(views)
                       if v.at <= fault_at and v.committed is not None), {})
        resumed = next((v.at for v in views if v.at > fault_at and v.committed is not None
                        and all(v.committed.get(p, -1) > before.get(p, -1)
                                for p in range(EVENTS_PARTITIONS))), None)
        commits_s[group] = None if resumed is None else resumed - fault_at
        stable = next((v.at for v in views if resumed is not None and v.at >= resumed
                       and v.state == "STABLE" and v.members == MEMBERS_PER_GROUP
                       and v.assigned == EVENTS_PARTITIONS), None)
        stable_s[group] = None if stable is None else stable - fault_at
    return Recovery(produce_s, commits_s, stable_s)


