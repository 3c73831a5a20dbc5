"""A shard runtime's append that fails when told, for the fault property tests of each
coordinator kind (share state, transactions)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

# Whether the next append fails: before its batch reaches the log (a full disk) or after
# (a failed fsync: the runtime must cut the batch off again).
fails = st.sampled_from([None, "before", "after"])


class FailingSeam:
    """The runtime's append, failing with `error` when told; counts the records of the
    appends that succeeded, per partition (all the log may hold: a failed batch is cut off
    again)."""

    def __init__(self, runtime: Any, error: OSError) -> None:
        self.runtime = runtime
        self.append = runtime.append
        self.error = error
        self.fail_next: str | None = None
        self.failed = 0
        self.acknowledged: dict[int, int] = {}

    def __call__(self, topic: str, partition: int, *args: Any, **kwargs: Any) -> Any:
        fail, self.fail_next = self.fail_next, None
        start = self.runtime.log_end_offset(partition)
        if fail is None:
            info = self.append(topic, partition, *args, **kwargs)
            written = self.runtime.log_end_offset(partition) - start
            self.acknowledged[partition] = self.acknowledged.get(partition, 0) + written
            return info
        self.failed += 1
        if fail == "after":
            self.append(topic, partition, *args, **kwargs)
        raise OSError(self.error.errno, self.error.strerror)
