"""Checks on a classic consumer group: the broker's view against what the members report.

- `describe` asks the broker (DescribeGroups, through the code behind `groupcoord groups
  describe`) on a fresh connection each time, so it keeps working across broker restarts.
- `wait_settled` polls until the group is Stable with exactly the expected live members,
  every member's assignment in DescribeGroups equals what its own rebalance callbacks say
  it owns, and the partitions are split among them with no gap and no overlap.
- `StreamProducer` produces a paced stream in a thread and records every acknowledged
  (partition, offset).
- `check_delivery`: no acknowledged record was left unprocessed, and a record processed
  twice was, every time but the last, processed by a member whose commit after that poll
  did not happen (a killed member's tail) or failed.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

from groupcoord.cli import group_ops
from groupcoord.cli.wire_client import WireClient
from groupcoord.wire.generated.find_coordinator import FindCoordinatorRequest
from helpers import confluent_io
from helpers.group_members import Ledger, wait_for

SETTLE_TIMEOUT_S = 40.0

GROUP_KEY = 0
FIND_COORDINATOR_VERSION = 4  # batched keys


def coordinator_address(bootstrap: str, group: str) -> str:
    """`host:port` of the group's coordinator as the bootstrap broker names it (FindCoordinator
    v4), where a cluster answers the group's requests; the bootstrap itself when it names none."""
    with WireClient(bootstrap, timeout_s=10) as client:
        response, version = client.request(FindCoordinatorRequest(
            key_type=GROUP_KEY, coordinator_keys=[group]), FIND_COORDINATOR_VERSION)
    if version < FIND_COORDINATOR_VERSION or response.coordinators[0].error_code != 0:
        return bootstrap
    found = response.coordinators[0]
    return f"{found.host}:{found.port}"


def describe(bootstrap: str, group: str) -> dict[str, Any]:
    """DescribeGroups for one group: state, protocol and members with decoded assignments."""
    with WireClient(coordinator_address(bootstrap, group), timeout_s=10) as client:
        return group_ops.describe_group(client, group)


def committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    with WireClient(coordinator_address(bootstrap, group), timeout_s=10) as client:
        return group_ops.committed_offsets(client, group)


def settle_problem(bootstrap: str, group: str, topic: str, partitions: int,
                   ledger: Ledger, live: set[int]) -> str | None:
    """Why the group is not (yet) settled on `live`, or None when it is."""
    try:
        desc = describe(bootstrap, group)
    except (OSError, Exception) as exc:  # noqa: BLE001 - e.g. coordinator still loading
        return f"describe failed: {exc}"
    if not live:
        return None if desc["state"] == "Empty" else f"state {desc['state']}, want Empty"
    if desc["state"] != "Stable":
        return f"state {desc['state']}"
    described = {m["client_id"]: {p for t, p in m["assignment"] if t == topic}
                 for m in desc["members"]}
    want_ids = {f"m{i}" for i in live}
    if set(described) != want_ids:
        return f"members {sorted(described)}, want {sorted(want_ids)}"
    owned = ledger.owned()
    for i in live:
        if owned.get(i, set()) != described[f"m{i}"]:
            return (f"m{i} callbacks say {sorted(owned.get(i, set()))}, "
                    f"DescribeGroups says {sorted(described[f'm{i}'])}")
    union: set[int] = set().union(*described.values())
    total = sum(len(s) for s in described.values())
    if union != set(range(partitions)) or total != partitions:
        return f"partitions not split exactly once: {described}"
    return None


def wait_settled(bootstrap: str, group: str, topic: str, partitions: int, ledger: Ledger,
                 live: set[int], timeout: float = SETTLE_TIMEOUT_S) -> float:
    """Wait until `settle_problem` is None; returns the seconds it took."""
    start = time.monotonic()
    last: list[str | None] = [None]

    def settled() -> bool:
        errors = ledger.errors()
        assert not errors, f"member errors: {errors}"
        last[0] = settle_problem(bootstrap, group, topic, partitions, ledger, live)
        return last[0] is None

    try:
        wait_for(settled, f"group {group} to settle on {sorted(live)}", timeout, interval=0.1)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last problem: {last[0]}") from None
    return time.monotonic() - start


class StreamProducer(threading.Thread):
    """Produces keyed records at a steady pace until stopped; remembers what was acked."""

    def __init__(self, bootstrap: str, topic: str, per_second: int = 400) -> None:
        super().__init__(daemon=True, name=f"producer-{topic}")
        from confluent_kafka import Producer

        self.topic = topic
        self.per_tick = max(per_second // 20, 1)
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                                  "acks": "all"})
        self.acked: set[tuple[int, int]] = set()
        self.failed: list[str] = []
        self.halt = threading.Event()

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.add((msg.partition(), msg.offset()))
        else:
            self.failed.append(str(err))

    def run(self) -> None:
        seq = 0
        while not self.halt.is_set():
            for _ in range(self.per_tick):
                self.producer.produce(self.topic, key=str(seq).encode(),
                                      value=str(seq).encode(), on_delivery=self._on_delivery)
                seq += 1
            self.producer.poll(0)
            self.halt.wait(0.05)  # paces the stream; also the stop signal

    def finish(self) -> set[tuple[int, int]]:
        """Stop producing, wait for every acknowledgement, return the acked offsets."""
        self.halt.set()
        self.join(10)
        assert self.producer.flush(30) == 0, "records still undelivered"
        assert not self.failed, f"delivery errors: {self.failed[:3]}"
        return set(self.acked)


def check_delivery(acked: set[tuple[int, int]], ledger: Ledger, victim: int | None
                   ) -> dict[str, int]:
    """No loss; duplicates only where the earlier processing was never committed.

    Returns counts for the report: processed, duplicates, and duplicates of the victim.
    """
    occurrences: dict[tuple[int, int], list[tuple[int, bool | None]]] = defaultdict(list)
    with ledger.lock:
        for m, log in ledger.members.items():
            for recs, ok in log.batches:
                for p, o in recs:
                    occurrences[(p, o)].append((m, ok))
    missing = acked - set(occurrences)
    assert not missing, f"{len(missing)} acked records never processed, e.g. {sorted(missing)[:5]}"
    dups = {k: v for k, v in occurrences.items() if len(v) > 1}
    committed_twice = {k: v for k, v in dups.items() if sum(1 for _, ok in v if ok) > 1}
    assert not committed_twice, (
        f"{len(committed_twice)} records processed and committed more than once, e.g. "
        f"{sorted(committed_twice.items())[:3]}")
    uncommitted_by = {m for v in dups.values() for m, ok in v if not ok}
    allowed = {victim} | {m for m, log in ledger.members.items() if log.commit_failures}
    assert uncommitted_by <= allowed, (
        f"duplicates from members {sorted(uncommitted_by - allowed)} that neither died nor "
        f"had a failed commit")
    victim_dups = sum(1 for v in dups.values() if any(m == victim for m, _ in v))
    return {"processed": len(occurrences), "duplicates": len(dups),
            "victim_duplicates": victim_dups}


def ownership_overlaps(ledger: Ledger, since_ms: float = 0.0) -> list[str]:
    """Moments from `since_ms` on that a partition was owned by two members at once, from
    the callbacks' own timestamps: an `assigned` while another member had it and had not
    yet revoked or lost it."""
    with ledger.lock:
        history = sorted(ledger.ownership)
    owners: dict[int, set[int]] = defaultdict(set)
    overlaps = []
    for t, member, kind, parts in history:
        for p in parts:
            if kind == "assigned":
                others = owners[p] - {member}
                if others and t >= since_ms:
                    overlaps.append(f"p{p} to m{member} at {t:.0f} while m{sorted(others)} own it")
                owners[p].add(member)
            else:
                owners[p].discard(member)
    return overlaps


def group_events(bootstrap: str, group: str) -> list[dict[str, Any]]:
    """The coordinator's `__group_events` for `group`, oldest first (see group_events.py)."""
    import json

    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    topic = "__group_events"
    ends = confluent_io.high_watermarks(bootstrap, topic, 1)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "events-reader",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    try:
        position = 0
        while position < ends[0] and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                if msg.error() is None:
                    position = (msg.offset() or 0) + 1
                    if msg.key() == group.encode():
                        events.append(json.loads(msg.value() or b"{}"))
    finally:
        consumer.close()
    return events
