"""``analyze health`` without Spark, on fixture logs with known stories: the demo's story
ending with its last members closing (abandoned, STOP), a slow consumer (WARN), a rebalance
storm, partitions no member owns (silent non-assignment), a streams and a share group; and
the findings' rules on hand-made inputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groupcoord.analytics.driver.cli import main
from groupcoord.analytics.driver.health_data import load, window
from groupcoord.analytics.fixture import scenarios as fs
from groupcoord.analytics.fixture import story_group
from groupcoord.analytics.fixture.generate import SCENARIO_ANOMALIES, generate
from groupcoord.analytics.fixture.spec import ANOMALIES, FixtureSpec
from groupcoord.analytics.report import health
from groupcoord.analytics.report.story import LagPoint


@pytest.fixture(scope="module")
def scenario_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("health-fixture")
    generate(root, FixtureSpec(seconds=240, anomalies=ANOMALIES + SCENARIO_ANOMALIES,
                               story_closes=True))
    return root


@pytest.fixture(scope="module")
def verdicts(scenario_dir: Path) -> dict[str, health.GroupHealth]:
    return {h.group: h for h in health.evaluate(load(str(scenario_dir)))}


def test_the_window_runs_to_the_last_record_of_any_kind(scenario_dir: Path) -> None:
    manifest = json.loads((scenario_dir / "manifest.json").read_text())
    inputs = load(str(scenario_dir))
    assert inputs.end_ms == manifest["end_ms"]  # the last data append, after the last commit
    assert inputs.start_ms == manifest["t0_ms"]


def test_abandoned_story_group_is_stop(verdicts: dict[str, health.GroupHealth]) -> None:
    h = verdicts[story_group.GROUP]
    assert h.status == "ERR" and h.members == []
    assert {p.partition: p.status for p in h.partitions} == dict.fromkeys(range(4), "STOP")
    slow = next(p for p in h.partitions if p.partition == story_group.SLOW_PARTITION)
    assert slow.burrow == "WARN" and slow.owner and slow.owner.startswith("m3-slow")
    assert h.lag == sum(p.lag for p in h.partitions) and h.member_lag["m3-slow"] == slow.lag
    sentence = health.health_sentence(h)
    assert sentence.startswith("ERR: abandoned: the group has been empty since "), sentence
    assert "wait on t-story partitions 0, 1, 2, 3, last owned by m1, m3-slow" in sentence


def test_slow_consumer_is_warn(verdicts: dict[str, health.GroupHealth]) -> None:
    h = verdicts["slowpoke"]
    assert h.status == "WARN"
    assert health.health_sentence(h).startswith(
        "WARN: t-slowpoke partitions 0, 1, 2, 3 are slow (Burrow WARN")


def test_rebalance_storm_names_the_churning_member(
        verdicts: dict[str, health.GroupHealth]) -> None:
    h = verdicts[fs.STORM]
    assert h.status == "WARN"
    (storm,) = h.findings
    assert storm.startswith(f"rebalance storm: {2 * fs.FLAPS} rebalances in 42 s from "), storm
    assert f"storm-flappy joined {fs.FLAPS} times and left {fs.FLAPS}" in storm
    assert fs.FLAP_REASON in storm and "storm-steady" not in storm
    # the demo-like story (members joining one by one, one leave, one eviction) is no storm
    assert not any("storm" in f for f in verdicts[story_group.GROUP].findings)


def test_silent_non_assignment_names_partitions_and_members(
        verdicts: dict[str, health.GroupHealth]) -> None:
    h = verdicts[fs.ORPHAN]
    assert h.status == "ERR" and h.members == ["orphan-a", "orphan-b"]
    statuses = {p.partition: p.status for p in h.partitions}
    assert statuses == {0: "OK", 1: "OK", 2: "OK", 3: "STOP", 4: "STOP", 5: "STOP"}
    (finding,) = h.findings
    assert finding.startswith("silent non-assignment: t-orphan partitions 3, 4, 5 have had no "
                              "owner since "), finding
    assert "although the group has members (orphan-a, orphan-b)" in finding
    assert finding.endswith("wait and nobody commits; last owned by orphan-b")
    assert "orphan-b" not in h.member_lag or h.member_lag["orphan-b"] < 100  # not its lag


def test_every_group_kind_gets_a_verdict(verdicts: dict[str, health.GroupHealth]) -> None:
    assert verdicts[fs.STREAMS].kind == "streams" and verdicts[fs.STREAMS].status == "OK"
    assert verdicts["cg-rebal"].kind == "consumer"
    share = verdicts["share-a"]
    assert share.kind == "share" and share.lag > 0
    assert health.health_sentence(share) == ("OK: 50 records not yet acknowledged on "
                                             "1 share partition")


def test_health_command_words_and_json(scenario_dir: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["health", "--data-dir", str(scenario_dir)]) == 1  # not every group is OK
    text = capsys.readouterr().out
    assert "storm (classic): WARN: rebalance storm:" in text
    assert "orphan (classic): ERR: silent non-assignment: t-orphan partitions 3, 4, 5" in text
    assert "story (classic): ERR: abandoned:" in text
    assert main(["health", "--data-dir", str(scenario_dir), "--json"]) == 1
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    by = {g["group"]: g for g in doc["groups"]}
    assert by["story"]["status"] == "ERR" and by["story"]["member_lag"]["m3-slow"] > 0
    assert by["orphan"]["findings"][0].startswith("silent non-assignment")


@pytest.mark.parametrize("cmd", [["run", "--out", "OUT"], ["why", "g"], ["dump"], ["health"]])
def test_missing_or_empty_dir_is_one_line(cmd: list[str], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    args = [a.replace("OUT", str(tmp_path / "out")) for a in cmd]
    assert main([*args, "--data-dir", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"groupcoord analyze {cmd[0]}: {tmp_path / 'missing'}: no such directory"
    (tmp_path / "empty").mkdir(exist_ok=True)
    assert main([*args, "--data-dir", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"groupcoord analyze {cmd[0]}: {tmp_path / 'empty'}: no Kafka log "
                          "partitions in it")
    assert "\n" not in err and not (tmp_path / "out").exists()


def _inputs(series: list[tuple[int, int, int]], lag: int) -> health.HealthInputs:
    key = ("g", "t", 0)
    return health.HealthInputs(
        0, 100_000, {key: {"status": "OK", "current_lag": lag}}, {"g": []}, [], [], {}, {},
        partition_series={key: series})


def test_falling_behind_needs_lag_growing_faster_than_a_tenth_of_the_appends() -> None:
    # 1,000 records appended over the last quarter, lag grew 0 -> 300: falling behind
    (h,) = health.evaluate(_inputs([(70_000, 0, 1_000), (100_000, 300, 2_000)], 300))
    assert h.status == "WARN" and h.partitions[0].why.startswith(
        "falling behind (lag grew by 300 records in the last 30 s while 1,000 were appended")
    # the same appends with the lag growing by 50 (a consumer at 95 % of the pace): OK
    (h,) = health.evaluate(_inputs([(70_000, 0, 1_000), (100_000, 50, 2_000)], 50))
    assert h.status == "OK"


def test_the_lag_series_ends_at_the_final_evaluation() -> None:
    pts = [LagPoint(10_000, 5, 1.0), LagPoint(20_000, 9, 2.0)]
    assert health.with_end_point(pts, 12, 25_000, 3.5)[-1] == LagPoint(25_000, 12, 3.5)
    assert health.with_end_point(pts, 12, 20_000, 3.5) == [pts[0], LagPoint(20_000, 12, 3.5)]


def test_the_window_takes_the_latest_record_of_any_kind() -> None:
    """Commits that stopped early do not end the analysed range: a later group event does."""
    assert window((1_000, 6_400), [2_000, 240_000, None]) == (1_000, 240_000)
    assert window((1_000, 6_400), [240_000], until_ms=100_000) == (1_000, 100_000)
    assert window((None, None), [5, 9]) == (5, 9)
