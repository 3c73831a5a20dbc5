"""A rebalance storm and silent non-assignment made by real clients, told in words.

One broker subprocess with a data dir hosts two classic groups while a producer streams into
both topics:

- ``health-storm``: ``storm-steady`` (librdkafka) consumes throughout while ``storm-flappy``
  (kafka-python, a process per life) joins and leaves with a KIP-800 reason ``FLAPS`` times,
  each life a fresh member: two rebalances per flap within seconds;
- ``health-orphans``: three kafka-python members whose client-side assignor gives each at
  most two partitions (``kafka_python_member.py --cap 2``); all six partitions are owned
  and committed, then ``orphan-c`` leaves, the leader's assignment leaves partitions 4 and
  5 to nobody and the group is stable while records pile up on them.

The broker is stopped with both groups still populated (the members are SIGKILLed after it,
so none leaves), then ``groupcoord analyze health`` (words and ``--json``) and ``analyze run``
(``summary.json`` and the report's cards) must name the storm with the churning member and
its reason, and the orphaned partitions with the group's members and their last owner.
Nothing here waits for a session timeout: joins and leaves are what the clients send, so the
broker runs on the system clock.
"""

from __future__ import annotations

import html
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.interop]

pytest.importorskip("confluent_kafka")
pytest.importorskip("kafka")

from helpers.broker import BrokerFactory
from helpers.polling import wait_for

from groupcoord.cli.demo_clients import MemberProcess, SteadyProducer
from groupcoord.cli.demo_workload import Scenario

STORM = Scenario(topic="health-storm-t", group="health-storm", partitions=2)
ORPHANS = Scenario(topic="health-orphans-t", group="health-orphans", partitions=6)
FLAPS = 3
FLAP_REASON = "restarting after an out-of-memory kill"
MEMBER = Path(__file__).resolve().parent / "kafka_python_member.py"
RATE = 40  # records/s into each topic


def _wait(cond: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    """The members report asynchronously, from their own processes."""
    wait_for(cond, what, timeout_s)


class KafkaPythonMember:
    """A `kafka_python_member.py` process and what it reported."""

    def __init__(self, name: str, bootstrap: str, sc: Scenario, *extra: str) -> None:
        self.name = name
        self.assigned: list[int] | None = None
        self.assignments = 0  # rebalances it went through
        self.committed: set[int] = set()
        self.errors: list[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, str(MEMBER), "--bootstrap", bootstrap, "--topic", sc.topic,
             "--group", sc.group, "--name", name, *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, bufsize=1)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            ev = json.loads(line)
            if ev["ev"] == "assigned":
                self.assigned = ev["parts"]
                self.assignments += 1
            elif ev["ev"] == "committed":
                self.committed |= {int(p) for p in ev["offsets"]}
            elif ev["ev"] == "error":
                self.errors.append(ev["message"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("close\n")
        self.proc.stdin.flush()
        self.proc.wait(30)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _create_topics(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(s.topic, s.partitions, 1) for s in (STORM, ORPHANS)])
    for future in futures.values():
        future.result(timeout=30)


def _storm(bootstrap: str, steady_box: list[MemberProcess], flappers: list[KafkaPythonMember],
           log: IO[bytes]) -> None:
    """storm-steady stays; storm-flappy joins and leaves FLAPS times, each rebalance done
    before the next (so each is a generation of its own)."""
    steady = MemberProcess("storm-steady", bootstrap, STORM, 0.0, lambda _n, _p: None, log=log)
    steady_box.append(steady)
    _wait(lambda: steady.assigned == [0, 1], "storm-steady to own both partitions")
    for _ in range(FLAPS):
        flappy = KafkaPythonMember("storm-flappy", bootstrap, STORM,
                                   "--leave-reason", FLAP_REASON)
        flappers.append(flappy)
        _wait(lambda f=flappy: bool(f.assigned)  # type: ignore[misc]
              and steady.assigned is not None and len(steady.assigned) == 1,
              "storm-flappy to get a partition")
        flappy.close()
        _wait(lambda: steady.assigned == [0, 1], "storm-steady to own both partitions again")


def _orphans(bootstrap: str, members: dict[str, KafkaPythonMember]) -> None:
    """orphan-a, -b, -c own two partitions each and commit on all six; orphan-c leaves and
    nobody gets 4 and 5, while records keep arriving there."""
    for name in ("orphan-a", "orphan-b", "orphan-c"):
        members[name] = KafkaPythonMember(name, bootstrap, ORPHANS, "--cap", "2")
        _wait(lambda m=members[name]: m.assigned is not None, f"{name}'s assignment")
    by = members
    _wait(lambda: [by[n].assigned for n in sorted(by)] == [[0, 1], [2, 3], [4, 5]]
          and set.union(*(m.committed for m in by.values())) == set(range(6)),
          "three members committing on all six partitions")
    seen = {n: by[n].assignments for n in ("orphan-a", "orphan-b")}
    by["orphan-c"].close()
    _wait(lambda: all(by[n].assignments > seen[n] for n in seen)
          and by["orphan-a"].assigned == [0, 1] and by["orphan-b"].assigned == [2, 3],
          "orphan-a and -b to rejoin and get 0, 1 and 2, 3 again, and nobody 4, 5")
    before = time.monotonic()
    by["orphan-a"].committed.clear()
    by["orphan-b"].committed.clear()
    _wait(lambda: time.monotonic() - before > 4 and by["orphan-a"].committed == {0, 1}
          and by["orphan-b"].committed == {2, 3}, "orphan-a and -b to keep committing")


@pytest.fixture(scope="module")
def scenario(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from groupcoord.analytics.driver.pipeline import RunConfig
    from groupcoord.analytics.driver.run import run

    base = tmp_path_factory.mktemp("health-real")
    factory = BrokerFactory(base, ["--group-initial-rebalance-delay-ms", "0"])
    steady: list[MemberProcess] = []
    flappers: list[KafkaPythonMember] = []
    capped: dict[str, KafkaPythonMember] = {}
    producers: list[SteadyProducer] = []
    client_log = (base / "clients.log").open("wb")  # librdkafka's complaints go here
    try:
        broker = factory.create()
        _create_topics(broker.bootstrap)
        producers = [SteadyProducer(broker.bootstrap, s.topic, RATE) for s in (STORM, ORPHANS)]
        for p in producers:
            p.start()
        _storm(broker.bootstrap, steady, flappers, client_log)
        _orphans(broker.bootstrap, capped)
        for p in producers:
            p.stop()
        assert not [m.errors for m in [*capped.values(), *flappers] if m.errors]
        assert not [m.name for m in steady if m.failed()]
        assert broker.stop() == 0  # with both groups populated: nobody left at the end
        out = base / "analytics"
        run(spark, RunConfig(str(broker.data_dir), str(out)), lambda _line: None)
        yield {"data_dir": broker.data_dir, "out": out}
    finally:
        for m in steady:
            m.kill()
        for k in [*flappers, *capped.values()]:
            k.kill()
        factory.close()
        client_log.close()


def _health(data_dir: Path, *extra: str) -> str:
    done = subprocess.run([sys.executable, "-m", "groupcoord", "analyze", "health",
                           "--data-dir", str(data_dir), *extra],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr  # not every group is OK
    return done.stdout


def _storm_words(text: str) -> None:
    # storm-steady's own join a few seconds before is the burst's first rebalance
    assert f"rebalance storm: {2 * FLAPS + 1} rebalances in " in text, text
    assert f"storm-flappy joined {FLAPS} times and left {FLAPS}" in text, text
    assert f"(reasons given: storm-flappy: {FLAP_REASON})" in text, text
    assert "storm-steady joined" not in text, text


def _orphan_words(text: str) -> None:
    assert ("silent non-assignment: health-orphans-t partitions 4, 5 have had no owner "
            "since ") in text, text
    assert "although the group has members (orphan-a, orphan-b); " in text, text
    assert " wait and nobody commits; last owned by orphan-c" in text, text


def test_health_command_tells_the_storm_and_the_orphaned_partitions(
        scenario: dict[str, Any]) -> None:
    lines = _health(scenario["data_dir"]).splitlines()
    storm = next(line for line in lines if line.startswith(f"{STORM.group} (classic): "))
    assert storm.startswith(f"{STORM.group} (classic): WARN: rebalance storm: "), storm
    _storm_words(storm)
    orphans = next(line for line in lines if line.startswith(f"{ORPHANS.group} (classic): "))
    assert orphans.startswith(f"{ORPHANS.group} (classic): ERR: silent non-assignment: "), \
        orphans
    _orphan_words(orphans)


def test_health_json_names_members_and_partitions(scenario: dict[str, Any]) -> None:
    by = {g["group"]: g for g in json.loads(_health(scenario["data_dir"], "--json"))["groups"]}
    storm = by[STORM.group]
    assert storm["status"] == "WARN" and storm["members"] == ["storm-steady"]
    (finding,) = storm["findings"]
    _storm_words(finding)
    orphans = by[ORPHANS.group]
    assert orphans["status"] == "ERR" and orphans["members"] == ["orphan-a", "orphan-b"]
    (finding,) = orphans["findings"]
    _orphan_words(finding)
    parts = {p["partition"]: p for p in orphans["partitions"]}
    assert {p: parts[p]["status"] for p in (4, 5)} == {4: "STOP", 5: "STOP"}
    assert all(parts[p]["lag"] > 0 and parts[p]["owner"].startswith("orphan-c")
               for p in (4, 5)), parts
    assert {parts[p]["status"] for p in range(4)} <= {"OK", "WARN"}  # a and b keep up
    assert "orphan-c" not in orphans["member_lag"]  # not its lag: nobody owns them now


def test_report_and_summary_say_so(scenario: dict[str, Any]) -> None:
    summary = json.loads((scenario["out"] / "summary.json").read_text())
    storm, orphans = summary["groups"][STORM.group], summary["groups"][ORPHANS.group]
    assert storm["status"] == "WARN" and orphans["status"] == "ERR"
    _storm_words(storm["findings"][0])
    _orphan_words(orphans["findings"][0])
    page = html.unescape((scenario["out"] / "report.html").read_text(encoding="utf-8"))
    for group, words in ((STORM.group, _storm_words), (ORPHANS.group, _orphan_words)):
        card = page[page.index(f"data-group='{group}'"):]
        health_line = card[card.index("<li class='health'>"):card.index("</li>")]
        words(health_line)
