"""What a synthetic fixture (``fixture``) is made of: its spec and its groups.

The fixture's record writers (``fixture_records``, ``fixture_scenarios``, ``fixture_story``)
take these, and ``fixture`` puts them together.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

ANOMALIES = ("stop", "stall", "slow", "rewind", "rewind-unrecovered", "rebalance",
             "unbalanced", "churn", "txn", "story")


@dataclass
class FixtureSpec:
    """The ``gen-fixture`` options: how long the log runs, each data topic's partitions and
    records per second, ``__consumer_offsets`` partitions, healthy groups besides the
    anomalies' groups, and which anomalies are injected."""

    seconds: int = 600
    partitions: int = 4
    rate: int = 10
    coord_partitions: int = 4
    healthy_groups: int = 2
    anomalies: tuple[str, ...] = ANOMALIES
    story_closes: bool = False  # the story's last members close 4 s before the end (the demo)


@dataclass
class FixtureGroup:
    """One group of the fixture: its commits, and the verdicts the pipeline must reach."""

    name: str
    anomaly: str
    partitions: int
    # partition -> function(commit_time_ms, end_offset, previous_offset) -> offset or None
    commit: Callable[[int, int, int, int | None], int | None]
    expect_partitions: dict[int, str] = field(default_factory=dict)
    expect_group: str = "OK"
