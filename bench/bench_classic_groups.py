"""Classic consumer groups: formation time and heartbeat rate, groupcoord vs Tansu.

``python -m bench.bench_classic_groups`` writes ``bench/results/classic_groups.json`` and
``bench/results/classic_groups.md``. Two measurements, each broker in the same run:

- **Join time**: N confluent-kafka consumers (N = 1, 10, 50) form a new group over a
  60-partition topic; time from the last member's first JoinGroup to every member having
  its assignment (`bench/group_join.py`). groupcoord runs with
  ``--group-initial-rebalance-delay-ms 0`` (Kafka's default delay is 3 s; Tansu has none).
- **Heartbeat rate**: the broker is pinned to one core (``taskset``) and the load
  generator to the other; single-member groups on separate connections each keep a window
  of Heartbeat requests in flight (`bench/group_wire.py`). Reported: heartbeats/s and
  broker CPU µs per heartbeat.

The modules also expose ``NAME``/``TITLE``/``run(ctx)`` so ``bench.run_all`` can include
them as sections.
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

from bench.brokers import BrokerSpec, GroupcoordBroker, TansuBroker, start_broker
from bench.common import LOOPBACK, RESULTS_DIR, Section, median, progress, rel, scrub
from bench.context import BenchContext
from bench.group_join import measure_join
from bench.group_wire import measure_heartbeats

NAME = "classic_groups"
TITLE = "Classic consumer groups"
SIZES = (1, 10, 50)
JOIN_PARTITIONS = 60
BROKER_CPU, CLIENT_CPU = 1, 0


class Tuned(BrokerSpec):
    """Another spec's broker with extra flags and, optionally, pinned to one CPU."""

    def __init__(self, base: BrokerSpec, extra: list[str], cpu: int | None = None) -> None:
        self.base, self.extra, self.cpu = base, extra, cpu
        self.name = base.name

    def available(self) -> tuple[bool, str]:
        return self.base.available()

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


def _specs(names: list[str], cpu: int | None) -> list[BrokerSpec]:
    specs: list[BrokerSpec] = []
    if "groupcoord" in names:
        specs.append(Tuned(GroupcoordBroker(), ["--group-initial-rebalance-delay-ms", "0"],
                           cpu))
    if "tansu" in names:
        specs.append(Tuned(TansuBroker(), [], cpu))
    return [s for s in specs if s.available()[0]]


def _create_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=JOIN_PARTITIONS,
                                            replication_factor=1)])
    futures[topic].result(timeout=30)


def join_section(specs: list[BrokerSpec], runs: int, sizes: tuple[int, ...]) -> Section:
    section = Section(
        name="classic_join", title="Classic group join time",
        description=f"N confluent-kafka consumers form a new group over a {JOIN_PARTITIONS}-"
                    "partition topic: time from the last member's first JoinGroup to every "
                    "member having its assignment (median of runs).",
        notes=[("groupcoord runs with --group-initial-rebalance-delay-ms 0; Tansu has no such "
               "setting and holds the first join for about half the session timeout "
               "(10 s here), hence its ~5 s."),
               ("With no initial delay the first members can complete a generation before "
                "the rest arrive; the next one then waits for every member to rejoin. "
                "librdkafka's debug log (cgrp) shows members answered REBALANCE_IN_PROGRESS "
                "on SyncGroup sending their next JoinGroup about 1.9 s later, which is the "
                "bimodal ~0.1 s / ~1.9 s spread of groupcoord's runs.")],
        columns=[("broker", "broker"), ("members", "members"), ("median_ms", "median ms"),
                 ("vs_peer", "time vs Tansu"), ("min_ms", "min ms"), ("max_ms", "max ms"),
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
    _relative(section.rows, "median_ms", "members")
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
                        ms = measure_join(broker.bootstrap, topic, group, n)["seconds"] * 1000
                    except Exception as exc:  # noqa: BLE001 - recorded in the table
                        failures[(spec.name, n)] = f"{type(exc).__name__}: {exc}"
                        progress(NAME, f"{spec.name} N={n} run {i + 1}: FAILED {exc}")
                        continue
                    samples.setdefault((spec.name, n), []).append(ms)
                    progress(NAME, f"{spec.name} N={n} run {i + 1}: {ms:.0f} ms")
    return samples, failures


def heartbeat_section(specs: list[BrokerSpec], runs: int, groups: int, window: int,
                      seconds: float) -> Section:
    section = Section(
        name="classic_heartbeat", title="Classic heartbeat rate on one broker core",
        description=f"Broker pinned to CPU {BROKER_CPU}, load generator to CPU {CLIENT_CPU}. "
                    f"{groups} single-member classic groups, one connection each, "
                    f"{window} Heartbeat requests in flight per connection; {seconds:.0f} s "
                    "timed after 1 s warm-up (median of runs).",
        columns=[("broker", "broker"), ("per_core_s", "heartbeats per broker CPU-second"),
                 ("vs_peer", "per CPU-second vs Tansu"), ("cpu_us", "broker CPU µs/heartbeat"),
                 ("per_s", "heartbeats/s wall (median)"), ("best_per_s", "wall (best)"),
                 ("runs", "runs"), ("status", "status")])
    section.notes = [
        ("The capacity of one broker core is heartbeats per CPU-second of the broker process "
        "(user+system time from /proc during the timed window). The wall-clock rate also "
        "depends on how much of its core the broker gets on a shared machine and on the "
        "load generator; it is shown for reference.")]
    samples, failures = _heartbeat_runs(specs, runs, groups, window, seconds)
    for spec in specs:
        got = samples.get(spec.name, [])
        row: dict[str, Any] = {"broker": spec.name, "runs": len(got),
                               "status": failures.get(spec.name, "ok")}
        if got:
            row.update(per_s=median([s["per_s"] for s in got]),
                       best_per_s=max(s["per_s"] for s in got),
                       cpu_us=median([s["broker_cpu_s"] / s["heartbeats"] * 1e6
                                      for s in got]))
            row["per_core_s"] = 1e6 / row["cpu_us"]
        section.rows.append(row)
    _relative(section.rows, "per_core_s")
    section.raw = {"runs": samples, "failures": failures}
    return section


def _heartbeat_runs(specs: list[BrokerSpec], runs: int, groups: int, window: int,
                    seconds: float) -> tuple[dict[str, list[dict[str, float]]], dict[str, str]]:
    """Per broker, the measurements of each run (fresh pinned broker); failures by name."""
    samples: dict[str, list[dict[str, float]]] = {}
    failures: dict[str, str] = {}
    previous = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {CLIENT_CPU})
    try:
        for i in range(runs):
            for spec in (specs if i % 2 == 0 else list(reversed(specs))):
                try:
                    with start_broker(spec, f"heartbeat-{i}") as broker:
                        out = asyncio.run(measure_heartbeats(
                            LOOPBACK, broker.port, groups, window, 1.0, seconds,
                            broker.cpu_seconds))
                except Exception as exc:  # noqa: BLE001 - recorded in the table
                    failures[spec.name] = f"{type(exc).__name__}: {exc}"
                    progress(NAME, f"{spec.name} heartbeat run {i + 1}: FAILED {exc}")
                    continue
                samples.setdefault(spec.name, []).append(out)
                progress(NAME, f"{spec.name} heartbeat run {i + 1}: {out['per_s']:,.0f}/s")
    finally:
        os.sched_setaffinity(0, previous)
    return samples, failures


def _relative(rows: list[dict[str, Any]], metric: str, match: str | None = None) -> None:
    for row in rows:
        peer = next((r for r in rows if r["broker"] == "tansu"
                     and (match is None or r.get(match) == row.get(match))), None)
        if peer and isinstance(row.get(metric), float) and peer.get(metric):
            row["vs_peer"] = f"{row[metric] / peer[metric]:.2f}x"


def run(ctx: BenchContext) -> Section:
    """`bench.run_all` entry point: the join-time section (heartbeats: run this module)."""
    names = [s.name for s in ctx.brokers]
    return join_section(_specs(names, None), ctx.runs, SIZES)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_classic_groups",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", default="groupcoord,tansu")
    parser.add_argument("--runs", type=int, default=3, help="heartbeat runs per broker")
    parser.add_argument("--join-runs", type=int, default=5, help="join runs per broker")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--hb-groups", type=int, default=16)
    parser.add_argument("--hb-window", type=int, default=32)
    parser.add_argument("--hb-seconds", type=float, default=5.0)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "classic_groups.json")
    args = parser.parse_args(argv)
    names = args.brokers.split(",")
    sizes = tuple(int(s) for s in args.sizes.split(","))
    sections = [join_section(_specs(names, None), args.join_runs, sizes),
                heartbeat_section(_specs(names, BROKER_CPU), args.runs, args.hb_groups,
                                  args.hb_window, args.hb_seconds)]
    _write(args, argv if argv is not None else sys.argv[1:], sections, _specs(names, None))
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
