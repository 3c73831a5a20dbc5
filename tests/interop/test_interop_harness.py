"""Checks of the interop machinery itself; no broker needed.

The Java harness and `helpers.workload` must generate identical records, otherwise a Java
round trip would be judged against the wrong expectations; the harness must fail cleanly,
with a JSON error, when it cannot reach a broker; and each client's build must run that
client's jar.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from helpers import java
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


@pytest.mark.timeout(120)
def test_java_harness_runs_the_client_it_names(java_harness: Path, java39_harness: Path) -> None:
    """Each build runs on its own kafka-clients jar; 3.9 has only the common modes."""
    for client in (java.CLIENT_4_4, java.CLIENT_3_9):
        run = run_harness("client-version", "unused:0", client=client)
        assert run.of("client-version") == [{"event": "client-version",
                                              "version": client.version}]
    assert java.DEFAULT_CLIENT is java.CLIENT_4_4
    refused = run_harness("list-groups", "unused:0", client=java.CLIENT_3_9, expect=(64,))
    assert refused.of("usage-error") == [{"event": "usage-error",
                                          "message": "unknown mode list-groups for client 3.9.1"}]
