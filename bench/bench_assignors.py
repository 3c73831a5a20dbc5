"""Server-side assignor benchmark: uniform and range, full and incremental assignments.

Run: ``python -m bench.bench_assignors`` (``--quick`` for the two smaller sizes only).
Writes ``bench/results/assignors.json`` and ``bench/results/assignors.md``.

Cases, for (members, partitions) in (100, 1,000), (1,000, 10,000), (10,000, 100,000):

* homogeneous: 10 topics of ``partitions / 10`` each, every member subscribes to all;
* heterogeneous: the same topics, member ``i`` subscribes to topics ``i .. i+4`` (mod 10);
* full: every member starts with an empty target;
* incremental: ``members - 1`` members hold a balanced target (computed by the same
  assignor) and one new member joins.

Only ``assign`` is timed; building the ``GroupSpec`` is the caller's work and is excluded.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.machine import cpu_model
from groupcoord.coordinator.assignors import ASSIGNORS, GroupSpec, MemberSpec

RESULTS_DIR = Path(__file__).resolve().parent / "results"
SIZES = [(100, 1_000), (1_000, 10_000), (10_000, 100_000)]
NUM_TOPICS = 10
GOAL_MS = 10.0  # incremental uniform assignment at 1,000 members x 10,000 partitions


class Topics:
    def __init__(self, counts: dict[bytes, int]) -> None:
        self.counts = counts

    def num_partitions(self, topic_id: bytes) -> int:
        return self.counts.get(topic_id, -1)


def topic_ids() -> list[bytes]:
    return [(0x5A00 + i).to_bytes(2, "big") * 8 for i in range(NUM_TOPICS)]


def subscriptions(members: int, homogeneous: bool) -> list[frozenset[bytes]]:
    ids = topic_ids()
    if homogeneous:
        return [frozenset(ids)] * members
    return [frozenset(ids[(i + k) % NUM_TOPICS] for k in range(5)) for i in range(members)]


def make_group(
    subs: list[frozenset[bytes]], targets: dict[str, dict[bytes, set[int]]], homogeneous: bool
) -> GroupSpec:
    members = {}
    for i, sub in enumerate(subs):
        member_id = f"member-{i:06d}"
        current = targets.get(member_id, {})
        assignment = {t: frozenset(ps) for t, ps in current.items()}
        members[member_id] = MemberSpec(member_id, None, None, sub, assignment)
    return GroupSpec(members=members, homogeneous=homogeneous)


def time_assign(assign: Callable[[], object], reps: int) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU milliseconds of each repetition (CPU time ignores waiting for a
    core, so it stays meaningful on a busy machine)."""
    wall, cpu = [], []
    for _ in range(reps):
        start, start_cpu = time.perf_counter(), time.process_time()
        assign()
        cpu.append((time.process_time() - start_cpu) * 1000.0)
        wall.append((time.perf_counter() - start) * 1000.0)
    return wall, cpu


def run_case(name: str, members: int, partitions: int, homogeneous: bool, mode: str) -> dict:
    assignor = ASSIGNORS[name]
    topics = Topics(dict.fromkeys(topic_ids(), partitions // NUM_TOPICS))
    subs = subscriptions(members, homogeneous)
    targets: dict[str, dict[bytes, set[int]]] = {}
    if mode == "incremental":
        # A balanced group of members - 1; then one more member joins with nothing.
        targets = assignor.assign(make_group(subs[:-1], {}, homogeneous), topics)
    group = make_group(subs, targets, homogeneous)
    reps = {100: 30, 1_000: 15, 10_000: 5}[members]
    samples, cpu = time_assign(lambda: assignor.assign(group, topics), reps)
    result = assignor.assign(group, topics)
    moved = sum(
        len(ps - targets.get(m, {}).get(t, set())) for m, a in result.items() for t, ps in a.items()
    )
    return {
        "assignor": name,
        "members": members,
        "partitions": partitions,
        "subscription": "homogeneous" if homogeneous else "heterogeneous",
        "mode": mode,
        "reps": reps,
        "median_ms": round(statistics.median(samples), 3),
        "min_ms": round(min(samples), 3),
        "max_ms": round(max(samples), 3),
        "cpu_median_ms": round(statistics.median(cpu), 3),
        "cpu_min_ms": round(min(cpu), 3),
        "partitions_moved": moved if mode == "incremental" else None,
    }


def machine() -> dict:
    return {
        "cpu_model": cpu_model(),
        "cpu_cores": os.cpu_count(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "os": f"{platform.system()} {platform.release()} {platform.machine()}",
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        # Other work on the machine inflates timings; the load average says how busy it was.
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def render_markdown(doc: dict) -> str:
    m = doc["machine"]
    lines = [
        "## Server-side assignors",
        "",
        f"Command: `{doc['command']}`  ",
        (
            f"Machine: {m['cpu_model']}, {m['cpu_cores']} cores, {m['python']}, {m['date']}, "
            f"load average at start {m['load_average'][0]}, at end {doc['load_average_end'][0]}"
        ),
        "",
        (
            "Time of one `assign` call (the `GroupSpec` is built beforehand). Homogeneous: "
            f"{NUM_TOPICS} topics, every member subscribes to all. Heterogeneous: member i "
            "subscribes to 5 of the 10 topics (i .. i+4). Incremental: one member joins a "
            "balanced group of members - 1 (the existing target is the input); `moved` counts "
            "the partitions whose owner changed."
        ),
        "",
        (
            "| assignor | members | partitions | subscription | mode | median ms | min ms "
            "| max ms | CPU median ms | CPU min ms | moved |"
        ),
        "|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in doc["results"]:
        moved = "" if r["partitions_moved"] is None else str(r["partitions_moved"])
        lines.append(
            f"| {r['assignor']} | {r['members']:,} | {r['partitions']:,} | {r['subscription']} "
            f"| {r['mode']} | {r['median_ms']:.2f} | {r['min_ms']:.2f} | {r['max_ms']:.2f} "
            f"| {r['cpu_median_ms']:.2f} | {r['cpu_min_ms']:.2f} | {moved} |"
        )
    goal = doc["goal"]
    lines += [
        "",
        (
            f"Goal: incremental uniform (homogeneous) at 1,000 x 10,000 under {GOAL_MS:g} ms: "
            f"median CPU time {goal['cpu_median_ms']} ms (wall clock {goal['wall_median_ms']} ms)"
            f" -> {'met' if goal['met'] else 'NOT met'}."
        ),
        "",
        "Notes:",
        "",
        "- `median/min/max ms` are wall clock per call; `CPU` columns are process CPU time,",
        "  which does not count waiting for a core and so is the steadier number when other",
        "  work shares the machine (compare the load average with the core count). Both",
        "  include Python's cyclic GC, whose full collections grow with the live heap (the",
        "  incremental cases hold the previous target).",
        "- Uniform homogeneous works on per-topic int sets with C-level set algebra: its",
        "  Python-level work is one step per (member, topic), so Kafka's algorithm itself meets",
        "  the goal and no separate incremental fast path is used.",
        "- Heterogeneous uniform keeps partitions with set operations too, but hands out",
        "  and rebalances partitions one at a time as Kafka's balancing loop does; range is",
        "  not sticky and rebuilds every range (`moved` is large by design).",
        "",
    ]
    return "\n".join(lines)


def run_all(sizes: list[tuple[int, int]]) -> list[dict]:
    results = []
    started = time.perf_counter()
    for members, partitions in sizes:
        for name in ("uniform", "range"):
            for homogeneous in (True, False):
                for mode in ("full", "incremental"):
                    row = run_case(name, members, partitions, homogeneous, mode)
                    results.append(row)
                    print(
                        f"[{time.perf_counter() - started:6.1f}s] {name:7s} {members:>6,} x "
                        f"{partitions:>7,} {row['subscription']:13s} {mode:11s} "
                        f"median {row['median_ms']:9.2f} ms (min {row['min_ms']:.2f})",
                        flush=True,
                    )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the 10,000-member cases")
    args = parser.parse_args(argv)
    sizes = SIZES[:2] if args.quick else SIZES
    info = machine()
    results = run_all(sizes)
    goal_row = next(
        (
            r
            for r in results
            if (r["assignor"], r["members"], r["subscription"], r["mode"])
            == ("uniform", 1_000, "homogeneous", "incremental")
        ),
        None,
    )
    # The goal is about the work an assignment costs: judge it on CPU time, which other
    # processes competing for the cores do not inflate; the wall-clock median is kept too.
    goal_ms = goal_row["cpu_median_ms"] if goal_row else None
    goal_wall_ms = goal_row["median_ms"] if goal_row else None
    command = "python -m bench.bench_assignors" + (" --quick" if args.quick else "")
    doc = {
        "command": command,
        "machine": info,
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "goal": {
            "cpu_median_ms": goal_ms,
            "wall_median_ms": goal_wall_ms,
            "target_ms": GOAL_MS,
            "met": bool(goal_ms and goal_ms < GOAL_MS),
        },
        "results": results,
    }
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "assignors.json").write_text(json.dumps(doc, indent=2) + "\n")
    (RESULTS_DIR / "assignors.md").write_text(render_markdown(doc))
    print("wrote bench/results/assignors.json and bench/results/assignors.md", file=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
