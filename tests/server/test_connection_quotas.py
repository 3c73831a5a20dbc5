"""Connection accounting, idle expiry, the open-files budget and throttled log lines:
the pure pieces behind `max.connections*` and `connections.max.idle.ms`."""

from __future__ import annotations

import logging

import pytest

from groupcoord.server.connection_quotas import (
    INT_MAX,
    ConnectionQuotas,
    Refusal,
    parse_overrides,
    resolve_overrides,
)
from groupcoord.server.fd_limits import FdBudget, count_open_fds, default_reserve
from groupcoord.server.idle_expiry import IdleExpiry
from groupcoord.server.throttled_log import ThrottledLog


def test_per_ip_limit_refuses_beyond_it_and_counts_refusals() -> None:
    quotas = ConnectionQuotas(max_per_ip=2)
    assert quotas.inc("127.0.0.1") is None
    assert quotas.inc("127.0.0.1") is None
    assert quotas.inc("127.0.0.1") == Refusal("127.0.0.1", 2)
    assert quotas.inc("127.0.0.2") is None  # another address has its own count
    assert quotas.count("127.0.0.1") == 2 and quotas.total == 3 and quotas.refused == 1


def test_release_on_close_frees_the_address_slot() -> None:
    quotas = ConnectionQuotas(max_per_ip=1)
    assert quotas.inc("10.0.0.1") is None
    assert quotas.inc("10.0.0.1") is not None
    quotas.dec("10.0.0.1")
    assert quotas.count("10.0.0.1") == 0 and quotas.total == 0
    assert quotas.inc("10.0.0.1") is None
    with pytest.raises(ValueError, match="no connections"):
        quotas.dec("10.0.0.9")


def test_overrides_replace_the_default_per_address() -> None:
    quotas = ConnectionQuotas(max_per_ip=0, overrides={"127.0.0.1": 3})
    assert quotas.inc("127.0.0.2") == Refusal("127.0.0.2", 0)
    assert [quotas.inc("127.0.0.1") for _ in range(4)] == [None, None, None,
                                                          Refusal("127.0.0.1", 3)]
    assert quotas.limit_for("127.0.0.1") == 3 and quotas.limit_for("::1") == 0


def test_broker_wide_slot() -> None:
    quotas = ConnectionQuotas(max_connections=2)
    assert quotas.slot_available()
    quotas.inc("a")
    quotas.inc("b")
    assert not quotas.slot_available()
    quotas.dec("a")
    assert quotas.slot_available()


def test_defaults_are_kafkas() -> None:
    quotas = ConnectionQuotas()
    assert quotas.max_connections == INT_MAX == 2147483647
    assert quotas.max_per_ip == INT_MAX


def test_parse_overrides_as_kafka_csv_map() -> None:
    assert parse_overrides("") == {}
    assert parse_overrides(" hostName:100 , 127.0.0.1:200") == {"hostName": 100,
                                                                "127.0.0.1": 200}
    # Kafka splits at the last ':', so an IPv6 literal keeps its colons.
    assert parse_overrides("::1:5") == {"::1": 5}
    for bad in ("127.0.0.1", "bad host:1", "127.0.0.1:x", ":3", "h:-1"):
        with pytest.raises(ValueError):
            parse_overrides(bad)


def test_resolve_overrides_keys_by_address() -> None:
    assert resolve_overrides({"127.0.0.1": 4, "localhost": 2})["127.0.0.1"] in (2, 4)
    assert resolve_overrides({"127.0.0.3": 1}) == {"127.0.0.3": 1}


def test_limits_validated_as_kafka_config() -> None:
    with pytest.raises(ValueError, match="can be set to zero only if"):
        ConnectionQuotas(max_per_ip=0)
    with pytest.raises(ValueError, match="max.connections must be"):
        ConnectionQuotas(max_connections=-1)


def test_idle_expiry_closes_oldest_first_and_strictly_after_the_limit() -> None:
    idle: IdleExpiry[str] = IdleExpiry(10.0)
    idle.update("a", 0.0)
    idle.update("b", 1.0)
    idle.update("c", 2.0)
    idle.update("a", 5.0)  # activity moves it to the young end
    assert idle.next_deadline() == 11.0
    assert idle.expired(11.0) == []  # Kafka: idle *more* than the limit
    assert idle.expired(12.5) == ["b", "c"]
    assert idle.next_deadline() == 15.0 and len(idle) == 1
    idle.remove("a")
    assert idle.next_deadline() is None and idle.expired(1e9) == []


def test_fd_budget_keeps_the_reserve_and_measures_only_when_close() -> None:
    measured: list[int] = []

    def count_open() -> int:
        measured.append(1)
        return open_now

    open_now = 30
    budget = FdBudget(200, reserve=20, count_open=count_open)
    budget.measure(0)
    assert budget.others == 30
    assert budget.admits(100) and len(measured) == 1  # far from the limit: no measurement
    open_now = 30 + 149
    assert budget.admits(149)  # 149 + 1 + 30 + 20 == 200
    open_now = 31 + 150  # a segment was opened meanwhile
    assert not budget.admits(150) and budget.others == 31
    assert FdBudget(None).admits(10**9)


def test_fd_reserve_and_count() -> None:
    assert default_reserve(256) == 64 and default_reserve(20000) == 1024
    assert default_reserve(5000) == 500
    count = count_open_fds()
    assert count is None or count >= 3


def test_throttled_log_reports_suppressed_lines(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    throttled = ThrottledLog(logging.getLogger("t.throttle"), lambda: now[0], interval_s=10.0)
    with caplog.at_level(logging.INFO, logger="t.throttle"):
        assert throttled.log("k", logging.WARNING, "refused %s", "x")
        assert not throttled.log("k", logging.WARNING, "refused %s", "x")
        assert not throttled.log("k", logging.WARNING, "refused %s", "x")
        assert throttled.log("other", logging.INFO, "idle")
        now[0] = 10.0
        assert throttled.log("k", logging.WARNING, "refused %s", "y")
    assert [r.getMessage() for r in caplog.records] == [
        "refused x", "idle", "refused y (2 more like this since the last report)"]
