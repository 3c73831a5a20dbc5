"""KIP-848 join scaling: per-join broker CPU, the longest event-loop stall, and a concurrent
probe group's heartbeat latency while groups of 10 / 100 / 1,000 / 3,000 members join.

``python -m bench.bench_join_scale [--sizes 10,100,1000,3000] [--compare-src DIR]`` starts a
fresh ``groupcoord serve`` per size and variant, creates a topic with one partition per
member, and drives the members over one blocking connection (the protocol-following
members of ``bench_consumer_groups``): first every member sends its joining heartbeat (the
join pass, whose broker CPU divided by the joins is the per-join CPU), then rounds of
heartbeats at most every ``ROUND_MS`` until every partition is owned by exactly one member
at one epoch. Groups smaller than ``MIN_JOINS`` members are repeated (fresh group ids) so the
join pass spans enough CPU ticks of ``/proc`` to measure.

A probe process, started before the joins, keeps two other connections busy: ApiVersions
back to back (its round trip is the loop-lag probe: the longest one is the longest time the
broker's event loop did not answer) and, every ``PROBE_HEARTBEAT_MS``, a heartbeat of a
one-member probe group on its own topic. Only samples inside the join phase count. Around
each ApiVersions the probe reads the broker's event-loop thread's CPU time and its time
waiting for a core (``/proc/<pid>/task/<pid>/schedstat``): the most loop CPU within one
round trip is the longest stretch of broker work that held the loop, which other load on
the machine does not inflate (the round trip itself includes waiting for a core).

Variants, in one run: ``interval 0`` (a target computed on every joining heartbeat, as
before assignment batching), ``interval 1000`` (Kafka 4.4's default
``group.consumer.assignment.interval.ms``: one target per interval for every change since)
and ``interval 1000 + offload`` (the same with ``group.consumer.assignor.offload.enable``: the
target computed on the runtime's worker thread, its records written by a later operation);
``--compare-src`` adds the broker of another checkout's ``src/`` with its own defaults.
Results: stdout, ``bench/results/join_scale.md`` and ``join_scale.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.bench_consumer_groups import TOPIC, WireMembers
from bench.brokers import GroupcoordBroker, RunningBroker, start_broker
from bench.common import RESULTS_DIR, percentile, progress
from bench.coordinator import wait_for_group_coordinator
from bench.machine import cpu_model, machine_load
from groupcoord.cli.wire_client import WireClient
from groupcoord.wire.generated.api_versions import ApiVersionsRequest
from groupcoord.wire.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    TopicPartitions,
)
from groupcoord.wire.generated.create_topics import CreatableTopic, CreateTopicsRequest

SECTION = "join_scale"
SIZES = (10, 100, 1_000, 3_000)
MIN_JOINS = 2_000
ROUND_MS = 100
MAX_ROUNDS = 400
PROBE_TOPIC = "join-scale-probe"
PROBE_GROUP = "join-scale-probe"
PROBE_HEARTBEAT_MS = 20
CREATE_TIMEOUT_S = 600.0
INTERVAL = "group.consumer.assignment.interval.ms"
OFFLOAD = "group.consumer.assignor.offload.enable"
VARIANTS = ("interval 0", "interval 1000", "interval 1000 + offload")
# A slow join pass must not outlast the first members' sessions (they do not heartbeat
# until every member has joined).
SESSIONS = {"group.consumer.max.session.timeout.ms": "600000",
            "group.consumer.session.timeout.ms": "600000"}


class ScaleBroker(GroupcoordBroker):
    """groupcoord with group settings, optionally from another checkout's sources."""

    def __init__(self, name: str, group_configs: dict[str, str], src: Path | None) -> None:
        super().__init__(name=name)
        self.group_configs, self.src = group_configs, src

    def command(self, port: int, data_dir: Path) -> list[str]:
        extra = [a for k, v in self.group_configs.items() for a in ("--group-config", f"{k}={v}")]
        return [*super().command(port, data_dir), *extra]

    def env(self) -> dict[str, str]:
        env = super().env()
        if self.src is not None:
            env["PYTHONPATH"] = str(self.src)
        return env


# -- the probe process ------------------------------------------------------------------------

def loop_schedstat(pid: int) -> tuple[float, float]:
    """(s on a CPU, s waiting for one) of the broker's main thread, its event loop (Linux)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/schedstat") as f:
            on_cpu, waiting, _ = f.read().split()
    except OSError:  # the broker is gone
        return float("nan"), float("nan")
    return int(on_cpu) / 1e9, int(waiting) / 1e9


def probe_main(bootstrap: str, out: Path, stop: Path, pid: int) -> None:
    """Sample ApiVersions round trips (with the broker loop's CPU and run-queue wait during
    each) and probe-group heartbeats until `stop` exists."""
    pings: list[tuple[float, float, float, float]] = []
    beats: list[tuple[float, float]] = []
    with WireClient(bootstrap) as ping, WireClient(bootstrap) as hb:
        member_id, epoch, topic_id = "probe-member", 0, b"\0" * 16
        owned: list[int] = []
        next_beat = 0.0
        out.with_suffix(".ready").write_text("ready")
        while not stop.exists():
            cpu0, wait0 = loop_schedstat(pid)
            t0 = time.monotonic()
            ping.request(ApiVersionsRequest(), 0)
            t1 = time.monotonic()
            cpu1, wait1 = loop_schedstat(pid)
            pings.append((t0, t1 - t0, cpu1 - cpu0, wait1 - wait0))
            if t1 < next_beat:
                continue
            next_beat = t1 + PROBE_HEARTBEAT_MS / 1000
            req = ConsumerGroupHeartbeatRequest(
                group_id=PROBE_GROUP, member_id=member_id, member_epoch=epoch,
                rebalance_timeout_ms=300_000 if epoch == 0 else -1,
                subscribed_topic_names=[PROBE_TOPIC] if epoch == 0 else None,
                topic_partitions=[TopicPartitions(topic_id=topic_id, partitions=owned)])
            resp, _ = hb.request(req, 1)
            t2 = time.monotonic()
            beats.append((t1, t2 - t1))
            if resp.error_code == 0:
                epoch = resp.member_epoch
                if resp.assignment is not None:
                    tps = resp.assignment.topic_partitions
                    owned = sorted(p for tp in tps for p in tp.partitions)
                    topic_id = bytes(tps[0].topic_id) if tps else topic_id
    out.write_text(json.dumps({"pings": pings, "beats": beats}))


class Probe:
    """The probe process: started before the joins, read back after."""

    def __init__(self, bootstrap: str, workdir: Path, pid: int) -> None:
        self.out, self.stop = workdir / "probe.json", workdir / "probe.stop"
        for f in (self.out, self.stop, self.out.with_suffix(".ready")):
            f.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.bench_join_scale", "--probe", bootstrap,
             "--probe-out", str(self.out), "--probe-stop", str(self.stop),
             "--probe-pid", str(pid)])
        deadline = time.monotonic() + 60
        while not self.out.with_suffix(".ready").exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the probe process did not start")
            time.sleep(0.01)

    def finish(self) -> dict[str, list[list[float]]]:
        self.stop.write_text("stop")
        self.proc.wait(timeout=60)
        data: dict[str, list[list[float]]] = json.loads(self.out.read_text())
        return data


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    """CreateTopics on a connection of its own that waits as long as it takes: thousands of
    partition directories can outlast a client library's 60 s socket timeout on a busy disk."""
    with WireClient(bootstrap, timeout_s=CREATE_TIMEOUT_S) as admin:
        request = CreateTopicsRequest(topics=[CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=1)],
            timeout_ms=int(CREATE_TIMEOUT_S * 1000))
        response, _ = admin.request(request, 7)
        code = response.topics[0].error_code
        if code != 0:
            raise RuntimeError(f"CreateTopics {name}: error {code}")


# -- one run ----------------------------------------------------------------------------------

def settled(groups: list[WireMembers], partitions: int) -> bool:
    """Every group: one epoch, nothing pending, every partition owned exactly once."""
    for g in groups:
        if not g.settled():
            return False
        owned = [p for m in g.members for p in m.owned]
        if len(owned) != partitions or len(set(owned)) != partitions:
            return False
    return True


def one_run(spec: ScaleBroker, members: int, workdir: Path) -> dict[str, Any]:
    reps = max(1, MIN_JOINS // members)
    with start_broker(spec, f"join-scale-{members}") as broker, \
            WireClient(broker.bootstrap) as client:
        for topic, parts in ((TOPIC, members), (PROBE_TOPIC, 1)):
            create_topic(broker.bootstrap, topic, parts)
        groups = [WireMembers(client, f"join-scale-{members}-{r}", members) for r in range(reps)]
        for g in groups:
            wait_for_group_coordinator(client, g.group)
        wait_for_group_coordinator(client, PROBE_GROUP)
        probe = Probe(broker.bootstrap, workdir, broker.proc.pid)
        time.sleep(0.5)  # the probe group joins and settles first
        out = measure(broker, groups, members)
        samples = probe.finish()
    window = (out.pop("start"), out.pop("end"))
    inside = [p for p in samples["pings"] if window[0] <= p[0] <= window[1]]
    pings = [rtt * 1000 for _, rtt, _, _ in inside]
    busiest = max(inside, key=lambda p: p[2], default=None)
    longest = max(inside, key=lambda p: p[1], default=None)
    beats = [rtt * 1000 for t, rtt in samples["beats"] if window[0] <= t <= window[1]]
    nan = float("nan")
    out.update(groups=reps, pings=len(pings), max_stall_ms=max(pings, default=nan),
               max_stall_wait_ms=longest[3] * 1000 if longest else nan,
               max_loop_cpu_ms=busiest[2] * 1000 if busiest else nan,
               ping_p99_ms=percentile(pings, 99) if pings else float("nan"),
               ping_p999_ms=percentile(pings, 99.9) if pings else float("nan"),
               probe_beats=len(beats),
               probe_p99_ms=percentile(beats, 99) if beats else float("nan"),
               probe_max_ms=max(beats, default=float("nan")))
    return out


def measure(broker: RunningBroker, groups: list[WireMembers], members: int) -> dict[str, Any]:
    joins = members * len(groups)
    start = time.monotonic()
    broker.mark_cpu()
    for g in groups:
        for m in g.members:
            g.beat(m)
    join_pass_s = time.monotonic() - start
    join_cpu = broker.cpu_since_mark() or 0.0
    rounds = 0
    while not (settled(groups, members) and rounds > 1):
        rounds += 1
        if rounds > MAX_ROUNDS:
            raise RuntimeError(f"not settled after {MAX_ROUNDS} rounds")
        round_start = time.monotonic()
        for g in groups:
            for m in g.members:
                g.beat(m)
        time.sleep(max(0.0, ROUND_MS / 1000 - (time.monotonic() - round_start)))
    end = time.monotonic()
    total_cpu = broker.cpu_since_mark() or 0.0
    if broker.proc.poll() is not None:
        raise RuntimeError("the broker exited during the run")
    return {"members": members, "joins": joins, "start": start, "end": end,
            "join_pass_ms": join_pass_s * 1000, "join_cpu_us": join_cpu / joins * 1e6,
            "settle_ms": (end - start) * 1000, "rounds": rounds,
            "phase_cpu_us_per_member": total_cpu / joins * 1e6}


# -- report -----------------------------------------------------------------------------------

COLUMNS = [("variant", "broker"), ("members", "members"), ("groups", "groups"),
           ("join_cpu_us", "broker CPU µs per join (join pass)"),
           ("phase_cpu_us_per_member", "broker CPU µs per member, join to settled"),
           ("settle_ms", "join to settled ms"), ("rounds", "rounds"),
           ("max_stall_ms", "longest loop stall ms (max ApiVersions RTT)"),
           ("max_stall_wait_ms", "of it, broker loop waiting for a core ms"),
           ("max_loop_cpu_ms", "most broker loop CPU within one RTT ms"),
           ("ping_p99_ms", "ApiVersions RTT p99 ms"),
           ("ping_p999_ms", "ApiVersions RTT p99.9 ms"),
           ("probe_p99_ms", "probe-group heartbeat p99 ms"),
           ("probe_max_ms", "probe-group heartbeat max ms")]


def fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def write(rows: list[dict[str, Any]], command: str, started: str, loads: list[float]) -> None:
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "join_scale.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = ["## KIP-848 join scaling", "",
             f"Command: `{command}`  ",
             (f"Machine: {cpu_model()}, {os.cpu_count()} cores, CPython "
              f"{sys.version.split()[0]}, {started}, load average at start {loads[0]:.2f}, "
              f"at end {machine_load()[0]:.2f}"), "",
             __doc__.split("\n\n")[1].replace("\n", " "), "",
             "| " + " | ".join(t for _, t in COLUMNS) + " |",
             "|---|" + "---:|" * (len(COLUMNS) - 1)]
    for row in rows:
        lines.append("| " + " | ".join(fmt(row.get(k, "")) for k, _ in COLUMNS) + " |")
    lines += ["", *summary(rows), ""]
    (RESULTS_DIR / f"{SECTION}.md").write_text("\n".join(lines))


def summary(rows: list[dict[str, Any]]) -> list[str]:
    """The goals: per-join CPU and the longest stall within 2x of the 10-member figure;
    the probe group's heartbeat p99 under 20 ms at 3,000 members."""
    out = []
    for variant in dict.fromkeys(r["variant"] for r in rows):
        mine = {r["members"]: r for r in rows if r["variant"] == variant}
        base = mine.get(min(mine))
        if base is None:
            continue
        for key, label in (("join_cpu_us", "per-join CPU"), ("max_stall_ms", "longest stall"),
                           ("max_loop_cpu_ms", "longest broker work on the loop")):
            ratios = {n: r[key] / base[key] for n, r in mine.items() if base[key]}
            worst = max(ratios.values(), default=float("nan"))
            out.append(f"- {variant}: {label} vs {min(mine)} members: " + ", ".join(
                f"{n:,}: {x:.1f}x" for n, x in sorted(ratios.items()))
                + (" (goal <= 2x: met)" if worst <= 2 else " (goal <= 2x: not met)"))
        big = mine.get(max(mine))
        if big is not None:
            ok = big["probe_p99_ms"] < 20
            out.append(f"- {variant}: probe heartbeat p99 at {max(mine):,} members "
                       f"{big['probe_p99_ms']:.2f} ms (goal < 20 ms: {'met' if ok else 'not met'})")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.bench_join_scale")
    p.add_argument("--sizes", default=",".join(map(str, SIZES)))
    p.add_argument("--variants", default=",".join(VARIANTS),
                   help=f"comma-separated, of: {', '.join(VARIANTS)}")
    p.add_argument("--compare-src", type=Path, default=None,
                   help="also run the broker of another checkout's src/ (its own defaults)")
    p.add_argument("--probe", default=None, help=argparse.SUPPRESS)
    p.add_argument("--probe-out", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--probe-stop", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--probe-pid", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.probe:
        probe_main(args.probe, args.probe_out, args.probe_stop, args.probe_pid)
        return 0
    known = {"interval 0": ScaleBroker("interval 0", {**SESSIONS, INTERVAL: "0"}, None),
             "interval 1000": ScaleBroker("interval 1000", SESSIONS, None),
             "interval 1000 + offload": ScaleBroker("interval 1000 + offload",
                                                   {**SESSIONS, OFFLOAD: "true"}, None)}
    chosen = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in known]
    if unknown:
        p.error(f"--variants: unknown {unknown}; known: {', '.join(known)}")
    variants = [known[v] for v in chosen]
    if args.compare_src is not None:
        variants.insert(0, ScaleBroker(f"compare: {args.compare_src.parent.name}", SESSIONS,
                                       args.compare_src.resolve()))
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    loads = machine_load()
    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"join-scale-{os.getpid()}"
    workdir.mkdir(parents=True, exist_ok=True)
    command = "python -m bench.bench_join_scale" + (
        f" --sizes {args.sizes}" if args.sizes != ",".join(map(str, SIZES)) else "") + (
        f" --variants '{args.variants}'" if args.variants != ",".join(VARIANTS) else "") + (
        f" --compare-src <checkout of {args.compare_src.parent.name}>/src"
        if args.compare_src is not None else "")
    rows: list[dict[str, Any]] = []
    for members in (int(s) for s in args.sizes.split(",")):
        for spec in variants:
            row = {"variant": spec.name, **one_run(spec, members, workdir)}
            rows.append(row)
            progress(SECTION, ", ".join(f"{k}={fmt(v)}" for k, v in row.items()))
            write(rows, command, started, loads)  # what is done so far survives a failure
    print("\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
