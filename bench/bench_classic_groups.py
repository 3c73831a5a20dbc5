"""Classic consumer groups: formation time, heartbeat rate and commit rate, groupcoord vs
Apache Kafka 4.4 vs Tansu.

``python -m bench.bench_classic_groups`` writes ``bench/results/classic_groups.json`` and
``bench/results/classic_groups.md``. Three measurements, each broker in the same run:

- **Join time**: N confluent-kafka consumers (N = 1, 10, 50) form a new group over a
  60-partition topic; time from the last member's first JoinGroup to every member having
  its assignment (`bench/group_join.py`). groupcoord runs with
  ``--group-initial-rebalance-delay-ms 0`` and Kafka with
  ``group.initial.rebalance.delay.ms=0`` (Kafka's default delay is 3 s; Tansu has none).
- **Heartbeat rate** and **commit rate**: the broker is pinned to one core (``taskset``)
  and the load generator to the other; single-member groups on separate connections each
  keep a window of Heartbeat (or OffsetCommit) requests in flight (`bench/group_wire.py`).
  Reported: requests per broker CPU-second, broker CPU µs per request, the wall rate and
  the broker's peak RSS.

``join_section``/``rate_section`` are also sections of ``bench.run_all``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from bench import clients
from bench.brokers import BrokerSpec, GroupcoordBroker, KafkaBroker, TansuBroker, start_broker
from bench.common import (
    LOOPBACK,
    RESULTS_DIR,
    Section,
    add_relative,
    median,
    progress,
    rel,
    scrub,
)
from bench.context import BenchContext
from bench.coordinator import wait_for_coordinator_at
from bench.group_join import measure_join
from bench.group_wire import COMMITS, HEARTBEATS, TOPIC, Workload, group_ids, measure_rate

NAME = "classic_groups"
TITLE = "Classic consumer groups"
SIZES = (1, 10, 50)
JOIN_PARTITIONS = 60
BROKER_CPU, CLIENT_CPU = 1, 0
#: Per-broker notes on how it is configured for the group benchmarks.
JOIN_NOTE = ("groupcoord runs with --group-initial-rebalance-delay-ms 0 and Kafka with "
             "group.initial.rebalance.delay.ms=0 (its default is 3 s); Tansu has no such "
             "setting and holds the first join for about half the session timeout (10 s "
             "here), hence its ~5 s.")


class Tuned(BrokerSpec):
    """Another spec's broker with extra flags and, optionally, pinned to one CPU."""

    def __init__(self, base: BrokerSpec, extra: list[str], cpu: int | None = None) -> None:
        self.base, self.extra, self.cpu = base, extra, cpu
        self.name, self.ready_timeout_s = base.name, base.ready_timeout_s

    def available(self) -> tuple[bool, str]:
        return self.base.available()

    def prepare(self, port: int, data_dir: Path, log_path: Path) -> None:
        self.base.prepare(port, data_dir, log_path)

    def command(self, port: int, data_dir: Path) -> list[str]:
        pin = ["taskset", "-c", str(self.cpu)] if self.cpu is not None else []
        return [*pin, *self.base.command(port, data_dir), *self.extra]

    def env(self) -> dict[str, str]:
        return self.base.env()

    def describe(self) -> dict[str, str]:
        info = dict(self.base.describe())
        if self.extra:
            info["flags"] = f"{info.get('flags', '')} {' '.join(self.extra)}".strip()
        return info


def _tune(brokers: list[BrokerSpec], cpu: int | None) -> list[BrokerSpec]:
    """``brokers`` pinned to ``cpu`` if given, groupcoord's with no initial rebalance delay
    (Kafka's is 0 in its properties, tests/helpers/kraft_node; Tansu has none)."""
    return [Tuned(spec, ["--group-initial-rebalance-delay-ms", "0"]
                  if isinstance(spec, GroupcoordBroker) else [], cpu)
            for spec in brokers]


def _specs(names: list[str], cpu: int | None) -> tuple[list[BrokerSpec], dict[str, str]]:
    """The named brokers (pinned to ``cpu`` if given) that can run, and why the others
    cannot."""
    known: list[BrokerSpec] = []
    if "groupcoord" in names:
        known.append(GroupcoordBroker())
    if "kafka" in names:
        known.append(KafkaBroker())
    if "tansu" in names:
        known.append(TansuBroker())
    usable, unavailable = [], {}
    for spec in _tune(known, cpu):
        ok, reason = spec.available()
        if ok:
            usable.append(spec)
        else:
            unavailable[spec.name] = reason
    return usable, unavailable


def _pending(unavailable: dict[str, str], **extra: Any) -> list[dict[str, Any]]:
    return [{"broker": name, "status": f"pending: {why}", **extra}
            for name, why in unavailable.items()]


def _create_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=JOIN_PARTITIONS,
                                            replication_factor=1)])
    futures[topic].result(timeout=30)


def join_section(specs: list[BrokerSpec], runs: int, sizes: tuple[int, ...],
                 unavailable: dict[str, str] | None = None) -> Section:
    section = Section(
        name="classic_join", title="Classic group join time",
        description=f"N confluent-kafka consumers form a new group over a {JOIN_PARTITIONS}-"
                    "partition topic: time from the last member's first JoinGroup to every "
                    "member having its assignment (median of runs).",
        notes=[JOIN_NOTE,
               ("With no initial delay the first members can complete a generation before "
                "the rest arrive; the next one then waits for every member to rejoin. "
                "librdkafka's debug log (cgrp) shows members answered REBALANCE_IN_PROGRESS "
                "on SyncGroup sending their next JoinGroup about 1.9 s later, which is the "
                "bimodal ~0.1 s / ~1.9 s spread of groupcoord's runs (Kafka's members "
                "can meet the same).")],
        columns=[("broker", "broker"), ("members", "members"), ("median_ms", "median ms"),
                 ("vs_peer", "time vs Tansu"), ("vs_kafka", "time vs Kafka"), ("min_ms", "min ms"), ("max_ms", "max ms"),
                 ("runs", "runs"), ("status", "status")])
    samples, failures = _join_runs(specs, runs, sizes)
    for n in sizes:
        for spec in specs:
            ms = samples.get((spec.name, n), [])
            row: dict[str, Any] = {"broker": spec.name, "members": n, "runs": len(ms),
                                   "status": failures.get((spec.name, n), "ok")}
            if ms:
                row.update(median_ms=median(ms), min_ms=min(ms), max_ms=max(ms))
            section.rows.append(row)
        section.rows.extend(_pending(unavailable or {}, members=n))
    add_relative(section.rows, "median_ms", ("members",))
    section.raw = {"ms": {f"{b}/N={n}": v for (b, n), v in samples.items()},
                   "failures": {f"{b}/N={n}": v for (b, n), v in failures.items()}}
    return section


def _join_runs(specs: list[BrokerSpec], runs: int, sizes: tuple[int, ...]
               ) -> tuple[dict[tuple[str, int], list[float]], dict[tuple[str, int], str]]:
    """Milliseconds per (broker, size), one fresh broker per run; failures by key."""
    samples: dict[tuple[str, int], list[float]] = {}
    failures: dict[tuple[str, int], str] = {}
    for i in range(runs):
        for spec in (specs if i % 2 == 0 else list(reversed(specs))):
            with start_broker(spec, f"join-{i}") as broker:
                for n in sizes:
                    topic = group = f"join-{n}-{i}"
                    try:
                        _create_topic(broker.bootstrap, topic)
                        wait_for_coordinator_at(broker.bootstrap, group)
                        ms = measure_join(broker.bootstrap, topic, group, n)["seconds"] * 1000
                    except Exception as exc:  # noqa: BLE001 - recorded in the table
                        failures[(spec.name, n)] = f"{type(exc).__name__}: {exc}"
                        progress(NAME, f"{spec.name} N={n} run {i + 1}: FAILED {exc}")
                        continue
                    samples.setdefault((spec.name, n), []).append(ms)
                    progress(NAME, f"{spec.name} N={n} run {i + 1}: {ms:.0f} ms")
    return samples, failures


def rate_section(workload: Workload, specs: list[BrokerSpec], runs: int, groups: int,
                 window: int, warmup_s: float, seconds: float,
                 unavailable: dict[str, str] | None = None) -> Section:
    """Requests per broker CPU-second of `workload` (heartbeats or commits), each broker
    pinned to one core."""
    what = {"heartbeats": ("Heartbeat", "heartbeat"), "commits": ("OffsetCommit", "commit")}
    request, unit = what[workload.name]
    section = Section(
        name=f"classic_{workload.name}",
        title=f"Classic {unit} rate on one broker core",
        description=f"Broker pinned to CPU {BROKER_CPU}, load generator to CPU {CLIENT_CPU}. "
                    f"{groups} single-member classic groups, one connection each, "
                    f"{window} {request} requests in flight per connection; {seconds:.0f} s "
                    f"timed after {warmup_s:.0f} s warm-up (median of runs).",
        columns=[("broker", "broker"), ("per_core_s", f"{workload.name} per broker CPU-second"),
                 ("vs_peer", "per CPU-second vs Tansu"),
                 ("vs_kafka", "per CPU-second vs Kafka"), ("cpu_us", f"broker CPU µs/{unit}"),
                 ("per_s", f"{workload.name}/s wall (median)"), ("best_per_s", "wall (best)"),
                 ("rss_mib", "broker peak RSS MiB"), ("runs", "runs"), ("status", "status")])
    section.notes = [
        (f"The capacity of one broker core is {workload.name} per CPU-second of the broker "
         "process (user+system time of all its threads from /proc during the timed window; "
         "for Kafka that includes JIT compilation and GC). The wall-clock rate also depends "
         "on how much of its core the broker gets on a shared machine and on the load "
         "generator; it is shown for reference."),
        ("Kafka handles one request per connection at a time (it stops reading a connection "
         "until the response is sent); the others keep theirs in flight."),
    ]
    if workload is COMMITS:
        section.notes.append(
            "Each OffsetCommit (v9 at most: topics by name) carries the member's "
            f"generation and member id and one offset of `{TOPIC}` partition 0; every commit "
            "is appended to `__consumer_offsets` (groupcoord: --fsync interval; Kafka: its "
            "default flush policy, no fsync per append; Tansu: in-memory storage).")
    samples, failures = _rate_runs(workload, specs, runs, groups, window, warmup_s, seconds)
    for spec in specs:
        got = samples.get(spec.name, [])
        row: dict[str, Any] = {"broker": spec.name, "runs": len(got),
                               "status": failures.get(spec.name, "ok")}
        if got:
            row.update(per_s=median([s["per_s"] for s in got]),
                       best_per_s=max(s["per_s"] for s in got),
                       cpu_us=median([s["broker_cpu_s"] / s["requests"] * 1e6
                                      for s in got]),
                       rss_mib=max(s["rss_mib"] for s in got))
            row["per_core_s"] = 1e6 / row["cpu_us"]
        section.rows.append(row)
    section.rows.extend(_pending(unavailable or {}))
    add_relative(section.rows, "per_core_s")
    section.raw = {"runs": samples, "failures": failures}
    return section


def _rate_runs(workload: Workload, specs: list[BrokerSpec], runs: int, groups: int,
               window: int, warmup_s: float, seconds: float
               ) -> tuple[dict[str, list[dict[str, float]]], dict[str, str]]:
    """Per broker, the measurements of each run (fresh pinned broker); failures by name."""
    samples: dict[str, list[dict[str, float]]] = {}
    failures: dict[str, str] = {}
    previous = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {CLIENT_CPU})
    try:
        for i in range(runs):
            for spec in (specs if i % 2 == 0 else list(reversed(specs))):
                try:
                    with start_broker(spec, f"{workload.name}-{i}") as broker:
                        note = clients.create_topic(broker.bootstrap, TOPIC)
                        if note:
                            progress(NAME, f"{spec.name}: {note}")
                        for group in group_ids(groups):
                            wait_for_coordinator_at(broker.bootstrap, group)
                        out = asyncio.run(measure_rate(
                            LOOPBACK, broker.port, workload, groups, window, warmup_s,
                            seconds, broker.cpu_seconds))
                        out["rss_mib"] = broker.rss_peak_mib() or float("nan")
                        if not out["requests"]:
                            raise RuntimeError(f"no {workload.name} answered in the "
                                               f"{seconds:g} s timed window")
                except Exception as exc:  # noqa: BLE001 - recorded in the table
                    failures[spec.name] = f"{type(exc).__name__}: {exc}"
                    progress(NAME, f"{spec.name} {workload.name} run {i + 1}: FAILED {exc}")
                    continue
                samples.setdefault(spec.name, []).append(out)
                progress(NAME, f"{spec.name} {workload.name} run {i + 1}: "
                               f"{out['per_s']:,.0f}/s wall, "
                               f"{out['broker_cpu_s'] / out['requests'] * 1e6:.0f} µs CPU each")
    finally:
        os.sched_setaffinity(0, previous)
    return samples, failures


def run(ctx: BenchContext) -> Section:
    """`bench.run_all` section: classic join time."""
    return join_section(_tune(ctx.brokers, None), ctx.runs, ctx.join_sizes,
                        dict(ctx.unavailable))


def run_heartbeats(ctx: BenchContext) -> Section:
    """`bench.run_all` section: heartbeats per broker CPU-second."""
    return _run_rate(ctx, HEARTBEATS)


def run_commits(ctx: BenchContext) -> Section:
    """`bench.run_all` section: offset commits per broker CPU-second."""
    return _run_rate(ctx, COMMITS)


def _run_rate(ctx: BenchContext, workload: Workload) -> Section:
    return rate_section(workload, _tune(ctx.brokers, BROKER_CPU), ctx.runs,
                        ctx.group_connections, ctx.group_window, ctx.group_warmup_s,
                        ctx.group_seconds, dict(ctx.unavailable))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_classic_groups",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", default="groupcoord,kafka,tansu")
    parser.add_argument("--runs", type=int, default=3, help="heartbeat/commit runs per broker")
    parser.add_argument("--join-runs", type=int, default=5, help="join runs per broker")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--hb-groups", type=int, default=16)
    parser.add_argument("--hb-window", type=int, default=32)
    parser.add_argument("--hb-warmup", type=float, default=3.0)
    parser.add_argument("--hb-seconds", type=float, default=5.0)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "classic_groups.json")
    args = parser.parse_args(argv)
    names = args.brokers.split(",")
    sizes = tuple(int(s) for s in args.sizes.split(","))
    free, unavailable = _specs(names, None)
    pinned, _ = _specs(names, BROKER_CPU)
    sections = [join_section(free, args.join_runs, sizes, unavailable)]
    sections += [rate_section(w, pinned, args.runs, args.hb_groups, args.hb_window,
                              args.hb_warmup, args.hb_seconds, unavailable)
                 for w in (HEARTBEATS, COMMITS)]
    _write(args, argv if argv is not None else sys.argv[1:], sections, free)
    return 0


def _write(args: argparse.Namespace, argv: list[str], sections: list[Section],
           specs: list[BrokerSpec]) -> None:
    from bench.machine import machine_info
    from bench.render import table

    command = shlex.join([".venv/bin/python", "-m", "bench.bench_classic_groups", *argv])
    results = {"meta": {"command": command, "machine": machine_info(),
                        "brokers": [s.describe() for s in specs]},
               "sections": [s.to_json() for s in sections]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(scrub(json.dumps(results, indent=2, default=str)) + "\n")
    lines = [f"# {TITLE}", "", f"Produced by `{command}` (results: `{rel(args.out)}`).", ""]
    for s in sections:
        lines += [f"## {s.title}", "", s.description, "",
                  table([list(c) for c in s.columns], s.rows), ""]
        lines += [f"- {note}" for note in s.notes] + ([""] if s.notes else [])
    args.out.with_suffix(".md").write_text(scrub("\n".join(lines)))
    progress(NAME, f"wrote {rel(args.out)} and {rel(args.out.with_suffix('.md'))}")


if __name__ == "__main__":
    sys.exit(main())
