"""What every benchmark module receives: the brokers to measure and the run parameters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.brokers import BrokerSpec


@dataclass
class BenchContext:
    """Brokers (usable ones in table order, unusable ones with the reason) and settings."""

    brokers: list[BrokerSpec]
    unavailable: dict[str, str] = field(default_factory=dict)
    startup_repeats: int = 20
    records: int = 200_000
    runs: int = 3
    run_timeout_s: float = 120.0
    #: Classic join: group sizes formed per broker start.
    join_sizes: tuple[int, ...] = (1, 10, 50)
    #: Heartbeat/commit rate: connections (one single-member group each), requests in
    #: flight per connection, untimed warm-up and timed seconds.
    group_connections: int = 16
    group_window: int = 32
    group_warmup_s: float = 3.0
    group_seconds: float = 5.0
    #: KIP-848: members that join one new group.
    kip848_members: int = 100

    def order(self, run: int) -> list[BrokerSpec]:
        """Brokers in the order to measure them in run ``run``: reversed every other run,
        so neither always goes first."""
        return list(self.brokers) if run % 2 == 0 else list(reversed(self.brokers))

    def params(self) -> dict[str, Any]:
        """Settings recorded with the results."""
        return {"startup_repeats": self.startup_repeats, "records": self.records,
                "runs": self.runs, "run_timeout_s": self.run_timeout_s,
                "join_sizes": ",".join(map(str, self.join_sizes)),
                "group_connections": self.group_connections, "group_window": self.group_window,
                "group_warmup_s": self.group_warmup_s, "group_seconds": self.group_seconds,
                "kip848_members": self.kip848_members}

    def pending_rows(self, **extra: Any) -> list[dict[str, Any]]:
        """Table rows saying plainly that an unusable broker has no numbers."""
        return [{"broker": name, "status": f"pending: {reason}", **extra}
                for name, reason in self.unavailable.items()]
