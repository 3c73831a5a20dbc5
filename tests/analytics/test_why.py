"""``analyze why`` and the sentences behind it (``story``), without Spark.

The fixture's ``story`` group replays the demo's script (``fixture.story_group``), so its six
rebalances and their causes are known exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from groupcoord.analytics.driver import why
from groupcoord.analytics.driver.cli import main
from groupcoord.analytics.fixture.generate import T0
from groupcoord.analytics.report import story

Fixture = tuple[Path, dict[str, Any]]

STORY = [
    "group story (classic protocol): 6 rebalances",
    "  generation 1 at 2023-11-14 22:13:20.500: m1 joined; 4 partitions moved; 300 ms",
    "      members after: m1",
    "  generation 2 at 2023-11-14 22:13:45.100: m2 joined; 2 partitions moved; 1.1 s",
    "      members after: m1, m2",
    "  generation 3 at 2023-11-14 22:14:08.800: m3-slow joined; 1 partition moved; 800 ms",
    "      members after: m1, m2, m3-slow",
    "  generation 4 at 2023-11-14 22:14:33.200: m4-killed joined; 2 partitions moved; 1.2 s",
    "      members after: m1, m2, m3-slow, m4-killed",
    ('  generation 5 at 2023-11-14 22:14:56.600: m2 left the group: "scaling down"; 1 partition '
    "moved; 600 ms"),
    "      members after: m1, m3-slow, m4-killed",
    ("  generation 6 at 2023-11-14 22:16:06.100: m4-killed was evicted after 45 s without a "
    "heartbeat (session timeout); 1 partition moved; 1.1 s"),
    "      members after: m1, m3-slow",
]


@pytest.fixture(scope="module")
def short_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """240 s, as the report test: the story's times above are for that length."""
    from groupcoord.analytics.fixture.generate import generate
    from groupcoord.analytics.fixture.spec import FixtureSpec

    root = tmp_path_factory.mktemp("why-fixture")
    generate(root, FixtureSpec(seconds=240))
    return root


def test_every_rebalance_with_its_cause(short_fixture: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["why", "story", "--data-dir", str(short_fixture)]) == 0
    assert capsys.readouterr().out.splitlines() == STORY


def test_around_a_time(short_fixture: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 22:15:30: m4-killed is dead (since 22:15:20) but not yet evicted
    assert main(["why", "story", "--data-dir", str(short_fixture), "--at",
                 "2023-11-14T22:15:30", "--window", "30s"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("group story (classic protocol): 6 rebalances; around "
                        "2023-11-14 22:15:30.000 UTC (within 30 s):")
    assert lines[1] == ">" + STORY[9][1:]  # generation 5, in force at that time
    assert lines[3] == STORY[11]  # the eviction after it
    assert lines[-1] == "> = the last rebalance before that time"
    # inside the eviction's rebalance (epoch ms accepted too)
    assert main(["why", "story", "--data-dir", str(short_fixture), "--at",
                 str(T0 + 165_500), "--window", "1s"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [x for x in lines if x.startswith("> generation")] == [">" + STORY[11][1:]]
    assert lines[-1] == "> = in progress at that time"


def test_kip848_group_and_unknown_group(short_fixture: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["why", "cg-rebal", "--data-dir", str(short_fixture)]) == 0
    out = capsys.readouterr().out
    assert "epoch 2 at 2023-11-14 22:14:48.000: cg-rebal-m3 joined; 2 partitions moved; 8.0 s" \
        in out
    assert main(["why", "no-such-group", "--data-dir", str(short_fixture)]) == 1
    assert capsys.readouterr().out.strip() == "group no-such-group: no rebalances found"


def test_reads_only_the_groups_coordinator_partition(short_fixture: Path) -> None:
    h = why.from_data_dir(str(short_fixture), "churn")
    assert {r["group_id"] for r in h.rebalances} == {"churn"}
    assert [r["to_epoch"] for r in h.rebalances] == [1, 2]


@pytest.mark.parametrize(("ms", "text"), [(None, "unknown"), (0, "0 ms"), (850, "850 ms"),
                                          (1_049, "1.0 s"), (1_100, "1.1 s"), (45_000, "45 s"),
                                          (303_000, "5 min 3 s"), (7_200_000, "2 h")])
def test_durations(ms: int | None, text: str) -> None:
    assert story.fmt_seconds(ms) == text


def test_member_names_and_numbers() -> None:
    assert story.short_member("m4-killed-5f19dbef-2308-599d-b440-710838795559") == "m4-killed"
    assert story.short_member("consumer-1") == "consumer-1"
    assert story.fmt_int(1234567.4) == "1,234,567"
    assert story.fmt_signed(-380) == "-380" and story.fmt_signed(2.25, 1) == "+2.2"


def test_health_line_names_the_slow_member() -> None:
    ps = [story.PartitionHealth("t", 0, "OK", "a-1"),
          story.PartitionHealth("t", 3, "WARN", "m3-slow-5f19dbef-2308-599d-b440-710838795559"),
          story.PartitionHealth("t", 1, "STOP", "b"), story.PartitionHealth("t", 2, "STOP", "c")]
    assert story.health_line("ERR", ps) == (
        "ERR: t partitions 1, 2 are stopped (Burrow STOP: no commit while records kept "
        "arriving), owned by b, c; t partition 3 is slow (Burrow WARN: lag grew at every "
        "commit of the window), owned by m3-slow")
    assert story.health_line("OK", ps[:1]) == "OK: all 1 partition committing and keeping up"


def test_lag_line_trend_in_records_and_seconds() -> None:
    pts = [story.LagPoint(T0 + i * 60_000, 100 * i, 2.0 * i) for i in range(11)]
    assert story.lag_line(None, ("t", 3, 600), pts, 600_000) == (
        "lag now 1,000 records, 20.0 s behind (worst: t partition 3, 600 records); trend over "
        "the last 3 min: +300 records (+1.7 records/s), +6.0 s")
    assert story.lag_line(7, None, [], 1_000) == "lag now 7 records; no trend (a single sample)"


def test_rebalance_without_events_says_so() -> None:
    r = {"group_id": "g", "group_type": "classic", "to_epoch": 3, "joined": ["x"],
         "left": ["y"], "causes": [], "partitions_moved": 2, "duration_ms": None,
         "end_ts_ms": T0, "start_ts_ms": None, "estimated": True, "members_after": 1}
    assert story.rebalance_sentence(r, {}) == (
        "x joined; y left (no group event says why); 2 partitions moved; duration unknown "
        "(no rebalance start recorded)")
