"""share.* group configs: validation ranges and the by_duration reset format."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.share.configs import by_duration_ms, share_config, validate


@pytest.mark.parametrize(("name", "value"), [
    ("share.delivery.count.limit", "1"), ("share.delivery.count.limit", "11"),
    ("share.record.lock.duration.ms", "14999"), ("share.auto.offset.reset", "none"),
    ("share.isolation.level", "committed"), ("share.renew.acknowledge.enable", "yes"),
    ("share.unknown", "1"), ("share.partition.max.record.locks", "x"),
    ("share.auto.offset.reset", "by_duration:1H"),
])
def test_invalid_values(name: str, value: str) -> None:
    with pytest.raises(ValueError):
        validate(name, value)


@pytest.mark.parametrize(("name", "value"), [
    ("share.delivery.count.limit", "2"), ("share.record.lock.duration.ms", "60000"),
    ("share.auto.offset.reset", "EARLIEST"), ("share.auto.offset.reset", "by_duration:PT1H"),
    ("share.isolation.level", "read_committed"), ("share.delivery.count.limit", None),
])
def test_valid_values(name: str, value: str | None) -> None:
    validate(name, value)


def test_by_duration() -> None:
    assert by_duration_ms("by_duration:PT1H30M") == 5_400_000
    assert by_duration_ms("by_duration:P1DT0.5S") == 86_400_500
    assert by_duration_ms("by_duration:pt10s") == 10_000
    assert by_duration_ms("by_duration:P") is None
    assert by_duration_ms("latest") is None


def test_share_config_overrides_and_defaults() -> None:
    cfg = share_config({"share.delivery.count.limit": "3"})
    assert (cfg.delivery_count_limit, cfg.record_lock_duration_ms, cfg.max_record_locks,
            cfg.auto_offset_reset) == (3, 30_000, 2_000, "latest")
