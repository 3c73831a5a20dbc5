"""KIP-848 join phase over the wire: N members join one new consumer group (ConsumerGroup-
Heartbeat) and heartbeat in rounds until every member is at the group's epoch with its
assignment, then keep heartbeating (steady state).

One blocking connection, request/response (latency-bound, not pipelined), with the
protocol-following simulated members of `bench/bench_consumer_groups.py`. Every broker is
started fresh; a broker whose ApiVersions does not list ConsumerGroupHeartbeat (key 68) gets
a row saying so.
"""

from __future__ import annotations

import time
from typing import Any

from bench import clients
from bench.bench_consumer_groups import TOPIC, WireMembers
from bench.brokers import BrokerSpec, RunningBroker, start_broker
from bench.common import Section, add_relative, median, progress
from bench.context import BenchContext
from bench.coordinator import wait_for_group_coordinator
from groupcoord.cli.wire_client import KafkaError, WireClient
from groupcoord.wire.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest

NAME = "kip848_join"
TITLE = "KIP-848 consumer group join phase"
GROUP = "bench-kip848"
MAX_ROUNDS = 100
#: Steady heartbeats per member: enough broker CPU to read above /proc's 10 ms tick.
STEADY_ROUNDS = 20


def run(ctx: BenchContext) -> Section:
    """Join `ctx.kip848_members` members into a new group on every usable broker."""
    n = ctx.kip848_members
    section = Section(
        name=NAME, title=TITLE,
        description=f"{n} members join one new consumer group subscribed to a {n}-partition "
                    "topic with ConsumerGroupHeartbeat v1 (one blocking connection, one "
                    "request at a time), then heartbeat in rounds until all are at the "
                    f"group epoch with their partitions; then, after {ctx.group_warmup_s:.0f} s of "
                    f"untimed steady heartbeats, {STEADY_ROUNDS * n:,} timed ones (each with "
                    "the member's epoch and owned partitions). The join phase is timed on a "
                    "fresh broker, so for Kafka it includes the JVM's first runs of this path. "
                    "Fresh broker per run; broker CPU from /proc (median of runs).",
        columns=[("broker", "broker"), ("join_ms", "join phase ms"),
                 ("vs_kafka", "time vs Kafka"), ("rounds", "rounds after the joins"),
                 ("join_cpu_ms", "broker CPU ms for the join phase"),
                 ("steady_cpu_us", "broker CPU µs/steady heartbeat"),
                 ("steady_per_s", "steady heartbeats/s wall"),
                 ("rss_mib", "broker peak RSS MiB"), ("runs", "runs"), ("status", "status")],
        notes=[("Kafka runs with group.consumer.assignment.interval.ms=0 and "
                "group.consumer.assignor.offload.enable=false (target assignment computed "
                "on the heartbeat that bumps the epoch, as Kafka 4.2 and groupcoord do); "
                "with 4.4's defaults the target waits for the assignment interval."),
               ("With real clients each round is one heartbeat interval "
                "(group.consumer.heartbeat.interval.ms, 5 s by default), so the rounds decide "
                "how fast a real group settles; the join phase here is request latency and "
                "broker work only.")],
    )
    samples: dict[str, list[dict[str, Any]]] = {}
    status: dict[str, str] = {}
    for i in range(ctx.runs):
        for spec in ctx.order(i):
            if spec.name in status:
                continue
            try:
                out = _one_run(spec, n, f"kip848-{i}", ctx.group_warmup_s)
            except NotServed as exc:
                status[spec.name] = f"not served: {exc}"
                progress(NAME, f"{spec.name}: {exc}")
                continue
            except (*clients.BENCH_ERRORS, KafkaError, AssertionError) as exc:
                status[spec.name] = f"failed: {type(exc).__name__}: {exc}"
                progress(NAME, f"{spec.name} run {i + 1}: FAILED {exc}")
                continue
            samples.setdefault(spec.name, []).append(out)
            progress(NAME, f"{spec.name} run {i + 1}: join phase {out['join_ms']:.0f} ms, "
                           f"{out['rounds']} rounds, {out['join_cpu_ms']:.0f} ms broker CPU")
    for spec in ctx.brokers:
        got = samples.get(spec.name, [])
        row: dict[str, Any] = {"broker": spec.name, "runs": len(got),
                               "status": status.get(spec.name, "ok")}
        if got:
            row.update({key: median([float(s[key]) for s in got])
                        for key in ("join_ms", "join_cpu_ms", "steady_cpu_us",
                                    "steady_per_s")})
            row["rounds"] = "/".join(str(s["rounds"]) for s in got)
            row["rss_mib"] = max(s["rss_mib"] for s in got)
        section.rows.append(row)
    section.rows.extend(ctx.pending_rows())
    add_relative(section.rows, "join_ms")
    section.raw = {"runs": samples, "status": status}
    return section


class NotServed(RuntimeError):
    """The broker does not offer the API the benchmark needs."""


def _one_run(spec: BrokerSpec, members: int, tag: str, warmup_s: float) -> dict[str, Any]:
    with start_broker(spec, tag) as broker, WireClient(broker.bootstrap) as client:
        try:
            version = client.version_for(ConsumerGroupHeartbeatRequest, 1)
        except KafkaError:
            raise NotServed("its ApiVersions lists no ConsumerGroupHeartbeat (key 68), "
                            "so KIP-848 groups cannot be measured") from None
        note = clients.create_topic(broker.bootstrap, TOPIC, partitions=members)
        if note:
            raise RuntimeError(note)
        wait_for_group_coordinator(client, GROUP)
        group = WireMembers(client, GROUP, members)
        assert version == 1
        return _measure(broker, group, warmup_s)


def _measure(broker: RunningBroker, group: WireMembers, warmup_s: float) -> dict[str, Any]:
    broker.mark_cpu()
    start = time.perf_counter()
    for member in group.members:
        group.beat(member)
    rounds = 0
    while not (group.settled() and rounds > 1):
        rounds += 1
        if rounds > MAX_ROUNDS:
            raise RuntimeError(f"not settled after {MAX_ROUNDS} rounds")
        for member in group.members:
            group.beat(member)
    join_s = time.perf_counter() - start
    join_cpu = broker.cpu_since_mark()
    # Untimed steady heartbeats first, so the JVM has compiled this path like the others.
    warm_until, i = time.perf_counter() + warmup_s, 0
    while time.perf_counter() < warm_until:
        group.beat(group.members[i % len(group.members)])
        i += 1
    steady = STEADY_ROUNDS * len(group.members)
    broker.mark_cpu()
    start = time.perf_counter()
    for i in range(steady):
        group.beat(group.members[i % len(group.members)])
    steady_s = time.perf_counter() - start
    steady_cpu = broker.cpu_since_mark()
    if broker.proc.poll() is not None:
        raise RuntimeError(f"{broker.spec.name} exited during the run")
    return {"join_ms": join_s * 1000, "rounds": rounds,
            "join_cpu_ms": float("nan") if join_cpu is None else join_cpu * 1000,
            "steady_per_s": steady / steady_s,
            "steady_cpu_us": float("nan") if steady_cpu is None else steady_cpu / steady * 1e6,
            "rss_mib": broker.rss_peak_mib()}
