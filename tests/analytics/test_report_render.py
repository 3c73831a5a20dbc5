"""``report.html`` as a person sees it: opened in headless Chromium, every plot must render.

The pipeline runs once over a short synthetic fixture. Chromium is driven from its command
line only (no WebDriver): one run loads a copy of the report with a small script appended
that, on ``load``, writes every image's load status and the page size into the DOM, which
``--dump-dom`` prints; a second run takes a full-page screenshot of the report itself, kept
as ``test-artifacts/report-render/report.png`` for a person to look at.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers.broker import REPO_ROOT

from groupcoord.analytics.fixture import FixtureSpec, generate

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ARTIFACTS = REPO_ROOT / "test-artifacts" / "report-render"
WINDOW_WIDTH = 1280
MAX_HEIGHT = 20_000  # Chromium's screenshot surface has limits; the report is far shorter
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                  "--virtual-time-budget=10000"]
# Appended to a copy of the report: records what the browser made of every <img>.
PROBE = """<script>
window.addEventListener('load', () => {
  const d = document.documentElement;
  const out = {images: [...document.images].map(i => ({alt: i.alt, complete: i.complete,
               width: i.naturalWidth, height: i.naturalHeight, shown: i.clientWidth})),
               scrollWidth: d.scrollWidth, scrollHeight: d.scrollHeight};
  const pre = document.createElement('pre');
  pre.id = 'render-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("headless Chromium is not installed (make browser)")


def _run_chromium(args: list[str], profile: Path) -> str:
    cmd = [_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args]
    done = subprocess.run(cmd, check=False, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def report(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from groupcoord.analytics.pipeline import RunConfig
    from groupcoord.analytics.run import run

    root = tmp_path_factory.mktemp("render-fixture")
    generate(root, FixtureSpec(seconds=240))
    out = tmp_path_factory.mktemp("render-out")
    run(spark, RunConfig(str(root), str(out)), lambda _line: None)
    return out / "report.html"


@pytest.fixture(scope="module")
def probe(report: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("chromium")
    page = tmp / "probe.html"
    page.write_text(report.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
                    encoding="utf-8")
    dom = _run_chromium([f"--window-size={WINDOW_WIDTH},900", "--dump-dom", page.as_uri()],
                        tmp / "profile-probe")
    found = re.search(r'<pre id="render-probe">(.*?)</pre>', dom, re.DOTALL)
    assert found, f"the probe did not run; DOM tail:\n{dom[-2000:]}"
    return dict(json.loads(html.unescape(found.group(1))))


def test_every_plot_renders(report: Path, probe: dict[str, Any]) -> None:
    plots = sorted(p.stem for p in (report.parent / "plots").glob("*.png"))
    images = probe["images"]
    assert plots and sorted(i["alt"] for i in images) == plots
    broken = [i for i in images if not i["complete"] or i["width"] <= 0 or i["height"] <= 0]
    assert not broken, broken
    assert all(i["shown"] > 0 for i in images)


def test_page_fits_the_window_width(probe: dict[str, Any]) -> None:
    """Nothing (a wide table, a plot) pushes the page into horizontal scrolling."""
    assert probe["scrollWidth"] <= WINDOW_WIDTH, probe["scrollWidth"]
    assert all(i["shown"] <= WINDOW_WIDTH for i in probe["images"])


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_full_page_screenshot_is_kept(report: Path, probe: dict[str, Any],
                                      tmp_path: Path) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report.png"
    shot.unlink(missing_ok=True)
    height = min(int(probe["scrollHeight"]), MAX_HEIGHT)
    _run_chromium([f"--window-size={WINDOW_WIDTH},{height}", f"--screenshot={shot}",
                   report.as_uri()], tmp_path / "profile-shot")
    assert _png_size(shot) == (WINDOW_WIDTH, height)
    # a blank page compresses to almost nothing; six plots and tables do not
    assert shot.stat().st_size > 100_000
