"""Headless Chromium driven from its command line (no WebDriver), for the report tests.

`dump_probe(page, script, tmp)` loads a copy of `page` with `script` appended before
`</body>`; the script writes what it saw as JSON into `<pre id="render-probe">`, which
`--dump-dom` prints and this returns, parsed.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

WINDOW_WIDTH = 1280
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=10000"]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("headless Chromium is not installed (make browser)")


def run_chromium(args: list[str], profile: Path) -> str:
    cmd = [chromium(), *FLAGS, f"--user-data-dir={profile}", *args]
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def dump_probe(page: Path, script: str, tmp: Path) -> dict[str, Any]:
    probe = tmp / "probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", script + "</body>"),
                     encoding="utf-8")
    dom = run_chromium([f"--window-size={WINDOW_WIDTH},900", "--dump-dom", probe.as_uri()],
                       tmp / "profile-probe")
    found = re.search(r'<pre id="render-probe">(.*?)</pre>', dom, re.DOTALL)
    assert found, f"the probe did not run; DOM tail:\n{dom[-2000:]}"
    return dict(json.loads(html.unescape(found.group(1))))
