"""The parts of the metrics endpoint that need no client: the text format, causes of
rebalances, windowed rates, the timestamp of a group's next record in a real partition
log, and the HTTP answers of a broker that is still loading."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.prometheus_text import parse

from groupcoord.cli import serve
from groupcoord.coordinator.result import GroupEvent
from groupcoord.logformat.batch import LOG_APPEND_TIME, build_batch, build_end_txn_marker
from groupcoord.server.broker import Broker
from groupcoord.server.config import BrokerConfig, Listener
from groupcoord.server.metrics.counters import CAUSES, GroupCounters, WindowedRate, cause_of
from groupcoord.server.metrics.exposition import Family, render
from groupcoord.server.metrics.http import MetricsOptions, MetricsServer
from groupcoord.server.metrics.lag import TimestampReader, first_timestamp
from groupcoord.storage.log import PartitionLog


def test_text_format_escapes_labels_and_drops_empty_families() -> None:
    lag = Family("x_lag", "gauge", "help with \\ and\nnewline")
    lag.add(3, group='a"b\\c\nd', topic="t")
    lag.add(0.25, group="e", topic="t")
    text = render([lag, Family("empty", "gauge", "none")]).decode()
    assert text.splitlines() == [
        "# HELP x_lag help with \\\\ and\\nnewline", "# TYPE x_lag gauge",
        'x_lag{group="a\\"b\\\\c\\nd",topic="t"} 3', 'x_lag{group="e",topic="t"} 0.25']
    parsed = parse(text)["x_lag"]
    assert parsed[frozenset({("group", 'a"b\\c\nd'), ("topic", "t")})] == 3


def test_reasons_reduce_to_a_bounded_set_of_causes() -> None:
    member = "consumer-1-5f0e4c1a-7b1c-4b9e-9bd7-0a1b2c3d4e5f"
    cases = {
        f"Adding new member {member} with group instance id None; client reason: x":
            "member_joined",
        f"Member {member} is joining group during Stable; client reason: rebalance":
            "member_rejoined",
        f"explicit `LeaveGroup` request for ({member}) members.": "member_left",
        f"removing member {member} on heartbeat expiration.": "session_timeout",
        f"Removing [{member}] on pending sync request expiration": "sync_timeout",
        f"Updating metadata for static member {member} with instance id i-1; client "
        "reason: x": "static_member_replaced",
        "static member left the group": "member_left",
        "member joined": "member_joined", "member subscription changed": "subscription_changed",
        "topic metadata changed": "metadata_changed", "session timeout": "session_timeout",
        "member did not revoke its partitions within the rebalance timeout":
            "rebalance_timeout",
        "the member failed to revoke its tasks in time": "rebalance_timeout",
        "topology validated": "topology_validated", "something new": "other", None: "other",
    }
    for reason, cause in cases.items():
        assert cause_of(reason) == cause, reason
    assert set(cases.values()) <= set(CAUSES)


def _event(group: str, kind: str, reason: str | None = None, **detail: object) -> GroupEvent:
    return GroupEvent(group, kind, None, reason, 1, 0, dict(detail))


def test_counters_by_protocol_cause_and_group_with_a_group_limit() -> None:
    counters = GroupCounters(max_groups=2)
    counters.observe([
        _event("a", "rebalance_started", "Adding new member m with group instance id None"),
        _event("a", "rebalance_completed"),
        _event("b", "group_epoch_bumped", "member joined", protocol="consumer"),
        _event("c", "group_epoch_bumped", "session timeout", protocol="streams"),
        _event("d", "group_epoch_bumped", "session timeout", protocol="streams"),
        _event("a", "offsets_expired", partitions=3),
        _event("a", "member_joined", "not provided"),  # not a rebalance by itself
    ])
    assert counters.rebalances == {("classic", "member_joined"): 1,
                                   ("consumer", "member_joined"): 1,
                                   ("streams", "session_timeout"): 2}
    assert counters.totals == {"group-completed-rebalance": 1, "consumer-group-rebalance": 1,
                               "streams-group-rebalance": 2, "offset-expiration": 3}
    # Two groups by name; the others counted together.
    assert set(counters.group_rebalances) == {"a", "b", "__other__"}
    assert counters.group_rebalances["__other__"] == {("streams", "session_timeout"): 2}
    counters.observe([_event("a", "group_deleted")])
    assert set(counters.group_rebalances) == {"b", "__other__"}


def test_windowed_rate_is_growth_per_second_over_the_last_minute() -> None:
    rate = WindowedRate()
    assert rate.rate(0, 1_000) == 0.0
    assert rate.rate(30, 11_000) == 3.0
    assert rate.rate(90, 61_000) == 1.5  # 90 over the 60 s since the first scrape
    # The first two samples have left the window: growth since the one at 61 s.
    assert rate.rate(120, 91_000) == 1.0


def test_first_timestamp_skips_control_batches_and_reads_append_time(tmp_path: Path) -> None:
    plog = PartitionLog.open(str(tmp_path / "t-0"))
    rows = [(None, b"v%d" % i, (), 1_000 + i) for i in range(3)]
    plog.append(build_batch(rows))  # offsets 0-2, CreateTime 1000..1002
    plog.append(build_end_txn_marker(1, 7, 0, 5_000), allow_control=True)  # offset 3
    plog.append(build_batch([(None, b"x", (), 2_000)], timestamp_type=LOG_APPEND_TIME,
                            max_timestamp=9_000))  # offset 4
    assert [first_timestamp(plog, o) for o in range(6)] == [1_000, 1_001, 1_002, 9_000,
                                                            9_000, None]
    plog.delete_records_before(2)
    assert first_timestamp(plog, 0) == 1_002  # lost records: the first one kept
    reader = TimestampReader(budget=1)
    reader.begin_scrape()
    assert reader.timestamp(("t", 0), plog, 2) == 1_002
    assert reader.timestamp(("t", 1), plog, 4) is None  # over the budget
    reader.end_scrape()
    reader.begin_scrape()
    assert reader.timestamp(("t", 0), plog, 2) == 1_002 and reader.reads_total == 1  # cached
    plog.close()


def test_http_answers_while_loading_and_for_bad_requests() -> None:
    async def run() -> list[bytes]:
        broker = Broker(BrokerConfig(listeners=(Listener("127.0.0.1", 0),)))  # not started
        server = MetricsServer(broker, MetricsOptions("c"))
        port = await server.start("127.0.0.1", 0)
        answers = []
        for request in (b"GET /health HTTP/1.1\r\n\r\n", b"GET /ready HTTP/1.1\r\n\r\n",
                        b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
                        b"POST /metrics HTTP/1.1\r\n\r\n", b"GET /nope HTTP/1.1\r\n\r\n",
                        b"garbage\r\n\r\n", b"HEAD /health HTTP/1.1\r\n\r\n"):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            answers.append(await reader.read())
            writer.close()
        broker.ready.set()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /ready?x=1 HTTP/1.1\r\n\r\n")
        answers.append(await reader.read())
        writer.close()
        await server.stop()
        return answers

    answers = asyncio.run(run())
    status = [a.split(b"\r\n", 1)[0] for a in answers]
    assert status == [b"HTTP/1.1 200 OK", b"HTTP/1.1 503 Service Unavailable",
                      b"HTTP/1.1 503 Service Unavailable", b"HTTP/1.1 405 Method Not Allowed",
                      b"HTTP/1.1 404 Not Found", b"HTTP/1.1 400 Bad Request",
                      b"HTTP/1.1 200 OK", b"HTTP/1.1 200 OK"]
    assert answers[0].endswith(b"\r\n\r\nok\n") and answers[6].endswith(b"\r\n\r\n")
    assert answers[7].endswith(b"ready\n")


def test_serve_names_a_bad_metrics_option_in_one_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    from groupcoord.cli.main import main as cli_main

    for args, message in (
            (["--metrics-listen", "nohost"],
             ("groupcoord serve: --metrics-listen: listener must be [NAME://]host:port, got "
              "'nohost'\n")),
            (["--metrics-max-groups", "-1"],
             "groupcoord serve: metrics_max_groups must be >= 0\n")):
        assert cli_main(["serve", "--listen", "127.0.0.1:0", "--data-dir", "memory", *args]) == 2
        assert capsys.readouterr().err == message
    ns = serve.parse_args(["--metrics-listen", "127.0.0.1:9404", "--metrics-max-groups", "7",
                           "--metrics-cluster-name", "prod"])
    assert (ns.metrics_listen, ns.metrics_cluster_name) == ("127.0.0.1:9404", "prod")
    assert serve.config_from_args(ns).metrics_max_groups == 7


# `python -m groupcoord serve --metrics-listen ...` stopped at its first bind: which modules
# were loaded, and which address was bound.
FIRST_BIND = """
import json, os, runpy, sys

def at_bind(event, args):
    if event == "socket.bind":
        print(json.dumps({"address": list(args[1]), "modules": sorted(sys.modules)}),
              flush=True)
        os._exit(0)

sys.addaudithook(at_bind)
sys.argv = ["groupcoord", "serve", "--listen", "127.0.0.1:0", "--data-dir", "memory",
            "--metrics-listen", "127.0.0.2:0"]
runpy.run_module("groupcoord", run_name="__main__", alter_sys=True)
"""


def test_the_metrics_listener_adds_nothing_before_the_kafka_bind() -> None:
    src = str(Path(__file__).resolve().parents[2] / "src")
    out = subprocess.run([sys.executable, "-c", FIRST_BIND], capture_output=True, text=True,
                         timeout=120, check=False, env=dict(os.environ, PYTHONPATH=src))
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.splitlines()[-1])
    assert seen["address"][0] == "127.0.0.1"  # the Kafka listener, not 127.0.0.2
    assert not [m for m in seen["modules"] if m.startswith("groupcoord.server.metrics")]
