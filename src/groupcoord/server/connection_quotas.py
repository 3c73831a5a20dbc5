"""Connection counts per client address and broker-wide, with Kafka's limits.

Mirrors Kafka's `kafka.network.ConnectionQuotas` (SocketServer.scala) for one listener
and no connection-rate quotas:
- `max.connections.per.ip` (default Int.MaxValue) with `max.connections.per.ip.overrides`
  (`host:count,host:count`): a connection beyond its address's limit is refused (the
  acceptor closes it at once) and counted;
- `max.connections` (default Int.MaxValue): a broker-wide cap checked *before* accepting;
  Kafka's acceptor blocks until a connection closes, and so does ours (see `acceptor`).

Pure accounting, no IO: addresses are the literal IPs the acceptor sees; resolving
host names in the overrides is the caller's job (`resolve_overrides`).
"""

from __future__ import annotations

import re
import socket

from groupcoord.security.settings import Settings

INT_MAX = 2**31 - 1
MAX_CONNECTIONS = "max.connections"
MAX_CONNECTIONS_PER_IP = "max.connections.per.ip"
MAX_CONNECTIONS_PER_IP_OVERRIDES = "max.connections.per.ip.overrides"
# Kafka's `Utils.validHostPattern` (compiled by `re` on first use: overrides are rare, and
# this module loads before the listener is bound).
_VALID_HOST = r"[a-zA-Z0-9._\-:]+"


def parse_overrides(text: str) -> dict[str, int]:
    """Parse `host:count,host:count` as Kafka's `Csv.parseCsvMap` (split at the last ':',
    so IPv6 literals work) and validate as `KafkaConfig` does."""
    out: dict[str, int] = {}
    if not text.strip():
        return out
    for item in re.split(r"\s*,\s*", text.strip()):
        host, sep, count = item.rpartition(":")
        host = host.strip()
        if not sep or not re.fullmatch(_VALID_HOST, host):
            raise ValueError(f"{MAX_CONNECTIONS_PER_IP_OVERRIDES} contains invalid addresses : "
                             f"{host or item}")
        try:
            limit = int(count.strip())
        except ValueError:
            raise ValueError(f"{MAX_CONNECTIONS_PER_IP_OVERRIDES}: {count!r} is not a number "
                             f"(in {item!r})") from None
        if not 0 <= limit <= INT_MAX:
            raise ValueError(f"{MAX_CONNECTIONS_PER_IP_OVERRIDES}: {limit} outside 0..{INT_MAX}")
        out[host] = limit
    return out


def resolve_overrides(overrides: dict[str, int]) -> dict[str, int]:
    """Key the overrides by address, as Kafka's `InetAddress.getByName(host)` (first
    address of a host name; a literal stays itself)."""
    out: dict[str, int] = {}
    for host, limit in overrides.items():
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        out[str(infos[0][4][0])] = limit
    return out


def validate_limits(max_connections: int, max_per_ip: int, overrides: dict[str, int]) -> None:
    """The checks of Kafka's `ConfigDef` (`atLeast(0)`) and `KafkaConfig.validateValues`."""
    for name, value in ((MAX_CONNECTIONS, max_connections), (MAX_CONNECTIONS_PER_IP, max_per_ip)):
        if not 0 <= value <= INT_MAX:
            raise ValueError(f"{name} must be in 0..{INT_MAX}, got {value}")
    if max_per_ip == 0 and not overrides:
        raise ValueError(f"{MAX_CONNECTIONS_PER_IP} can be set to zero only if "
                         f"{MAX_CONNECTIONS_PER_IP_OVERRIDES} property is set.")


class Refusal(Settings):
    """A connection refused by the per-address limit (a `Settings` record: cheap to define
    before the broker binds its listeners, as every record on that path)."""

    address: str
    limit: int


class ConnectionQuotas:
    """Open connections per address and in total; refusals per address."""

    def __init__(self, max_connections: int = INT_MAX, max_per_ip: int = INT_MAX,
                 overrides: dict[str, int] | None = None) -> None:
        validate_limits(max_connections, max_per_ip, overrides or {})
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.overrides = dict(overrides or {})
        self._counts: dict[str, int] = {}
        self.total = 0
        self.refused = 0

    def limit_for(self, address: str) -> int:
        return self.overrides.get(address, self.max_per_ip)

    def count(self, address: str) -> int:
        return self._counts.get(address, 0)

    def slot_available(self) -> bool:
        """Kafka's `connectionSlotAvailable` for the only listener: below `max.connections`."""
        return self.total < self.max_connections

    def inc(self, address: str) -> Refusal | None:
        """Count a new connection from `address`, or refuse it (not counted) when the
        address already holds its limit, as Kafka's `inc` + `closeChannel` leave it."""
        count = self._counts.get(address, 0)
        limit = self.overrides.get(address, self.max_per_ip)
        if count >= limit:
            self.refused += 1
            return Refusal(address, limit)
        self._counts[address] = count + 1
        self.total += 1
        return None

    def dec(self, address: str) -> None:
        """A counted connection closed. Unknown addresses are a caller bug, as in Kafka."""
        count = self._counts.get(address)
        if count is None:
            raise ValueError("Attempted to decrease connection count for address with no "
                             f"connections, address: {address}")
        if count == 1:
            del self._counts[address]
        else:
            self._counts[address] = count - 1
        self.total -= 1
