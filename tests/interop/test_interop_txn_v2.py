"""KIP-890 part 2 transactions of the Java 4.4 producer, against groupcoord and Kafka 4.4.

Both brokers finalize `transaction.version=2` (`apis/features.py`), so the producer adds
partitions through Produce v12 and TxnOffsetCommit v5 instead of AddPartitionsToTxn /
AddOffsetsToTxn, and every EndTxn bumps its epoch. One scenario, the same expectations on
both brokers:

- commit, abort, commit: DescribeTransactions then shows the epoch bumped once per
  transaction, and read_committed readers see exactly the committed records;
- a zombie and its successor with one transactional id: the successor's initTransactions
  fences the zombie, whose commit and next send fail with ProducerFencedException; its open
  transaction is aborted and only the successor's record is committed;
- two transactions left open past `transaction.timeout.ms`, which the coordinator aborts
  (at transaction version 2): committing one afterwards fails with
  InvalidTxnStateException, aborting the other is answered as a retry, and that producer
  then commits a new transaction.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import confluent_io, java
from helpers.broker import BrokerProcess
from helpers.reference_broker import ReferenceBroker
from helpers.wire_client import WireConnection

from groupcoord.wire.generated.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
)

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

# Kafka 4.4's answers for the scenario (the `_on_kafka` case checks them against Kafka).
EXPECTED: dict[str, Any] = {
    "plan": ["commit", "abort", "commit"],
    "plan_epoch": 3,
    "plan_state": "CompleteCommit",
    "plan_read_committed": ["commit-0-0", "commit-0-1", "commit-2-0"],
    "fenced": "ProducerFencedException",
    "zombie_send": "ProducerFencedException",
    "fence_read_committed": ["successor-0"],
    "fence_read_uncommitted": ["zombie-0", "zombie-1", "successor-0"],
    "late_commit": "InvalidTxnStateException",
    "late_abort": "none",
    "after": "none",
    "timeout_read_committed": ["after-0"],
}
# The coordinators' abort task runs every 10 s (Kafka's default
# transaction.abort.timed.out.transaction.cleanup.interval.ms, groupcoord's too).
TXN_TIMEOUT_MS = 2_000
TIMEOUT_WAIT_MS = 15_000


def _describe(bootstrap: str, tid: str) -> Any:
    host, port = bootstrap.rsplit(":", 1)
    conn = WireConnection(host, int(port), client_id="txn-v2")
    try:
        response = conn.call(DescribeTransactionsRequest(transactional_ids=[tid]), 0)
    finally:
        conn.close()
    assert isinstance(response, DescribeTransactionsResponse)
    (state,) = response.transaction_states
    assert state.error_code == 0
    return state


def _read(bootstrap: str, topic: str, isolation: str, count: int) -> list[str]:
    """Values a Java consumer reads from the start; it waits for one more than `count` so
    that nothing past the expected records goes unseen."""
    run = java.run_harness("consume-assign", bootstrap, "--topic", topic, "--count",
                           str(count + 1), "--timeout-ms", "6000", "--prop",
                           f"isolation.level={isolation}", expect=(2,))
    return [java.decode_record(r).value.decode() for r in run.of("record")]


def run_scenario(bootstrap: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    confluent_io.create_topic(bootstrap, "tv2-plan", 1)
    run = java.run_harness("txn-produce", bootstrap, "--topic", "tv2-plan",
                           "--transactional-id", "tv2-plan-tx",
                           "--plan", "commit:2,abort:2,commit:1")
    seen["plan"] = [e["outcome"] for e in run.of("txn")]
    state = _describe(bootstrap, "tv2-plan-tx")
    seen["plan_epoch"], seen["plan_state"] = state.producer_epoch, state.transaction_state
    seen["plan_read_committed"] = _read(bootstrap, "tv2-plan", "read_committed", 3)

    confluent_io.create_topic(bootstrap, "tv2-fence", 1)
    fence = java.run_harness("txn-fence", bootstrap, "--topic", "tv2-fence",
                             "--transactional-id", "tv2-fence-tx")
    assert fence.of("fence-done")
    seen["fenced"] = fence.of("fenced")[0]["error"]
    seen["zombie_send"] = fence.of("zombie-send")[0]["error"]
    seen["fence_read_committed"] = _read(bootstrap, "tv2-fence", "read_committed", 1)
    seen["fence_read_uncommitted"] = _read(bootstrap, "tv2-fence", "read_uncommitted", 3)

    confluent_io.create_topic(bootstrap, "tv2-timeout", 1)
    timeout = java.run_harness("txn-timeout", bootstrap, "--topic", "tv2-timeout",
                               "--transactional-id", "tv2-timeout-tx",
                               "--wait-ms", str(TIMEOUT_WAIT_MS),
                               "--prop", f"transaction.timeout.ms={TXN_TIMEOUT_MS}")
    for event in ("late-commit", "late-abort", "after"):
        seen[event.replace("-", "_")] = timeout.of(event)[0]["error"]
    seen["timeout_read_committed"] = _read(bootstrap, "tv2-timeout", "read_committed", 1)
    return seen


def test_java_tv2_transactions_and_fencing(broker: BrokerProcess, java_harness: Path) -> None:
    assert run_scenario(broker.bootstrap) == EXPECTED


@pytest.mark.reference
def test_java_tv2_transactions_and_fencing_on_kafka(kafka: ReferenceBroker,
                                                    java_harness: Path) -> None:
    """The same expectations hold for Apache Kafka 4.4.0: they are Kafka's behaviour."""
    assert run_scenario(kafka.bootstrap) == EXPECTED
