"""Checks of the interop machinery itself; no broker needed.

The Java harness and `helpers.workload` must generate identical records, otherwise a Java
round trip would be judged against the wrong expectations; and the harness must fail
cleanly, with a JSON error, when it cannot reach a broker.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from helpers.broker import free_port
from helpers.java import run_harness
from helpers.workload import Workload

pytestmark = pytest.mark.interop


@pytest.mark.timeout(60)
def test_java_workload_matches_python(java_harness: Path) -> None:
    workload = Workload("parity-topic", count=2000, base_ts=1_700_000_000_000)
    run = run_harness("print-workload", "unused:0", "--topic", workload.topic,
                      "--count", str(workload.count), "--base-ts", str(workload.base_ts))
    lines = run.of("workload")
    assert [line["seq"] for line in lines] == list(range(workload.count))
    for line in lines:
        i = line["seq"]
        assert base64.b64decode(line["key"]) == workload.key(i)
        assert base64.b64decode(line["value"]) == workload.value(i)
        assert [(k, base64.b64decode(v)) for k, v in line["headers"]] == workload.headers(i)
        assert line["timestamp"] == workload.timestamp(i)


@pytest.mark.timeout(60)
def test_java_harness_reports_unreachable_broker(java_harness: Path) -> None:
    nobody = f"127.0.0.1:{free_port()}"
    run = run_harness("create-topic", nobody, "--topic", "t", "--partitions", "1",
                      "--prop", "default.api.timeout.ms=2000", "--prop", "request.timeout.ms=1000",
                      expect=(1,))
    assert run.of("error"), run.events
