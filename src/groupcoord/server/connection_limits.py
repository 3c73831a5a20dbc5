"""The broker's connection limits on the event loop: who may connect, who has idled out.

Joins the pure pieces (`ConnectionQuotas`, `IdleExpiry`, `FdBudget`) to asyncio, the way
Kafka's `SocketServer.Acceptor` and `Processor` use `ConnectionQuotas` and the selector's
idle expiry:
- the acceptor awaits `wait_for_slot` before each accept (`max.connections` or the
  descriptor reserve reached: new connections wait in the listen backlog, as Kafka's
  acceptor blocks) and asks `admit(address)` after it (`max.connections.per.ip`);
- each connection reports `opened`/`touch` (bytes read or written)/`closed`;
- one timer, at the oldest connection's deadline, closes connections idle for longer than
  `connections.max.idle.ms` (negative disables it, as in Kafka). Unlike Kafka, a
  connection still owed a response is not idle: a JoinGroup parked for a long rebalance
  keeps its connection.

Every limit that bites is logged, at most once per interval and cause (`ThrottledLog`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from groupcoord.server.connection_quotas import (
    MAX_CONNECTIONS,
    MAX_CONNECTIONS_PER_IP,
    ConnectionQuotas,
    parse_overrides,
    resolve_overrides,
)
from groupcoord.server.fd_limits import FdBudget, current_fd_limit
from groupcoord.server.idle_expiry import CONNECTIONS_MAX_IDLE_MS, IdleExpiry
from groupcoord.server.throttled_log import ThrottledLog

if TYPE_CHECKING:
    from groupcoord.server.config import BrokerConfig

log = logging.getLogger("groupcoord.server")

# How often a wait on the descriptor reserve re-measures: files close without any
# connection closing (retention deleting segments).
FD_RECHECK_S = 1.0
# Timers may fire up to the loop's clock resolution early; expiry is strict.
_TIMER_SLACK_S = 0.001
OPEN_FILES = "open files"


class LimitedConnection(Protocol):
    """What the limits need of a connection (`KafkaConnection`)."""

    quota_address: str
    # True from construction until the quota slot is released (exactly once).
    quota_held: bool

    def has_pending_responses(self) -> bool: ...

    def close(self) -> None: ...


class ConnectionLimits:
    """Admission, release and idle expiry of the broker's client connections."""

    def __init__(self, quotas: ConnectionQuotas, connections_max_idle_ms: int,
                 fd_budget: FdBudget, clock: Callable[[], float]) -> None:
        self.quotas = quotas
        self.fd_budget = fd_budget
        self.max_idle_ms = connections_max_idle_ms
        self.idle: IdleExpiry[LimitedConnection] | None = (
            IdleExpiry(connections_max_idle_ms / 1000.0) if connections_max_idle_ms >= 0 else None)
        self._clock = clock
        self._slot_freed = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None
        self._log = ThrottledLog(log, clock)
        self.idle_closed = 0

    # -- the acceptor's side ---------------------------------------------------------------

    def blocked_by(self) -> str | None:
        """Why no connection may be accepted now, None when one may."""
        quotas = self.quotas
        if not quotas.slot_available():
            return MAX_CONNECTIONS
        if not self.fd_budget.admits(quotas.total):
            return OPEN_FILES
        return None

    async def wait_for_slot(self) -> None:
        """Return once one more connection may be accepted."""
        while (cause := self.blocked_by()) is not None:
            self._log_blocked(cause)
            self._slot_freed.clear()
            timeout = FD_RECHECK_S if cause == OPEN_FILES else None
            try:
                await asyncio.wait_for(self._slot_freed.wait(), timeout)
            except TimeoutError:
                pass

    def _log_blocked(self, cause: str) -> None:
        total = self.quotas.total
        if cause == MAX_CONNECTIONS:
            self._log.log(cause, logging.WARNING,
                          "%s=%d reached: new connections wait until one closes",
                          MAX_CONNECTIONS, self.quotas.max_connections)
            return
        budget = self.fd_budget
        self._log.log(cause, logging.WARNING,
                      "open files limit %s nearly reached (%d connections, %d other files, "
                      "%d kept free for log files): new connections wait until one closes",
                      budget.limit, total, budget.others, budget.reserve)

    def accept_failed(self, exc: OSError) -> None:
        """accept() ran out of descriptors or memory despite the budget."""
        self.fd_budget.measure(self.quotas.total)
        self._log.log("accept", logging.WARNING, "accepting a connection failed: %s", exc)

    def accept_crashed(self, exc: Exception) -> None:
        """A bug on the accept path: logged with its traceback, the listener keeps going."""
        if self._log.log("crash", logging.ERROR, "error while accepting a connection: %r", exc):
            log.error("traceback of the accept error", exc_info=exc)

    def admit(self, address: str) -> bool:
        """Count a new connection from `address`, or log why it is refused."""
        refusal = self.quotas.inc(address)
        if refusal is None:
            return True
        self._log.log(f"ip {address}", logging.WARNING,
                      "Rejected connection from %s, address already has the configured "
                      "maximum of %d connections (%s)", address, refusal.limit,
                      MAX_CONNECTIONS_PER_IP)
        return False

    def release(self, address: str) -> None:
        """A counted connection is gone; wake an acceptor waiting for a slot."""
        self.quotas.dec(address)
        self._slot_freed.set()

    # -- the connections' side -------------------------------------------------------------

    def opened(self, conn: LimitedConnection) -> None:
        if self.idle is not None:
            self.idle.update(conn, self._clock())
            self._arm()

    def touch(self, conn: LimitedConnection) -> None:
        if self.idle is not None:
            self.idle.update(conn, self._clock())

    def closed(self, conn: LimitedConnection) -> None:
        """The connection is gone (or never got going); idempotent."""
        if self.idle is not None:
            self.idle.remove(conn)
        if conn.quota_held:
            conn.quota_held = False
            self.release(conn.quota_address)

    # -- idle expiry -----------------------------------------------------------------------

    def expire_idle(self, now: float) -> int:
        """Close the connections idle for longer than the limit at `now`; return how many."""
        if self.idle is None:
            return 0
        closed = 0
        for conn in self.idle.expired(now):
            if conn.has_pending_responses():
                self.idle.update(conn, now)
                continue
            conn.close()
            closed += 1
        if closed:
            self.idle_closed += closed
            self._log.log("idle", logging.INFO,
                          "closed %d connections idle for more than %s=%d",
                          closed, CONNECTIONS_MAX_IDLE_MS, self.max_idle_ms)
        return closed

    def _arm(self) -> None:
        """Schedule the next expiry check at the oldest connection's deadline."""
        if self._timer is not None or self.idle is None:
            return
        deadline = self.idle.next_deadline()
        if deadline is None:
            return
        delay = max(0.0, deadline - self._clock()) + _TIMER_SLACK_S
        self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self.expire_idle(self._clock())
        self._arm()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def build_connection_limits(config: BrokerConfig) -> ConnectionLimits:
    """The limits a broker runs with: its config, this process's open-files limit, and the
    running loop's clock. Host names in the overrides are resolved once, here."""
    quotas = ConnectionQuotas(
        config.max_connections, config.max_connections_per_ip,
        resolve_overrides(parse_overrides(config.max_connections_per_ip_overrides)))
    budget = FdBudget(current_fd_limit())
    budget.measure(0)
    return ConnectionLimits(quotas, config.connections_max_idle_ms, budget,
                            asyncio.get_running_loop().time)
