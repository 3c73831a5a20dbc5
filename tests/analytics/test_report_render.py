"""``report.html`` as a person sees it, in headless Chromium.

The pipeline runs once over a short synthetic fixture whose ``story`` group replays the
demo's script (``fixture.story_group``: m1, m2, m3-slow and m4-killed join, m2 leaves with a KIP-800
reason, m4-killed is evicted by its session timeout, m3-slow falls behind). Chromium is driven
from its command line only (no WebDriver):

- one run loads a copy of the report with a probe script appended that, after ``load``,
  reads the summary lines, counts the series every chart drew, then works the page as a
  person would (changes the group and partition selects, zooms, hovers a rebalance, sorts
  a table) and writes what it saw into the DOM, which ``--dump-dom`` prints;
- then one screenshot per section (every other section hidden), kept in
  ``test-artifacts/report-render/`` for a person to look at.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

import pytest
from helpers.broker import REPO_ROOT
from helpers.chromium import WINDOW_WIDTH, dump_probe, run_chromium

from groupcoord.analytics.fixture import scenarios, story_group
from groupcoord.analytics.fixture.generate import SCENARIO_ANOMALIES, generate
from groupcoord.analytics.fixture.spec import ANOMALIES, FixtureSpec

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ARTIFACTS = REPO_ROOT / "test-artifacts" / "report-render"
MAX_HEIGHT = 12_000  # Chromium's screenshot surface has limits; sections are far shorter
CHARTS = ["chart-lag-records", "chart-lag-seconds", "chart-rebalances", "chart-status",
          "chart-owners", "chart-commits"]
SECTIONS = ["summary", *[f"sec-{c}" for c in CHARTS], "tbl-groups", "tbl-rebalances",
            "tbl-stuck", "tbl-rewinds"]
# Appended to a copy of the report: what the page shows, then how it reacts.
PROBE = """<script>
window.addEventListener('load', () => {
  const d = document.documentElement, q = s => [...document.querySelectorAll(s)];
  const charts = () => Object.fromEntries(__CHARTS__.map(id => [id,
      q('#' + id + ' .series').map(e => ({g: e.dataset.group, p: e.dataset.partition || null}))]));
  const out = {scrollWidth: d.scrollWidth,
    legends: Object.fromEntries(__CHARTS__.map(id => [id,
      q('#' + id + ' .legend-item').map(e => e.dataset.name)])),
    kinds: Object.fromEntries(q('.group').map(g => [g.dataset.group,
      g.querySelector('.kind').textContent])),
    groupTable: Object.fromEntries(q('#tbl-groups tbody tr').map(tr => [tr.cells[0].textContent,
      Number(tr.cells[4].dataset.v)])),
    images: q('img').map(i => ({alt: i.alt, complete: i.complete, width: i.naturalWidth,
                                height: i.naturalHeight, shown: i.clientWidth})),
    sections: Object.fromEntries(__SECTIONS__.map(id => [id,
      document.getElementById(id) ? document.getElementById(id).offsetHeight : -1])),
    groups: Object.fromEntries(q('.group').map(g => [g.dataset.group,
      Object.fromEntries([...g.querySelectorAll('li')].map(li => [li.className,
        li.textContent.replace(/^\\S+( rebalance)? /, '')]))])),
    text: document.body.innerText,
    before: charts()};
  const gsel = document.getElementById('f-group');
  gsel.value = 'story'; gsel.dispatchEvent(new Event('change'));
  out.group = charts();
  out.partOptions = q('#f-part option').map(o => o.value);
  const psel = document.getElementById('f-part');
  psel.value = 't-story-3'; psel.dispatchEvent(new Event('change'));
  out.partition = charts();
  out.slowStatus = q('#chart-status rect.series').map(e => e.dataset.name);
  const range = () => document.getElementById('zoom-range').textContent;
  out.zoomBefore = range();
  const svg = document.querySelector('#chart-lag-records svg'), r = svg.getBoundingClientRect();
  const at = f => ({clientX: r.left + r.width * f, clientY: r.top + r.height / 2, bubbles: true});
  svg.dispatchEvent(new MouseEvent('mousedown', at(0.5)));
  svg.dispatchEvent(new MouseEvent('mousemove', at(0.8)));
  svg.dispatchEvent(new MouseEvent('mouseup', at(0.8)));
  out.zoomAfter = range();
  document.getElementById('zoom-reset').click();
  out.zoomReset = range();
  const bars = q('#chart-rebalances rect.series');
  const last = bars[bars.length - 1], b = last.getBoundingClientRect();
  last.dispatchEvent(new MouseEvent('mousemove', {clientX: b.left + 1, clientY: b.top + 2,
                                                  bubbles: true}));
  const tip = document.querySelector('.tip');
  out.tooltip = {shown: tip.style.display, text: tip.textContent};
  const th = q('#tbl-groups th').find(h => h.textContent === 'lag (records)');
  th.click(); th.click();
  out.sortedLag = q('#tbl-groups tbody tr').map(tr => Number(tr.cells[4].dataset.v));
  const pre = document.createElement('pre');
  pre.id = 'render-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>""".replace("__CHARTS__", json.dumps(CHARTS)).replace("__SECTIONS__", json.dumps(SECTIONS))


@pytest.fixture(scope="module")
def report(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from groupcoord.analytics.driver.pipeline import RunConfig
    from groupcoord.analytics.driver.run import run

    root = tmp_path_factory.mktemp("render-fixture")
    generate(root, FixtureSpec(seconds=240, anomalies=ANOMALIES + SCENARIO_ANOMALIES,
                               story_closes=True))
    out = tmp_path_factory.mktemp("render-out")
    run(spark, RunConfig(str(root), str(out)), lambda _line: None)
    return out / "report.html"


@pytest.fixture(scope="module")
def probe(report: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return dump_probe(report, PROBE, tmp_path_factory.mktemp("chromium"))


def test_story_summary_lines(probe: dict[str, Any]) -> None:
    """The demo's known events, told at the top of the page: the slow member's partition
    was WARN while its lag grew, and the group its last members left is STOP (ERR)."""
    story = probe["groups"][story_group.GROUP]
    assert story["health"].startswith("ERR: abandoned: the group has been empty since "), story
    assert "wait on t-story partitions 0, 1, 2, 3, last owned by m1, m3-slow" in story["health"]
    assert re.search(r"lag now [\d,]+ records, [\d,]+\.\d s behind \(worst: t-story "
                     r"partition 3, [\d,]+ records\); per member: .*m3-slow [\d,]+.*; trend "
                     r"over the last \d+ s: [+-][\d,]+ records \([+-][\d,]+\.\d records/s\)",
                     story["lag"]), story["lag"]
    assert story["rebalance"].startswith("generation 7 at "), story
    assert f'm1 left the group: "{story_group.CLOSE_REASON}"' in story["rebalance"]
    assert story["rebalance"].endswith("the group is now empty"), story
    assert probe["groups"]["stopper"]["health"].startswith(
        "ERR: t-stopper partitions 0, 1, 2, 3 are stopped (Burrow STOP")
    assert probe["groups"]["churn"]["rebalance"].endswith(
        'churn-m1 left the group: "the consumer is being closed"; 2 partitions moved; 3.0 s')


def test_the_same_lag_in_every_section(probe: dict[str, Any], report: Path) -> None:
    """The card, the group table and summary.json give one lag figure per group."""
    summary = json.loads((report.parent / "summary.json").read_text())
    for group, line in probe["groups"].items():
        card = int(re.match(r"lag now ([\d,]+) record", line["lag"]).group(1).replace(",", ""))
        assert card == probe["groupTable"][group] == summary["groups"][group]["lag"], group
    slow = summary["groups"][story_group.GROUP]
    assert slow["member_lag"]["m3-slow"] > 0
    stuck = [p for p in slow["partition_detail"] if p["partition"] == story_group.SLOW_PARTITION]
    assert stuck[0]["status"] == "STOP" and stuck[0]["owner"].startswith("m3-slow")


def test_every_chart_has_a_legend_and_every_group_a_card(probe: dict[str, Any]) -> None:
    for chart in CHARTS:
        assert probe["legends"][chart], chart
    assert "story t-story-3" in probe["legends"]["chart-lag-records"]
    assert "rebalance in a storm" in probe["legends"]["chart-rebalances"]
    assert {"m1", "m3-slow"} <= set(probe["legends"]["chart-owners"])
    assert set(probe["kinds"]) == set(probe["groupTable"])
    assert probe["kinds"]["cg-rebal"] == "consumer group"
    assert probe["kinds"][story_group.GROUP] == "classic group"
    assert probe["kinds"][scenarios.STREAMS] == "streams group"
    assert probe["kinds"]["share-a"] == "share group"
    assert probe["groups"]["share-a"]["health"] == ("OK: 50 records not yet acknowledged on "
                                                    "1 share partition")


def test_slow_partition_is_warn_while_its_lag_grows_then_stop(probe: dict[str, Any]) -> None:
    """m3-slow's partition over time: WARN while its lag grows, STOP when the group is left
    empty."""
    statuses = probe["slowStatus"]
    assert statuses[-1] == "STOP", statuses
    assert "WARN" in statuses[:-1] and "OK" not in statuses[statuses.index("WARN"):], statuses


def test_storm_and_silent_non_assignment_in_words(probe: dict[str, Any]) -> None:
    storm = probe["groups"][scenarios.STORM]["health"]
    assert storm.startswith("WARN: rebalance storm: 8 rebalances in 42 s from "), storm
    assert "storm-flappy joined 4 times and left 4" in storm
    orphan = probe["groups"][scenarios.ORPHAN]["health"]
    assert orphan.startswith("ERR: silent non-assignment: t-orphan partitions 3, 4, 5 have had "
                             "no owner since "), orphan
    assert "although the group has members (orphan-a, orphan-b)" in orphan


def test_rebalance_table_tells_joins_and_leaves(probe: dict[str, Any]) -> None:
    text = probe["text"]
    assert "m1 joined; 4 partitions moved; 300 ms" in text
    assert f'm2 left the group: "{story_group.LEAVE_REASON}"; 1 partition moved; 600 ms' in text


def test_numbers_are_formatted(probe: dict[str, Any]) -> None:
    text = probe["text"]
    assert not re.search(r"\d\.\d{4,}", text), "a raw float"
    assert "{" not in text and "'" not in text.replace("’", ""), "a Python dict or list"
    assert "-:" not in text and "None" not in text and "nan" not in text.lower().split()


def test_charts_respond_to_the_filters(probe: dict[str, Any]) -> None:
    before, group, part = probe["before"], probe["group"], probe["partition"]
    for chart in CHARTS:
        assert before[chart], chart
        assert {s["g"] for s in before[chart]} > {story_group.GROUP}, chart
        assert group[chart] and {s["g"] for s in group[chart]} == {story_group.GROUP}, chart
    assert probe["partOptions"] == ["", "t-story-0", "t-story-1", "t-story-2", "t-story-3"]
    for chart in ("chart-lag-records", "chart-lag-seconds"):
        assert part[chart] == [{"g": story_group.GROUP, "p": "t-story-3"}], chart
    assert {s["p"] for s in part["chart-owners"]} == {"t-story-3"}
    # m3-slow's partition was m1's (generation 1), then m2's (2), then m3-slow's (3 on)
    assert len(part["chart-owners"]) == 3


def test_zoom_hover_and_sort(probe: dict[str, Any]) -> None:
    assert probe["zoomAfter"] != probe["zoomBefore"] == probe["zoomReset"]
    assert probe["tooltip"]["shown"] == "block"
    assert f'm1 left the group: "{story_group.CLOSE_REASON}"' in probe["tooltip"]["text"]
    assert probe["sortedLag"] == sorted(probe["sortedLag"], reverse=True)


def test_no_static_images_and_the_page_fits(probe: dict[str, Any]) -> None:
    assert probe["images"] == []
    assert "Rows:" not in probe["text"]
    assert probe["scrollWidth"] <= WINDOW_WIDTH, probe["scrollWidth"]


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


@pytest.mark.parametrize("section", SECTIONS)
def test_section_screenshot_is_kept(report: Path, probe: dict[str, Any], section: str,
                                    tmp_path: Path) -> None:
    height = probe["sections"][section]
    assert height > 0, section
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"{section}.png"
    shot.unlink(missing_ok=True)
    page = report.parent / f"only-{section}.html"
    only = (f"<style>body>h1,body>p.meta{{display:none}}"
            f"section:not(#{section}):not(:has(#{section})){{display:none}}</style>")
    page.write_text(report.read_text(encoding="utf-8").replace("</head>", only + "</head>"),
                    encoding="utf-8")
    size = min(height + 120, MAX_HEIGHT)
    run_chromium([f"--window-size={WINDOW_WIDTH},{size}", f"--screenshot={shot}",
                   page.as_uri()], tmp_path / "profile-shot")
    assert _png_size(shot) == (WINDOW_WIDTH, size)
    assert shot.stat().st_size > 5_000  # a blank page compresses to almost nothing
