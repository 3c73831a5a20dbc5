"""Storage faults on demand: a ``FileIO`` that fails where and when a test says.

A rule names an operation (``write``, ``fsync``, ``truncate``), the error (ENOSPC, EIO), which
files it hits (by name suffix, ``.log`` by default), how many matching calls pass first
(``after``) and how many fail (``times``, None for "until cleared"). A ``short`` write fault
writes the first half of the bytes and returns the short count before the next call fails,
which is what a filling disk does. ``fired`` lists every fault that happened, so a test can
check that the fault it meant was the one that bit.

The injector is shared with the thread running the broker: rules are replaced as whole
lists, so a test thread can add or clear them while the broker writes.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from typing import Literal

from groupcoord.storage.fileio import FileIO

Operation = Literal["write", "fsync", "truncate"]


@dataclass
class FaultRule:
    """One fault: ``op`` on files ending with ``suffix`` fails with ``error``."""

    op: Operation
    error: int = errno.ENOSPC
    suffix: str = ".log"
    after: int = 0
    times: int | None = 1
    short: bool = False
    seen: int = field(default=0, init=False)
    fired: int = field(default=0, init=False)

    def bites(self) -> bool:
        """Count one matching call; True when this one must fail."""
        self.seen += 1
        if self.seen <= self.after:
            return False
        if self.times is not None and self.fired >= self.times:
            return False
        self.fired += 1
        return True


@dataclass(frozen=True)
class FiredFault:
    op: Operation
    path: str
    error: int
    short: bool


class FaultInjectingFileIO(FileIO):
    """``FileIO`` over the real disk with injectable failures."""

    def __init__(self) -> None:
        self.rules: list[FaultRule] = []
        self.fired: list[FiredFault] = []
        self._paths: dict[int, str] = {}

    # -- controlling -----------------------------------------------------------------------

    def add(self, rule: FaultRule) -> FaultRule:
        self.rules = [*self.rules, rule]
        return rule

    def disk_full(self, suffix: str = "") -> FaultRule:
        """Every write (short first, as a real disk) fails with ENOSPC until ``clear``."""
        return self.add(FaultRule("write", errno.ENOSPC, suffix=suffix, times=None, short=True))

    def clear(self) -> None:
        self.rules = []

    # -- FileIO ----------------------------------------------------------------------------

    def open(self, path: str, flags: int, mode: int = 0o644) -> int:
        fd = super().open(path, flags, mode)
        self._paths[fd] = path
        return fd

    def close(self, fd: int) -> None:
        self._paths.pop(fd, None)
        super().close(fd)

    def write(self, fd: int, data: bytes | bytearray | memoryview) -> int:
        rule = self._match("write", fd)
        if rule is None:
            return super().write(fd, data)
        if rule.short and rule.fired % 2 == 1 and len(data) > 1:
            # A filling disk accepts part of a write and refuses the rest on the next call,
            # so a short rule alternates: half written, then the error.
            written = super().write(fd, memoryview(data)[: len(data) // 2])
            self._fire(rule, "write", fd, short=True)
            return written
        self._fire(rule, "write", fd)
        raise OSError(rule.error, os.strerror(rule.error))

    def pwrite(self, fd: int, data: bytes | bytearray | memoryview, offset: int) -> int:
        rule = self._match("write", fd)
        if rule is None:
            return super().pwrite(fd, data, offset)
        self._fire(rule, "write", fd)
        raise OSError(rule.error, os.strerror(rule.error))

    def fsync(self, fd: int) -> None:
        rule = self._match("fsync", fd)
        if rule is not None:
            self._fire(rule, "fsync", fd)
            raise OSError(rule.error, os.strerror(rule.error))
        super().fsync(fd)

    def ftruncate(self, fd: int, size: int) -> None:
        rule = self._match("truncate", fd)
        if rule is not None:
            self._fire(rule, "truncate", fd)
            raise OSError(rule.error, os.strerror(rule.error))
        super().ftruncate(fd, size)

    # -- internals ---------------------------------------------------------------------------

    def _match(self, op: Operation, fd: int) -> FaultRule | None:
        path = self._paths.get(fd, "")
        for rule in self.rules:
            if rule.op == op and path.endswith(rule.suffix) and rule.bites():
                return rule
        return None

    def _fire(self, rule: FaultRule, op: Operation, fd: int, short: bool = False) -> None:
        self.fired.append(FiredFault(op, self._paths.get(fd, ""), rule.error, short))
