"""``page.write`` without Spark: one page per group past the index's limit, safe names,
escaping, and the chart data each page carries."""

from __future__ import annotations

import json
import re
from pathlib import Path

from groupcoord.analytics.report import page as report_page
from groupcoord.analytics.report.page import ChartData, GroupView

T0 = 1_700_000_000_000


def _data(page: Path) -> dict[str, object]:
    text = page.read_text(encoding="utf-8")
    found = re.search(r"<script type='application/json' id='report-data'>(.*?)</script>", text,
                      re.DOTALL)
    assert found, page
    return dict(json.loads(found.group(1)))


def _setup(groups: list[str]) -> tuple[list[GroupView], ChartData, list[report_page.Table]]:
    views = [GroupView(g, "OK", "classic", f"OK: {g} health", f"lag now {i} records",
                       "none in the analysed range") for i, g in enumerate(groups)]
    lag = [{"g": g, "t": "t", "p": 0, "name": f"{g} t-0", "pts": [[T0, 1, 0.5]]} for g in groups]
    owners = [{"g": g, "t": "t", "p": 0, "m": "m1", "s": T0, "e": T0 + 1000} for g in groups]
    tables = report_page.standard_tables([{"group": g, "status": "OK"} for g in groups], [], [], [])
    return views, ChartData(T0, T0 + 60_000, lag=lag, owners=owners), tables


def test_one_page_per_group_when_there_are_many(tmp_path: Path) -> None:
    groups = [f"g{i:02d}" for i in range(15)] + ["odd/name <x>"]
    views, data, tables = _setup(groups)
    pages = report_page.write(tmp_path, "t", "meta", views, data, tables, [], 12, 200)
    assert len(pages) == 1 + len(groups)
    index = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "16 groups: the charts show the 12 worst" in index
    assert {r["g"] for r in _data(tmp_path / "report.html")["lag"]} == set(groups[:12])
    for g in groups:
        name = report_page.page_name(g)
        assert f"href='{name}'" in index
        page = tmp_path / name
        assert {r["g"] for r in _data(page)["lag"]} == {g}
        assert page.read_text(encoding="utf-8").count("class='group ") == 1
    odd = report_page.page_name("odd/name <x>")
    assert re.fullmatch(r"groups/odd_name__x_-[0-9a-f]{8}\.html", odd)
    assert "odd/name &lt;x&gt;" in index and "<x>" not in index


def test_few_groups_make_one_page_and_data_cannot_close_the_script(tmp_path: Path) -> None:
    views, data, tables = _setup(["a", "b"])
    data.lag[0]["name"] = "</script><b>"
    pages = report_page.write(tmp_path, "t", "meta", views, data, tables, [], 12, 200)
    assert pages == [tmp_path / "report.html"] and not (tmp_path / "groups").exists()
    text = pages[0].read_text(encoding="utf-8")
    assert text.count("</script>") == 2  # the data block and the script, nothing injected
    assert _data(pages[0])["lag"][0]["name"] == "</script><b>"  # type: ignore[index]
