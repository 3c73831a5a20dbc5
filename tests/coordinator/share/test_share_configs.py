"""share.* group configs: validation ranges and the by_duration reset format."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.share.configs import (
    broker_defaults,
    by_duration_ms,
    share_config,
    validate,
)


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


def test_broker_settings_are_the_defaults_of_group_configs() -> None:
    """`group.share.record.lock.duration.ms` and friends (`ShareGroupConfig`) are what a
    share-partition uses when its group sets nothing; the group's value wins."""
    broker = GroupCoordinatorConfig.from_properties({
        "group.share.record.lock.duration.ms": "1000",
        "group.share.min.record.lock.duration.ms": "1000",
        "group.share.delivery.count.limit": "3",
        "group.share.partition.max.record.locks": "5000",
        "group.share.max.partition.max.record.locks": "5000",
        "share.isolation.level": "read_committed",  # not a broker setting: ignored
    })
    defaults = broker_defaults(broker)
    cfg = share_config({}, defaults)
    assert (cfg.record_lock_duration_ms, cfg.delivery_count_limit, cfg.max_record_locks,
            cfg.read_committed) == (1000, 3, 5000, False)
    cfg = share_config({"share.record.lock.duration.ms": "20000",
                        "share.isolation.level": "read_committed"}, defaults)
    assert (cfg.record_lock_duration_ms, cfg.read_committed) == (20000, True)
    # The group's lock duration is bounded by the broker's min/max settings.
    validate("share.record.lock.duration.ms", "1000", broker)
    with pytest.raises(ValueError):
        validate("share.record.lock.duration.ms", "1000")
    with pytest.raises(ValueError):
        validate("share.record.lock.duration.ms", "60001", broker)


@pytest.mark.parametrize("props", [
    {"group.share.record.lock.duration.ms": "999"},
    {"group.share.record.lock.duration.ms": "10000"},  # below the 15000 minimum
    {"group.share.delivery.count.limit": "11"},
    {"group.share.partition.max.record.locks": "99"},
    {"group.share.min.record.lock.duration.ms": "30001"},
    {"group.share.max.share.sessions": "0"},
])
def test_broker_share_settings_are_range_checked(props: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        GroupCoordinatorConfig.from_properties(props)


def test_record_locks_are_bounded_by_the_broker_settings() -> None:
    """`GroupConfig.validateValues` (Kafka 4.4): `share.partition.max.record.locks` within
    the broker's group.share.min/max.partition.max.record.locks (100 and 4000)."""
    name = "share.partition.max.record.locks"
    validate(name, "100")
    validate(name, "4000")
    with pytest.raises(ValueError) as over:
        validate(name, "4001")
    assert str(over.value) == f"{name} must be in the range 100 to 4000 inclusive."
    with pytest.raises(ValueError) as under:
        validate(name, "99")
    assert str(under.value) == f"Invalid value 99 for configuration {name}: Value must be at least 100"
    broker = GroupCoordinatorConfig.from_properties({
        "group.share.min.partition.max.record.locks": "500",
        "group.share.max.partition.max.record.locks": "8000"})
    validate(name, "8000", broker)
    with pytest.raises(ValueError) as low:
        validate(name, "499", broker)
    assert str(low.value) == f"{name} must be in the range 500 to 8000 inclusive."


@pytest.mark.parametrize(("props", "message"), [
    ({"group.share.max.partition.max.record.locks": "1999"},
     ("Invalid value 1999 for configuration group.share.max.partition.max.record.locks: "
     "Value must be at least 2000")),
    ({"group.share.min.partition.max.record.locks": "2001"},
     ("Invalid value 2001 for configuration group.share.min.partition.max.record.locks: "
     "Value must be no more than 2000")),
    ({"group.share.partition.max.record.locks": "5000"},
     ("group.share.max.partition.max.record.locks must be greater than or equal to "
      "group.share.partition.max.record.locks")),
    ({"group.share.partition.max.record.locks": "150",
      "group.share.min.partition.max.record.locks": "200"},
     ("group.share.partition.max.record.locks must be greater than or equal to "
      "group.share.min.partition.max.record.locks")),
])
def test_record_lock_broker_settings_are_checked_at_start_up(props: dict[str, str],
                                                             message: str) -> None:
    with pytest.raises(ValueError) as refused:
        GroupCoordinatorConfig.from_properties(props)
    assert str(refused.value) == message
