"""``analyze health`` on a log dir whose records span years (a broker on a manual clock at its
default epoch beside producers writing real timestamps, or a group with one very old commit):
the lag grid it builds is bounded by the trend window, not by the span, and the verdicts read
it as they read a grid over the whole span."""

from __future__ import annotations

from pathlib import Path

from groupcoord.analytics.driver.health_data import load, trend_grid_from
from groupcoord.analytics.fixture import records as fr
from groupcoord.analytics.fixture.generate import T0, coordinator_partition, topic_id_for
from groupcoord.analytics.fixture.logwriter import LogWriters
from groupcoord.analytics.report import health, story

YEAR_MS = 365 * 86_400_000
GRID_MS = 10_000


def _long_span_dir(root: Path, years: int) -> None:
    """Group ``old`` committed once ``years`` before the minute of data group ``g`` follows."""
    writers = LogWriters(root)
    coord = fr.CoordinatorLog(lambda g: coordinator_partition(g, 2), 2)
    data = writers.get("t", 0, topic_id_for("t"))
    old = T0 - years * YEAR_MS
    data.append([(None, b"old", old)])
    coord.commit("old", "t", {0: 1}, old)
    for s in range(60):
        data.append([(None, b"v", T0 + s * 1000)] * 10)
        coord.commit("g", "t", {0: 1 + 10 * s}, T0 + s * 1000)
    coord.flush(writers)
    writers.close()


def test_a_three_year_span_builds_a_grid_bounded_by_the_trend_window(tmp_path: Path) -> None:
    _long_span_dir(tmp_path, 3)
    inputs = load(str(tmp_path), grid_ms=GRID_MS)
    assert inputs.end_ms - inputs.start_ms > 3 * YEAR_MS - 1
    bound = story.trend_window_ms(inputs.end_ms - inputs.start_ms) // GRID_MS + 2
    assert set(inputs.partition_series) == {("old", "t", 0), ("g", "t", 0)}
    for pts in (*inputs.partition_series.values(), *inputs.series.values()):
        assert 0 < len(pts) <= bound
    # the old group's series still reaches back to the start of the trend window
    old = inputs.partition_series[("old", "t", 0)]
    assert old[0][0] <= inputs.end_ms - story.trend_window_ms(inputs.end_ms - inputs.start_ms)
    verdicts = {h.group: h for h in health.evaluate(inputs)}
    assert verdicts["old"].lag == 600 and verdicts["g"].lag == 10


def test_the_grid_starts_at_the_last_grid_point_before_the_trend_window() -> None:
    # a 20-minute span: the trend looks back 5 minutes from 1,200,000, to 900,000
    assert trend_grid_from(0, 1_200_000, GRID_MS) == 900_000
    assert trend_grid_from(0, 1_205_000, GRID_MS) == 900_000
    # a 40-second span: a quarter of it, 10 s, back from 40 s
    assert trend_grid_from(0, 40_000, GRID_MS) == 30_000
