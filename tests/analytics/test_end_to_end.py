"""End to end: a real consumer group on the broker, then the pipeline on the broker's log dir.

One scripted scenario (the demo's workload with shorter steps): members join one by one, a
kafka-python member leaves with a KIP-800 reason, a librdkafka member is SIGKILLed and
evicted at its session timeout, and a slow member falls behind. The gold tables must tell
that story: one rebalance per membership change with who joined or left and why, and lag
rows that agree with what the clients committed and with the broker's end offsets (read
back with `groupcoord groups offsets --json`, i.e. OffsetFetch and ListOffsets).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.interop]

pytest.importorskip("confluent_kafka")
pytest.importorskip("kafka")

from helpers.broker import BrokerFactory

from groupcoord.cli.demo_workload import (
    LEAVE_REASON,
    Scenario,
    WorkloadResult,
    run_workload,
)

SCENARIO = Scenario(topic="e2e-orders", group="e2e-group", partitions=4, rate=100,
                    step_s=4.0, tail_s=4.0, slow_delay_ms=40.0, session_timeout_ms=6000,
                    progress_s=2.0)


def _create_topic(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(SCENARIO.topic, SCENARIO.partitions, 1)])[
        SCENARIO.topic].result(timeout=30)


def _groups_offsets(bootstrap: str) -> dict[int, dict[str, Any]]:
    """`groupcoord groups offsets --json`: the committed and end offsets, per partition."""
    out = subprocess.run(
        [sys.executable, "-m", "groupcoord", "groups", "--bootstrap-server", bootstrap,
         "offsets", SCENARIO.group, "--json"],
        check=True, capture_output=True, text=True, timeout=60).stdout
    rows = json.loads(out)["partitions"]
    return {int(r["partition"]): r for r in rows if r["topic"] == SCENARIO.topic}


@pytest.fixture(scope="module")
def e2e(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from groupcoord.analytics.driver.pipeline import RunConfig
    from groupcoord.analytics.driver.run import run

    base = tmp_path_factory.mktemp("e2e")
    factory = BrokerFactory(base, ["--group-initial-rebalance-delay-ms", "0"])
    try:
        broker = factory.create()
        _create_topic(broker.bootstrap)
        lines: list[str] = []
        result = run_workload(broker.bootstrap, SCENARIO, lines.append)
        offsets = _groups_offsets(broker.bootstrap)
        assert broker.stop() == 0
        out = base / "analytics"
        summary = run(spark, RunConfig(str(broker.data_dir), str(out), eval_every_ms=5_000),
                      lambda _line: None)
        yield {"result": result, "offsets": offsets, "out": out, "summary": summary,
               "lines": lines, "data_dir": broker.data_dir}
    finally:
        factory.close()


def _table(out: Path, layer: str, name: str) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return pq.read_table(out / layer / name).to_pylist()


def _name(member_id: str, result: WorkloadResult) -> str:
    """librdkafka and kafka-python member ids are `client.id-uuid`; client.id is our name."""
    names = [n for n in result.members if member_id.startswith(n + "-")]
    assert len(names) == 1, member_id
    return names[0]


def _story(rows: list[dict[str, Any]], result: WorkloadResult) -> list[dict[str, Any]]:
    """Each rebalance with member ids replaced by the scenario's names."""
    out = []
    for r in sorted(rows, key=lambda r: r["to_epoch"]):
        reasons = r["reasons"]
        for member_id in set(r["joined"]) | set(r["left"]):
            reasons = [x.replace(member_id, _name(member_id, result)) for x in reasons]
        out.append({"gen": r["to_epoch"], "joined": [_name(m, result) for m in r["joined"]],
                    "left": sorted(_name(m, result) for m in r["left"]), "reasons": reasons,
                    "members": r["members_after"], "duration_ms": r["duration_ms"],
                    "estimated": r["estimated"]})
    return out


def test_rebalances_show_each_membership_change_with_its_reason(e2e: dict[str, Any]) -> None:
    story = _story(_table(e2e["out"], "gold", "rebalances"), e2e["result"])
    changes = [(s["joined"], s["left"]) for s in story]
    assert changes[:6] == [(["m1"], []), (["m2"], []), (["m3-slow"], []), (["m4-killed"], []),
                           ([], ["m2"]), ([], ["m4-killed"])], story
    # the rest is the final close of m1 and m3-slow (one or two generations, by timing)
    assert sorted(m for s in story[6:] for m in s["left"]) == ["m1", "m3-slow"], story
    assert story[-1]["members"] == 0
    assert [s["members"] for s in story[:6]] == [1, 2, 3, 4, 3, 2]
    for s, who in zip(story[:4], ["m1", "m2", "m3-slow", "m4-killed"], strict=True):
        assert f"member_joined: {who}: not provided" in s["reasons"], s
    assert f"member_left: m2: {LEAVE_REASON}" in story[4]["reasons"], story[4]
    assert "member_expired: m4-killed: session timeout" in story[5]["reasons"], story[5]
    # every start comes from a rebalance_started event, so every duration is measured
    assert all(not s["estimated"] and s["duration_ms"] is not None and s["duration_ms"] >= 0
               for s in story), story


def test_eviction_comes_one_session_timeout_after_the_last_heartbeat(e2e: dict[str, Any]
                                                                   ) -> None:
    events = _table(e2e["out"], "silver", "group_events")
    killed = e2e["result"].members["m4-killed"]
    expired = [e for e in events if e["kind"] == "member_expired"]
    assert len(expired) == 1 and expired[0]["member_id"].startswith("m4-killed-")
    last_seen = max(e["ts"] for e in killed.events)  # its last report before the SIGKILL
    waited = expired[0]["timestamp_ms"] - last_seen
    assert SCENARIO.session_timeout_ms - 1500 <= waited <= SCENARIO.session_timeout_ms + 5000


def _commit_rows(out: Path) -> dict[int, list[dict[str, Any]]]:
    rows = [r for r in _table(out, "gold", "partition_lag")
            if r["kind"] == "commit" and r["group_id"] == SCENARIO.group]
    by_p: dict[int, list[dict[str, Any]]] = {}
    for r in sorted(rows, key=lambda r: r["ts_ms"]):
        by_p.setdefault(r["partition"], []).append(r)
    return by_p


def test_lag_table_has_every_commit_the_clients_made(e2e: dict[str, Any]) -> None:
    by_p = _commit_rows(e2e["out"])
    table = {(p, r["committed_offset"]) for p, rows in by_p.items() for r in rows}
    reported = {(p, o) for _name, p, o in e2e["result"].commits()}
    assert reported <= table
    # a commit the broker took but the killed member never reported (SIGKILL mid-commit)
    # is the only kind of extra row allowed: at most one per partition it owned
    extra = table - reported
    assert len(extra) <= SCENARIO.partitions, extra
    for p, rows in by_p.items():
        # each row's lag is the end offset as of the commit minus the committed offset
        assert all(r["lag_records"] == max(r["end_offset"] - r["committed_offset"], 0)
                   for r in rows), p


def test_final_lag_matches_committed_and_end_offsets(e2e: dict[str, Any]) -> None:
    offsets = e2e["offsets"]
    by_p = _commit_rows(e2e["out"])
    assert sorted(by_p) == sorted(offsets) == list(range(SCENARIO.partitions))
    final = {r["partition"]: r for r in _table(e2e["out"], "gold", "burrow_status")
             if r["group_id"] == SCENARIO.group
             and r["eval_ts_ms"] == e2e["summary"]["end_ms"]}
    for p, cli in offsets.items():
        committed = by_p[p][-1]["committed_offset"]  # the table's last commit
        assert committed == int(cli["current_offset"]), p
        end, lag = int(cli["log_end_offset"]), int(cli["lag"])
        assert final[p]["current_lag"] == lag == end - committed, p
    assert sum(int(c["log_end_offset"]) for c in offsets.values()) == e2e["result"].produced


def test_slow_member_is_the_one_behind(e2e: dict[str, Any]) -> None:
    """The partitions left with lag are m3-slow's (the fast members caught up)."""
    offsets = e2e["offsets"]
    slow = e2e["result"].members["m3-slow"].events_of("assigned")[-1]["parts"]
    behind = {p for p, c in offsets.items() if int(c["lag"]) > 0}
    assert behind and behind <= set(slow), (behind, slow)


def test_why_tells_each_rebalance_with_its_cause(e2e: dict[str, Any]) -> None:
    """`analyze why` on the broker's log dir and on the run's tables: the same story."""
    from groupcoord.analytics.driver import why

    told = [why.tell(h) for h in (why.from_data_dir(str(e2e["data_dir"]), SCENARIO.group),
                                  why.from_out_dir(str(e2e["out"]), SCENARIO.group))]
    assert told[0] == told[1]
    text = "\n".join(told[0])
    for who in ("m1", "m2", "m3-slow", "m4-killed"):
        assert f": {who} joined;" in text, text
    assert f'm2 left the group: "{LEAVE_REASON}"' in text, text
    timeout = f"{SCENARIO.session_timeout_ms / 1000:.1f} s"
    assert f"m4-killed was evicted after {timeout} without a heartbeat" in text, text
