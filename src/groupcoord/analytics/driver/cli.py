"""``groupcoord analyze {run,dump,gen-fixture,bench,why}``: the command line of the pipeline.

``main(argv)`` returns a process exit code; ``groupcoord.cli`` dispatches ``analyze`` to it
and ``python -m groupcoord.analytics`` runs it directly (also under ``spark-submit``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from groupcoord.logformat.internal_topics import OFFSETS_TOPIC

if TYPE_CHECKING:
    from groupcoord.analytics.driver.pipeline import RunConfig


def _iso_ms(text: str) -> int:
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


def _time_ms(text: str) -> int:
    """Epoch milliseconds, or an ISO time (UTC unless it says otherwise)."""
    return int(text) if text.isdigit() else _iso_ms(text)


def _duration_ms(text: str) -> int:
    units = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
    for suffix in ("ms", "s", "m", "h"):
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * units[suffix])
    return int(text)


# The subcommands, for the CLI's "did you mean" answer to a mistyped one.
COMMANDS = ("run", "dump", "gen-fixture", "why", "health", "bench")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="groupcoord analyze",
                                description="Consumer-group analytics over Kafka log dirs")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="ingest -> silver -> gold -> plots and report")
    r.add_argument("--data-dir", required=True, help="a Kafka-layout log dir")
    r.add_argument("--out", required=True)
    r.add_argument("--master", help="Spark master; default: as configured, else local[*]")
    r.add_argument("--since", type=_iso_ms, help="ISO time; commits before it are ignored")
    r.add_argument("--until", type=_iso_ms, help="ISO time; commits after it are ignored")
    r.add_argument("--groups", help="regular expression selecting group ids")
    r.add_argument("--grid", type=_duration_ms, default=10_000, help="lag grid step (10s)")
    r.add_argument("--eval-every", type=_duration_ms,
                   help="Burrow evaluation period (default: a twentieth of the range, between "
                        "the grid step and 60s; 60s with --incremental)")
    r.add_argument("--intervals", type=int, default=10, help="Burrow window size")
    r.add_argument("--min-distance", type=_duration_ms, default=0, help="Burrow min-distance")
    r.add_argument("--allowed-lag", type=int, default=0)
    r.add_argument("--split-bytes", default="128m")
    r.add_argument("--shuffle-partitions", type=int)
    r.add_argument("--no-plots", action="store_true")
    r.add_argument("--incremental", action="store_true",
                   help="append only what is new since --checkpoint, then rebuild gold")
    r.add_argument("--checkpoint", help="checkpoint dir of --incremental runs")
    d = sub.add_parser("dump", help="coordinator records as Kafka-formatter JSON lines")
    d.add_argument("--data-dir", required=True)
    d.add_argument("--types", help="comma-separated record types (default: all known)")
    d.add_argument("--topic", default=OFFSETS_TOPIC,
                   help="__consumer_offsets (default) or __share_group_state")
    g = sub.add_parser("gen-fixture", help="write a synthetic log dir with injected anomalies")
    g.add_argument("--out", required=True)
    g.add_argument("--seconds", type=int, default=600)
    g.add_argument("--partitions", type=int, default=4)
    g.add_argument("--rate", type=int, default=10, help="records per partition per second")
    g.add_argument("--healthy-groups", type=int, default=2)
    w = sub.add_parser("why", help="a group's rebalances and their causes, in words")
    w.add_argument("group")
    src = w.add_mutually_exclusive_group(required=True)
    src.add_argument("--data-dir", help="read the log dir directly (no Spark)")
    src.add_argument("--out", help="read the tables of an `analyze run` output")
    w.add_argument("--at", type=_time_ms, help="ISO time or epoch ms: the story around it")
    w.add_argument("--window", type=_duration_ms, default=300_000,
                   help="with --at: rebalances within this much of it (5m)")
    h = sub.add_parser("health", help="each group's health verdict, in words (no Spark)")
    h.add_argument("--data-dir", required=True, help="a Kafka-layout log dir")
    h.add_argument("--json", action="store_true", help="one JSON document, for scripts")
    h.add_argument("--intervals", type=int, default=10, help="Burrow window size")
    h.add_argument("--allowed-lag", type=int, default=0)
    b = sub.add_parser("bench", help="decode throughput (and Spark ingest with --spark)")
    b.add_argument("--in", dest="data_dir", required=True)
    b.add_argument("--out", help="write the results as JSON here")
    b.add_argument("--spark", action="store_true", help="also time the Spark ingest")
    b.add_argument("--master")
    b.add_argument("--generate", type=int, metavar="COMMITS",
                   help="first write a synthetic __consumer_offsets log of COMMITS records")
    return p


def _run_config(a: argparse.Namespace) -> RunConfig:
    from groupcoord.analytics.driver.pipeline import RunConfig
    from groupcoord.analytics.gold.burrow import BurrowConfig

    # incremental runs cut on the period: it must not change from one run to the next
    every = a.eval_every or (60_000 if a.incremental else 0)
    return RunConfig(a.data_dir, a.out, a.since, a.until, a.groups, a.grid, every,
                     BurrowConfig(a.intervals, a.min_distance, a.allowed_lag), a.split_bytes,
                     not a.no_plots)


def run_config(argv: list[str]) -> RunConfig:
    """The pipeline settings ``analyze run`` takes from its options (``argv`` without the
    ``run``), for running it in a process that has a Spark session already."""
    return _run_config(_parser().parse_args(["run", *argv]))


def _cmd_run(a: argparse.Namespace) -> int:
    if a.incremental != bool(a.checkpoint):
        print("--incremental and --checkpoint DIR go together", file=sys.stderr)
        return 2
    from groupcoord.analytics.driver.run import run
    from groupcoord.analytics.driver.session import build_session

    t0 = time.monotonic()
    print("[    0.0s] starting Spark", flush=True)
    spark = build_session(a.master, shuffle_partitions=a.shuffle_partitions)
    print(f"[{time.monotonic() - t0:7.1f}s] Spark {spark.version} on {spark.sparkContext.master}",
          flush=True)
    cfg = _run_config(a)
    if a.incremental:
        from groupcoord.analytics.driver.incremental import make_ingest

        summary = run(spark, cfg, lambda line: print(line, flush=True), t0,
                      make_ingest(a.checkpoint))
    else:
        summary = run(spark, cfg, lambda line: print(line, flush=True), t0)
    print(json.dumps({"groups": {g: v["status"] for g, v in summary["groups"].items()},
                      "rows": summary["rows"], "out": a.out}, indent=2))
    return 0


def _cmd_dump(a: argparse.Namespace) -> int:
    from groupcoord.analytics.read.dump import write_dump

    types = [int(t) for t in a.types.split(",")] if a.types else None
    try:
        write_dump(a.data_dir, sys.stdout, types, a.topic)
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into head: stop quietly, as cat does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0


def _cmd_fixture(a: argparse.Namespace) -> int:
    from groupcoord.analytics.fixture.generate import generate
    from groupcoord.analytics.fixture.spec import FixtureSpec

    m = generate(a.out, FixtureSpec(a.seconds, a.partitions, a.rate,
                                    healthy_groups=a.healthy_groups))
    print(f"wrote {a.out}: {len(m['groups'])} groups, {m['commit_rows']} commits, "
          f"{m['data_batches']} data batches; manifest {Path(a.out) / 'manifest.json'}")
    return 0


def _cmd_bench(a: argparse.Namespace) -> int:
    from groupcoord.analytics.driver.bench import bench, write_bench_log

    if a.generate:
        t = time.monotonic()
        n = write_bench_log(a.data_dir, a.generate)
        print(f"wrote {n} commits to {a.data_dir} in {time.monotonic() - t:.1f}s", flush=True)
    result = bench(a.data_dir, spark=a.spark, master=a.master)
    text = json.dumps(result, indent=2)
    if a.out:
        Path(a.out).write_text(text)
    print(text)
    return 0


def _cmd_health(a: argparse.Namespace) -> int:
    """Exit 0 when every group is OK, 1 when one is WARN or worse (for scripts)."""
    from groupcoord.analytics.driver.health_data import load
    from groupcoord.analytics.gold.burrow import BurrowConfig
    from groupcoord.analytics.report import health

    inputs = load(a.data_dir, BurrowConfig(a.intervals, 0, a.allowed_lag))
    verdicts = health.evaluate(inputs)
    if a.json:
        print(json.dumps({"start_ms": inputs.start_ms, "end_ms": inputs.end_ms,
                          "groups": [v.as_json() for v in verdicts]}, indent=2))
    else:
        print(f"{len(verdicts)} groups, {story_span(inputs.start_ms, inputs.end_ms)}")
        print("\n".join(health.terminal_lines(verdicts)))
    return 0 if all(v.status in ("OK", "NOTFOUND") for v in verdicts) else 1


def story_span(lo: int, hi: int) -> str:
    from groupcoord.analytics.report import story

    return (f"{story.fmt_ts(lo)} to {story.fmt_ts(hi)} UTC "
            f"({story.fmt_seconds(hi - lo)})")


def _cmd_why(a: argparse.Namespace) -> int:
    from groupcoord.analytics.driver import why

    history = (why.from_data_dir(a.data_dir, a.group) if a.data_dir
               else why.from_out_dir(a.out, a.group))
    print("\n".join(why.tell(history, a.at, a.window)))
    return 0 if history.rebalances else 1


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    handlers = {"run": _cmd_run, "dump": _cmd_dump, "gen-fixture": _cmd_fixture,
                "bench": _cmd_bench, "why": _cmd_why, "health": _cmd_health}
    from groupcoord.analytics.driver.health_data import NoData, check_data_dir

    data_dir = getattr(a, "data_dir", None) if a.cmd in ("run", "dump", "why", "health") \
        else None
    try:
        if data_dir is not None:
            check_data_dir(data_dir)
        return handlers[a.cmd](a)
    except NoData as e:
        print(f"groupcoord analyze {a.cmd}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
