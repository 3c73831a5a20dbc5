"""Burrow's own evaluator cases, as data, against our port of its rules.

``burrow_cases.json`` holds the 16 cases of Burrow's ``TestCachingEvaluator_CheckRules``
(``core/internal/evaluator/caching_test.go``): each window of commits, the recent broker
offsets, the current lag, the evaluation time and the allowed lag, with what every rule
function and ``calculatePartitionStatus`` return. Each case runs here as one test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groupcoord.analytics.gold import burrow
from groupcoord.analytics.gold.burrow import Commit, Status

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "burrow_cases.json").read_text())["cases"]


def _window(case: dict[str, Any]) -> list[Commit]:
    return [Commit(c["offset"], c["timestamp_ms"], c["lag"]) for c in case["commits"]]


@pytest.mark.parametrize("case", CASES, ids=[f"burrow-{i}" for i in range(len(CASES))])
def test_burrow_rule_table(case: dict[str, Any]) -> None:
    w, expect = _window(case), case["expect"]
    now_ms = case["now_s"] * 1000
    got = {
        "lag_always_not_zero": burrow.lag_always_not_zero(w, case["allowed_lag"]),
        "rewind_index": burrow.rewind_index(w),
        "offsets_stopped": burrow.offsets_stopped(w, now_ms),
        "offsets_stalled": burrow.offsets_stalled(w),
        "lag_not_decreasing": burrow.lag_not_decreasing(w),
        "recent_lag_zero": burrow.recent_lag_zero(w, case["broker_offsets"]),
        "status": burrow.partition_status(w, case["broker_offsets"], case["current_lag"],
                                          now_ms, case["allowed_lag"]).name,
    }
    assert got == expect


def test_the_table_covers_every_status_the_rules_give() -> None:
    assert {c["expect"]["status"] for c in CASES} == {"OK", "STOP", "STALL", "REWIND"}
    assert len(CASES) == 16


def test_evaluate_partition_applies_the_same_rules() -> None:
    """The pipeline's entry point (window, end offset, recent end offsets) gives Burrow's
    status for each case whose current lag is the end offset minus the last commit."""
    checked = 0
    for case in CASES:
        w = _window(case)
        end = w[-1].offset + case["current_lag"]
        if case["broker_offsets"][-1] != end:
            continue
        cfg = burrow.BurrowConfig(intervals=len(w), allowed_lag=case["allowed_lag"])
        got = burrow.evaluate_partition(w, end, case["broker_offsets"], case["now_s"] * 1000, cfg)
        assert got.status is Status[case["expect"]["status"]], case
        checked += 1
    assert checked >= 10
