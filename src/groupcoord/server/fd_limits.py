"""The process's file-descriptor budget: connections must leave room for log files.

Kafka has no equivalent (the JVM fails with "Too many open files" and the operator raises
`ulimit -n`). A Python broker whose connections take every descriptor can no longer roll
a segment or create a topic, and asyncio's listener then spins on EMFILE; so:
- at start-up the soft RLIMIT_NOFILE is raised to the hard limit (`raise_nofile_limit`);
- the acceptor admits a connection only while a reserve of descriptors stays free for
  everything else (`FdBudget`); past that it stops accepting, as at `max.connections`.

The count of descriptors used by other things (segments, indexes, the listener) is
measured from `/proc/self/fd` (or `/dev/fd`) only when the budget is close, so the check
is one comparison per accept the rest of the time.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

log = logging.getLogger("groupcoord.server")

_FD_DIRS = ("/proc/self/fd", "/dev/fd")
_RESERVE_MIN = 64
_RESERVE_MAX = 1024


def nofile_limits() -> tuple[int, int] | None:
    """(soft, hard) RLIMIT_NOFILE, None where the platform has no such limit."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return int(soft), int(hard)


def current_fd_limit() -> int | None:
    """The soft open-files limit, None when unlimited or unknown."""
    limits = nofile_limits()
    if limits is None:
        return None
    import resource

    soft = limits[0]
    return None if soft == resource.RLIM_INFINITY or soft <= 0 else soft


def raise_nofile_limit() -> int | None:
    """Raise the soft open-files limit to the hard one; return the soft limit in force."""
    limits = nofile_limits()
    if limits is None:
        return None
    import resource

    soft, hard = limits
    if hard != resource.RLIM_INFINITY and (soft == resource.RLIM_INFINITY or soft >= hard):
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:  # e.g. macOS refuses RLIM_INFINITY
        log.info("open files limit stays at %d (raising to %d failed: %s)", soft, hard, exc)
        return soft
    log.info("open files limit raised from %d to %d", soft, hard)
    return hard


def count_open_fds() -> int | None:
    """Descriptors this process has open, None when the platform cannot tell."""
    for path in _FD_DIRS:
        try:
            return len(os.listdir(path)) - 1  # listdir's own descriptor is listed too
        except OSError:
            continue
    return None


def default_reserve(limit: int) -> int:
    """Descriptors kept free for files: a tenth of the limit, within 64..1024."""
    return max(_RESERVE_MIN, min(_RESERVE_MAX, limit // 10))


class FdBudget:
    """Admits a new connection only while `reserve` descriptors would stay free.

    `others` (descriptors not held by connections) is re-measured only when the last
    measurement says the budget is close, since it changes slowly (segment rolls).
    """

    def __init__(self, limit: int | None, reserve: int | None = None,
                 count_open: Callable[[], int | None] = count_open_fds) -> None:
        self.limit = limit
        self.reserve = 0 if limit is None else (
            default_reserve(limit) if reserve is None else reserve)
        self._count_open = count_open
        self.others = 0

    def measure(self, connections: int) -> None:
        """Re-derive the descriptors held by everything but the `connections`."""
        opened = self._count_open()
        if opened is not None:
            self.others = max(0, opened - connections)

    def admits(self, connections: int) -> bool:
        """True when one more connection leaves the reserve free."""
        limit = self.limit
        if limit is None:
            return True
        if connections + 1 + self.others + self.reserve <= limit:
            return True
        self.measure(connections)
        return connections + 1 + self.others + self.reserve <= limit
