"""Injected faults against real clients (confluent-kafka, kafka-python, aiokafka, the Java
client): each recovers, the group reaches Stable, and no committed offset is lost.

Per client and fault: a member consumes the first half of a 2-partition topic and commits
it. The fault is armed for the group, and a second member joins, so both go through a
rebalance (JoinGroup, SyncGroup, OffsetFetch, Heartbeat) that meets it:

| fault | rule |
|---|---|
| NOT_COORDINATOR | the next JoinGroup answers it: the client looks for the coordinator again |
| COORDINATOR_LOAD_IN_PROGRESS | the next OffsetFetch (the committed offsets a member starts from) answers it: the client must retry, not fall back to `auto.offset.reset` |
| REBALANCE_IN_PROGRESS | the next Heartbeat answers it: the member rejoins |
| dropped connection | the next JoinGroup's connection is closed, unanswered |
| delayed SyncGroup | the next SyncGroup is answered 2 s late |

aiokafka (0.14) asks OffsetFetch v3 and reads only the per-partition errors, while from v2 on
Kafka answers a group-level error at the top level with no partitions (Kafka's
`OffsetFetchResponse` for a group error, KAFKA-19246): it takes that answer for "nothing
committed" and starts from `auto.offset.reset`. So for aiokafka the COORDINATOR_LOAD_IN_PROGRESS
case meets JoinGroup instead, and `test_aiokafka_takes_a_group_error_in_offset_fetch_for_no_offsets`
records the client's behaviour.

Then the second half is produced. Checks: the rule fired; both members end Stable with one
partition each; every record is processed; none of the records committed before the fault
is processed again (a lost or ignored commit would restart a partition from 0); the final
committed offsets are the end of the topic. A failure prints the group's state, what each
member reported and the coordinator's `__group_events` for the group.

kafka-python (3.0.12) occasionally stalls on its own, with or without a fault: when its
`poll` times out while its SyncGroup is in flight, it can end up a Stable member that never
heartbeats nor fetches (the race of dpkp/kafka-python#2610), and its session expires. The
group events then show the member synced and expired with no request in between.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers import confluent_io
from helpers.group_checks import group_events
from helpers.group_members import Ledger, MemberHost, host_factory, wait_for

from groupcoord.testing import KafkaBroker

pytestmark = pytest.mark.interop

PARTITIONS = 2
HALF = 5  # records per partition in each half
SETTLE_S = 60.0
CLIENTS = ["confluent", "kafka-python", "aiokafka", "java"]
FAULTS: dict[str, dict[str, Any]] = {
    "not-coordinator": {"api": "JoinGroup", "error": "NOT_COORDINATOR"},
    "coordinator-loading": {"api": "OffsetFetch", "error": "COORDINATOR_LOAD_IN_PROGRESS"},
    "rebalance-in-progress": {"api": "Heartbeat", "error": "REBALANCE_IN_PROGRESS"},
    "dropped-join": {"api": "JoinGroup", "drop": True},
    "delayed-sync": {"api": "SyncGroup", "delay_ms": 2000},
}
# Where a client cannot recover from a rule, the same error on another API (module docstring).
CLIENT_FAULTS: dict[tuple[str, str], dict[str, Any]] = {
    ("aiokafka", "coordinator-loading"): {"api": "JoinGroup",
                                          "error": "COORDINATOR_LOAD_IN_PROGRESS"},
}


def _produce(bootstrap: str, topic: str, start: int) -> None:
    producer = confluent_io.acks_all_producer(bootstrap)
    for p in range(PARTITIONS):
        for i in range(start, start + HALF):
            producer.produce(topic, value=f"{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0


def _offsets(broker: KafkaBroker, group: str, topic: str) -> dict[str, int]:
    return dict(broker.describe_group(group)["offsets"].get(topic, {}))


def _stable_with_one_partition_each(broker: KafkaBroker, group: str, ledger: Ledger) -> bool:
    state = broker.describe_group(group)
    owned = ledger.owned()
    return (state["state"] == "Stable" and len(state["members"]) == 2
            and sorted(len(owned.get(m, set())) for m in (0, 1)) == [1, 1])


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("client", CLIENTS)
def test_the_client_recovers_from_the_fault(client: str, fault: str, tmp_path: Path,
                                            unique_topic: str, unique_group: str) -> None:
    rule = CLIENT_FAULTS.get((client, fault), FAULTS[fault])
    again = _run(client, rule, tmp_path, unique_topic, unique_group)
    assert again == [], f"committed records processed again: {again}"


def test_aiokafka_takes_a_group_error_in_offset_fetch_for_no_offsets(
        tmp_path: Path, unique_topic: str, unique_group: str) -> None:
    again = _run("aiokafka", FAULTS["coordinator-loading"], tmp_path, unique_topic,
                 unique_group)
    # The member that fetched the error restarted its partition from offset 0.
    assert len(again) == HALF and len({p for p, _ in again}) == 1


def _run(client: str, fault: dict[str, Any], tmp_path: Path, topic: str,
         group: str) -> list[tuple[int, int]]:
    """The scenario of the module docstring; returns the records committed before the
    fault that were processed again."""
    with KafkaBroker(offsets_partitions=1) as broker:
        bootstrap = broker.bootstrap_servers
        confluent_io.create_topic(bootstrap, topic, PARTITIONS)
        _produce(bootstrap, topic, 0)
        ledger = Ledger()
        host: MemberHost = host_factory(client, bootstrap, topic, group, "range", tmp_path)(
            ledger, "members")
        try:
            host.start(0)
            first_half = {str(p): HALF for p in range(PARTITIONS)}
            wait_for(lambda: _offsets(broker, group, topic) == first_half,
                     "the first member to commit the first half", SETTLE_S)

            rule = broker.inject(**fault, group_id=group)
            host.start(1)
            wait_for(lambda: any(f["rule"] == rule["id"]
                                 for f in broker.injections()["fired"]),
                     f"the rule {fault} to fire", SETTLE_S)
            assert _offsets(broker, group, topic) == first_half  # nothing lost by the fault
            wait_for(lambda: _stable_with_one_partition_each(broker, group, ledger),
                     "a Stable group with one partition per member", SETTLE_S)

            _produce(bootstrap, topic, HALF)
            everything = {(p, o) for p in range(PARTITIONS) for o in range(2 * HALF)}
            wait_for(lambda: everything <= ledger.processed(), "every record processed",
                     SETTLE_S)
            end = {str(p): 2 * HALF for p in range(PARTITIONS)}
            wait_for(lambda: _offsets(broker, group, topic) == end,
                     "the final commits", SETTLE_S)
            assert _stable_with_one_partition_each(broker, group, ledger)
            assert not any(ledger.errors().values()), ledger.errors()
            counts = Counter((p, o) for log in ledger.members.values()
                             for recs, _ in log.batches for p, o in recs)
            return sorted(k for k, n in counts.items() if n > 1 and k[1] < HALF)
        except AssertionError:
            print(f"group: {broker.describe_group(group)}\nmembers: {ledger.members}\n"
                  f"stderr: {host.stderr_tail()}")
            for event in group_events(bootstrap, group):
                print(event)
            raise
        finally:
            host.close()
