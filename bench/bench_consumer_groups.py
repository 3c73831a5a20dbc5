"""KIP-848 consumer-group benchmark: heartbeat throughput of a 1,000-member group and the
time for 100 members to reach a stable epoch.

Run: ``python -m bench.bench_consumer_groups`` (``--skip-wire`` for in-process only).
Writes ``bench/results/consumer_groups.json`` and ``bench/results/consumer_groups.md``.

In-process: the shard is driven directly, the way the runtime does (records replayed,
timers ignored), with simulated clients that follow the protocol (report what they own,
drop revoked partitions on their next heartbeat).

- steady heartbeats/s: a stable 1,000-member group (one topic of 2,000 partitions); each
  member heartbeats with its epoch and owned partitions; nothing changes, nothing is
  written. This is the per-heartbeat cost that must not grow with the group.
- one join into the 1,000-member group: the heartbeat that bumps the epoch and recomputes
  the target assignment (the O(group) step), plus the heartbeats until stable again.
- 100 members to a stable epoch: 100 members join an empty group (100 partitions), then
  heartbeat in rounds until the group is Stable; reported are compute time, rounds and
  heartbeats. With the client heartbeat interval (5 s by default), rounds x interval is
  what a real group waits.

Over the wire: convergence and steady heartbeats of a 100- and a 1,000-member group
against a broker subprocess, one blocking connection, request/response (latency-bound,
not pipelined; every join appends to `__consumer_offsets`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.ids import SequentialIds
from groupcoord.coordinator.result import OpContext
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    TopicPartitions,
)

RESULTS_DIR = Path(__file__).resolve().parent / "results"
TOPIC = "bench"
TOPIC_ID = b"B" * 16
CTX = OpContext("bench", "/127.0.0.1", 0)


class Member:
    """A protocol-following client: owned partitions, epoch, pending switch."""

    def __init__(self, member_id: str) -> None:
        self.member_id = member_id
        self.epoch = 0
        self.owned: list[int] = []
        self.next_owned: list[int] | None = None

    def request(self, group: str) -> ConsumerGroupHeartbeatRequest:
        if self.next_owned is not None:
            self.owned, self.next_owned = self.next_owned, None
        if self.epoch == 0:
            return ConsumerGroupHeartbeatRequest(
                group_id=group, member_id=self.member_id, member_epoch=0,
                rebalance_timeout_ms=300_000, subscribed_topic_names=[TOPIC],
                topic_partitions=[])
        return ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=self.member_id, member_epoch=self.epoch,
            topic_partitions=[TopicPartitions(topic_id=TOPIC_ID, partitions=self.owned)])

    def response(self, resp: Any) -> None:
        assert resp.error_code == 0, resp
        self.epoch = resp.member_epoch
        if resp.assignment is not None:
            parts = sorted(p for tp in resp.assignment.topic_partitions for p in tp.partitions)
            self.owned = sorted(set(self.owned) | set(parts))
            self.next_owned = parts


def new_shard(partitions: int) -> GroupCoordinatorShard:
    shard = GroupCoordinatorShard(0, GroupCoordinatorConfig(), SequentialIds())
    shard.on_loaded(0)
    shard.on_topics_changed(TopicsImage.of([(TOPIC, TOPIC_ID, partitions)], 1), 0)
    return shard


def heartbeat(shard: GroupCoordinatorShard, m: Member, group: str, now: int) -> None:
    result = shard.consumer_group_heartbeat(m.request(group), 1, CTX, now)
    for record in result.records:
        shard.replay(record)
    m.response(result.response)


def stable(shard: GroupCoordinatorShard, group: str) -> bool:
    return shard.consumer.groups[group].state().value == "Stable"


def converge(shard: GroupCoordinatorShard, members: list[Member], group: str,
             now: int) -> tuple[int, int]:
    """Heartbeat in rounds until Stable; (rounds, heartbeats)."""
    rounds = beats = 0
    while not stable(shard, group):
        rounds += 1
        for m in members:
            heartbeat(shard, m, group, now)
            beats += 1
        assert rounds < 1000
    return rounds, beats


def bench_in_process(size: int = 1000, steady_beats: int = 20_000) -> dict[str, Any]:
    shard = new_shard(2 * size)
    members = [Member(f"m{i}") for i in range(size)]
    t0 = time.perf_counter()
    for m in members:
        heartbeat(shard, m, "big", 1)
    joined_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    converge(shard, members, "big", 2)
    settle_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i in range(steady_beats):
        heartbeat(shard, members[i % size], "big", 3)
    steady_s = time.perf_counter() - t0
    newcomer = Member("newcomer")
    members.append(newcomer)
    t0 = time.perf_counter()
    heartbeat(shard, newcomer, "big", 4)
    bump_ms = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    rounds, beats = converge(shard, members, "big", 5)
    rejoin_s = time.perf_counter() - t0
    return {
        "members": size, "partitions": 2 * size,
        "build_joins_s": round(joined_s, 3), "build_settle_s": round(settle_s, 3),
        "steady_heartbeats": steady_beats,
        "steady_heartbeats_per_s": round(steady_beats / steady_s),
        "steady_us_per_heartbeat": round(steady_s / steady_beats * 1e6, 1),
        "join_heartbeat_ms": round(bump_ms, 2),
        "rejoin_rounds": rounds, "rejoin_heartbeats": beats,
        "rejoin_settle_ms": round(rejoin_s * 1000, 1),
    }


def bench_hundred_in_process() -> dict[str, Any]:
    shard = new_shard(100)
    members = [Member(f"m{i}") for i in range(100)]
    t0 = time.perf_counter()
    for m in members:
        heartbeat(shard, m, "hundred", 1)
    rounds, beats = converge(shard, members, "hundred", 2)
    elapsed = time.perf_counter() - t0
    return {"members": 100, "partitions": 100, "compute_ms": round(elapsed * 1000, 1),
            "rounds_after_join": rounds, "heartbeats": beats + 100,
            "group_epoch": shard.consumer.groups["hundred"].group_epoch}


def bench_wire() -> dict[str, Any]:
    """100 and 1,000 members over one connection against a broker subprocess."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import tempfile

    from helpers.broker import BrokerFactory
    from helpers.confluent_io import create_topic

    from groupcoord.cli.wire_client import WireClient

    with tempfile.TemporaryDirectory() as tmp:
        factory = BrokerFactory(Path(tmp), ["--group-initial-rebalance-delay-ms", "0"])
        broker = factory.create()
        try:
            create_topic(broker.bootstrap, TOPIC, 2000)
            with WireClient(broker.bootstrap) as client:
                hundred = _wire_group(client, "wire100", 100)
                thousand = _wire_group(client, "wire1000", 1000)
            return {"group_100": hundred, "group_1000": thousand}
        finally:
            factory.close()


class WireMembers:
    """Members heartbeating over one blocking connection."""

    def __init__(self, client: Any, group: str, size: int) -> None:
        self.client, self.group = client, group
        self.members = [Member(f"{group}-{i}") for i in range(size)]
        self.topic_id: bytes | None = None

    def beat(self, m: Member) -> None:
        req = m.request(self.group)
        if req.topic_partitions and self.topic_id is not None:
            req.topic_partitions[0].topic_id = self.topic_id
        resp, _ = self.client.request(req, 1)
        if resp.assignment is not None and resp.assignment.topic_partitions:
            self.topic_id = bytes(resp.assignment.topic_partitions[0].topic_id)
        m.response(resp)

    def settled(self) -> bool:
        epochs = {m.epoch for m in self.members}
        return len(epochs) == 1 and all(m.next_owned is None for m in self.members)


def _wire_group(client: Any, group: str, size: int) -> dict[str, Any]:
    wm = WireMembers(client, group, size)
    t0 = time.perf_counter()
    for m in wm.members:
        wm.beat(m)
    joined_s = time.perf_counter() - t0
    rounds = 0
    while True:
        rounds += 1
        for m in wm.members:
            wm.beat(m)
        if wm.settled() and rounds > 1:
            break
        assert rounds < 100
    converge_s = time.perf_counter() - t0
    steady = max(3000, 3 * size)
    t0 = time.perf_counter()
    for i in range(steady):
        wm.beat(wm.members[i % size])
    steady_s = time.perf_counter() - t0
    return {"members": size, "partitions": 2000, "joins_ms": round(joined_s * 1000, 1),
            "converge_ms": round(converge_s * 1000, 1), "rounds_after_join": rounds,
            "steady_heartbeats_per_s": round(steady / steady_s),
            "steady_ms_per_heartbeat": round(steady_s / steady * 1000, 3)}


def _table(rows: list[tuple[str, str]]) -> list[str]:
    return ["| case | result |", "|---|---:|", *(f"| {c} | {r} |" for c, r in rows)]


def write(results: dict[str, Any]) -> None:
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "consumer_groups.json").write_text(json.dumps(results, indent=1) + "\n")
    big, hundred = results["in_process"]["group_1000"], results["in_process"]["group_100"]
    rows = [
        (f"steady heartbeats/s, {big['members']} members, {big['partitions']} partitions",
         f"{big['steady_heartbeats_per_s']:,} ({big['steady_us_per_heartbeat']} µs each)"),
        (f"the joining heartbeat (epoch bump + target for {big['members'] + 1} members)",
         f"{big['join_heartbeat_ms']} ms"),
        ("back to Stable after that join",
         (f"{big['rejoin_rounds']} rounds, {big['rejoin_heartbeats']:,} heartbeats, "
          f"{big['rejoin_settle_ms']} ms compute")),
        (f"building the {big['members']}-member group (joins, then settle)",
         f"{big['build_joins_s']} s + {big['build_settle_s']} s"),
        ("100 members from empty to a stable epoch",
         (f"{hundred['compute_ms']} ms compute, {hundred['rounds_after_join']} heartbeat "
          f"rounds after the joins")),
    ]
    lines = ["## Consumer groups (KIP-848)", "", f"Command: `{results['command']}`  ",
             f"Machine: {results['machine']}", "",
             "In-process (the shard driven directly, records replayed as the runtime does):",
             "", *_table(rows)]
    wire = results.get("wire")
    if wire:
        wire_rows = []
        for w in (wire["group_100"], wire["group_1000"]):
            wire_rows += [
                (f"{w['members']} members from empty to a stable epoch",
                 (f"{w['converge_ms']:,} ms ({w['joins_ms']:,} ms of joins), "
                  f"{w['rounds_after_join']} rounds after the joins")),
                (f"steady heartbeats/s ({w['members']} members, {w['partitions']} partitions)",
                 f"{w['steady_heartbeats_per_s']:,} ({w['steady_ms_per_heartbeat']} ms each)"),
            ]
        lines += ["", "Over the wire (broker subprocess, one connection, request/response):",
                  "", *_table(wire_rows)]
    lines += ["", ("With real clients each round is one heartbeat interval "
                   "(`group.consumer.heartbeat.interval.ms`, 5 s by default), so the rounds, "
                   "not the compute time, decide how fast a group settles."), ""]
    (RESULTS_DIR / "consumer_groups.md").write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-wire", action="store_true")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    results: dict[str, Any] = {
        "command": "python -m bench.bench_consumer_groups"
                   + (" --skip-wire" if args.skip_wire else ""),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                   f"CPython {platform.python_version()}, "
                   f"{dt.datetime.now(dt.UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}, "
                   f"load average at start {load:.2f}",
        "in_process": {"group_1000": bench_in_process(), "group_100": bench_hundred_in_process()},
    }
    if not args.skip_wire:
        results["wire"] = bench_wire()
    print(json.dumps(results, indent=1))
    write(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
