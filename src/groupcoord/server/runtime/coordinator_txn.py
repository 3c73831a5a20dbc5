"""The end of a transaction on a `__consumer_offsets` shard (Kafka's
`CoordinatorRuntime.scheduleTransactionCompletion` / `CoordinatorContext.completeTransaction`).

`CoordinatorRuntime.complete_transaction` queues an operation returning an `EndTxnWrite`;
the shard task runs it in queue order like any operation, so the marker lands after every
record written before it. The write checks the producer (an older producer epoch is
INVALID_PRODUCER_EPOCH, an older transaction-coordinator epoch
TRANSACTION_COORDINATOR_FENCED, as Kafka's log does), appends one control batch holding
the COMMIT/ABORT `EndTxnMarker` and then replays it, so pending offsets become committed
(or vanish) exactly as a reload of the log would make them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from groupcoord.coordinator.result import Result
from groupcoord.server.runtime.shard_log import encode_end_txn_marker


@dataclass(frozen=True, slots=True)
class EndTxnWrite:
    """What a transaction-completion operation returns: the marker to append."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool

    def write(self, task: Any, now_ms: int) -> Result:
        """Check, append and replay the marker on `task` (a `ShardTask`); the response is
        the error code for `complete_transaction`. A failed append raises (fail-stop)."""
        pid, epoch = self.producer_id, self.producer_epoch
        error = task.producers.check(pid, epoch, self.coordinator_epoch)
        if error:
            return Result(response=error)
        batch = encode_end_txn_marker(pid, epoch, self.coordinator_epoch, self.commit, now_ms)
        runtime = task.runtime
        runtime.append(task.topic, task.partition, batch, now_ms, allow_control=True)
        runtime.written[task.partition] = True
        task.producers.observe(pid, epoch, self.coordinator_epoch)
        task.shard.replay_end_transaction_marker(pid, epoch, self.commit)
        return Result(response=0)
