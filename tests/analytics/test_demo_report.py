"""`groupcoord demo`'s own workload, then its report as a person sees it in Chromium.

The demo runs as a user runs it (`python -m groupcoord demo`), with 3 s between membership
changes instead of 10 (about 30 s of workload instead of 75) and `--no-analytics`; the
pipeline then runs in this process's Spark session with the options the demo gives
`analyze run` (`demo.ANALYTICS_OPTIONS`). From the rendered report: every partition
m3-slow owned at the end was WARN (or ERR) while its lag grew and is STOP at the end (the
group was left empty), and the card, the group table, the stuck table, `summary.json` and
the demo's own closing table (OffsetFetch and ListOffsets) give the same lag.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest
from helpers.chromium import dump_probe

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.interop]

pytest.importorskip("confluent_kafka")
pytest.importorskip("kafka")

GROUP = "demo-group"
TOPIC = "demo-orders"
# The cards, the groups and stuck tables, and each partition's lanes in the status chart.
PROBE = """<script>
window.addEventListener('load', () => {
  const q = s => [...document.querySelectorAll(s)];
  const table = id => {
    const heads = q('#' + id + ' thead th').map(h => h.textContent);
    return q('#' + id + ' tbody tr').map(tr => Object.fromEntries([...tr.cells].map((c, i) =>
      [heads[i], c.dataset.v !== undefined ? Number(c.dataset.v) : c.textContent])));
  };
  const out = {cards: Object.fromEntries(q('.group').map(g => [g.dataset.group,
      Object.fromEntries([...g.querySelectorAll('li')].map(li => [li.className,
        li.textContent.replace(/^\\S+( rebalance)? /, '')]))])),
    groups: table('tbl-groups'), stuck: table('tbl-stuck'), lanes: {}};
  const psel = document.getElementById('f-part');
  for (const part of [...psel.options].map(o => o.value).filter(v => v)) {
    psel.value = part; psel.dispatchEvent(new Event('change'));
    out.lanes[part] = q('#chart-status rect.series').map(e => e.dataset.name);
  }
  const pre = document.createElement('pre');
  pre.id = 'render-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _closing_table(stdout: str) -> dict[int, int]:
    """{partition: lag} from the demo's `partition committed end offset lag` table."""
    rows = re.findall(r"^\s+(\d+)\s+(-?\d+)\s+(\d+)\s+(\d+)$", stdout, re.MULTILINE)
    return {int(p): int(lag) for p, _committed, _end, lag in rows}


@pytest.fixture(scope="module")
def demo(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from groupcoord.analytics.driver.cli import run_config
    from groupcoord.analytics.driver.run import run
    from groupcoord.cli.demo import ANALYTICS_OPTIONS

    out = tmp_path_factory.mktemp("demo")
    done = subprocess.run([sys.executable, "-m", "groupcoord", "demo", "--out-dir", str(out),
                           "--step", "3", "--no-analytics"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    analytics = out / "analytics"
    run(spark, run_config(["--data-dir", str(out / "data"), "--out", str(analytics),
                           *ANALYTICS_OPTIONS]), lambda _line: None)
    summary = json.loads((analytics / "summary.json").read_text())
    probe = dump_probe(analytics / "report.html", PROBE, tmp_path_factory.mktemp("chromium"))
    return {"stdout": done.stdout, "summary": summary, "probe": probe}


def _slow_partitions(summary: dict[str, Any]) -> list[int]:
    return sorted(p["partition"] for p in summary["groups"][GROUP]["partition_detail"]
                  if (p["owner"] or "").startswith("m3-slow-"))


def test_slow_members_partitions_warn_while_lag_grows_then_stop(demo: dict[str, Any]) -> None:
    slow = _slow_partitions(demo["summary"])
    assert slow, demo["summary"]["groups"][GROUP]["partition_detail"]
    lanes = demo["probe"]["lanes"]
    for p in slow:
        statuses = lanes[f"{TOPIC}-{p}"]
        assert statuses[-1] == "STOP", (p, statuses)
        assert {"WARN", "ERR"} & set(statuses[:-1]), (p, statuses)
    card = demo["probe"]["cards"][GROUP]["health"]
    assert card.startswith("ERR: abandoned: the group has been empty since "), card
    assert "m3-slow" in card.split(", last owned by ")[1], card
    stuck = {r["partition"]: r for r in demo["probe"]["stuck"] if r["group"] == GROUP}
    assert all(stuck[p]["status"] == "STOP" and stuck[p]["member"] == "m3-slow"
               for p in slow), stuck


def test_the_same_lag_in_card_tables_summary_and_the_demos_own_table(
        demo: dict[str, Any]) -> None:
    probe, summary = demo["probe"], demo["summary"]
    card = probe["cards"][GROUP]["lag"]
    lag = int(re.match(r"lag now ([\d,]+) record", card).group(1).replace(",", ""))  # type: ignore[union-attr]
    (row,) = [r for r in probe["groups"] if r["group"] == GROUP]
    assert lag > 0 and row["lag (records)"] == lag == summary["groups"][GROUP]["lag"]
    per_partition = {p["partition"]: p["lag"] for p in summary["groups"][GROUP]["partition_detail"]}
    stuck = {r["partition"]: r["lag"] for r in probe["stuck"] if r["group"] == GROUP}
    assert stuck == {p: n for p, n in per_partition.items() if n > 0}
    assert _closing_table(demo["stdout"]) == per_partition  # what the broker answered
    assert sum(per_partition.values()) == lag
    assert summary["groups"][GROUP]["member_lag"]["m3-slow"] == sum(
        per_partition[p] for p in _slow_partitions(summary))
