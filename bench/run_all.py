"""Run every benchmark against every broker and record the results.

``python -m bench.run_all`` (``make bench``) measures groupcoord, Apache Kafka 4.4 and Tansu
side by side, writes ``bench/results/<UTC date>.json`` and regenerates BENCHMARKS.md from it.

A benchmark is a name, a title and ``run(ctx: BenchContext) -> Section``; register it in
``BENCHMARKS`` below.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from bench import bench_classic_groups, bench_share, fetch, kip848_join, produce, startup
from bench.brokers import all_brokers
from bench.common import RESULTS_DIR, Section, progress, rel, scrub
from bench.context import BenchContext
from bench.machine import machine_info, machine_load, wait_for_quiet
from bench.render import DEFAULT_MARKDOWN, write_markdown


class Benchmark(NamedTuple):
    """One section of the results: ``--only`` name, title and what measures it."""

    NAME: str
    TITLE: str
    run: Callable[[BenchContext], Section]


#: Benchmarks in run order.
BENCHMARKS: list[Benchmark] = [
    Benchmark(startup.NAME, startup.TITLE, startup.run),
    Benchmark(produce.NAME, produce.TITLE, produce.run),
    Benchmark(fetch.NAME, fetch.TITLE, fetch.run),
    Benchmark("classic_join", "Classic group join time", bench_classic_groups.run),
    Benchmark("heartbeats", "Classic heartbeat rate", bench_classic_groups.run_heartbeats),
    Benchmark("commits", "Offset commit rate", bench_classic_groups.run_commits),
    Benchmark(kip848_join.NAME, kip848_join.TITLE, kip848_join.run),
    Benchmark(bench_share.NAME, bench_share.TITLE, bench_share.run),
]


def _parse(argv: list[str]) -> argparse.Namespace:
    names = [m.NAME for m in BENCHMARKS]
    parser = argparse.ArgumentParser(prog="python -m bench.run_all", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default=",".join(names),
                        help=f"comma-separated benchmarks to run (default: all of {names})")
    parser.add_argument("--brokers", default="groupcoord,kafka,tansu",
                        help="comma-separated brokers (default: groupcoord,kafka,tansu)")
    parser.add_argument("--records", type=int, default=200_000,
                        help="records per produce/fetch run (default 200000)")
    parser.add_argument("--runs", type=int, default=3,
                        help="runs per broker and setting for throughput (default 3)")
    parser.add_argument("--startup-repeats", type=int, default=20,
                        help="starts per broker for the start-up benchmark (default 20)")
    parser.add_argument("--join-sizes", default="1,10,50",
                        help="classic join: group sizes, comma-separated (default 1,10,50)")
    parser.add_argument("--group-seconds", type=float, default=5.0,
                        help="heartbeat/commit rate: timed seconds per run (default 5)")
    parser.add_argument("--group-warmup", type=float, default=3.0,
                        help="heartbeat/commit rate: untimed warm-up seconds (default 3)")
    parser.add_argument("--kip848-members", type=int, default=100,
                        help="KIP-848 join phase: members of the new group (default 100)")
    parser.add_argument("--groupcoord-fsync", default="interval",
                        help="groupcoord --fsync mode(s), comma-separated, each measured as "
                             "its own broker (never, interval, always; default interval, "
                             "groupcoord's own default)")
    parser.add_argument("--groupcoord-memory", action="store_true",
                        help="also measure groupcoord with --data-dir memory (every log in "
                             "memory, like Tansu's memory:// storage)")
    parser.add_argument("--compare-src", type=Path, default=None, metavar="DIR",
                        help="also measure the broker of another checkout's src/ directory "
                             "(named groupcoord[before=REV]) in the same run: a before/after")
    parser.add_argument("--settle", type=float, default=0.0, metavar="SECONDS",
                        help="wait up to SECONDS for the 1-minute load average to drop below "
                             "the number of cores before starting (default 0: don't wait)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 20000 records, 1 run, 3 starts, joins of 1 and 10, "
                             "2 s group rates, 20 KIP-848 members; saves nothing")
    parser.add_argument("--out", type=Path, default=None,
                        help="results JSON path (default bench/results/<UTC date>.json)")
    parser.add_argument("--markdown", type=Path, default=DEFAULT_MARKDOWN,
                        help="markdown file to regenerate (default BENCHMARKS.md)")
    parser.add_argument("--no-save", action="store_true",
                        help="print tables only; write neither JSON nor markdown")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.runs, args.startup_repeats, args.no_save = 20_000, 1, 3, True
        args.join_sizes, args.group_seconds, args.group_warmup = "1,10", 2.0, 1.0
        args.kip848_members = 20
    unknown = set(args.only.split(",")) - set(names)
    if unknown:
        parser.error(f"unknown benchmark(s) {sorted(unknown)}; known: {names}")
    return args


def _context(args: argparse.Namespace) -> BenchContext:
    modes = [m for m in args.groupcoord_fsync.split(",") if m]
    bad = [m for m in modes if m not in ("never", "interval", "always")]
    if bad or not modes:
        raise SystemExit(f"--groupcoord-fsync: unknown mode(s) {bad}")
    known = all_brokers(modes, args.compare_src, args.groupcoord_memory)
    bases = {"groupcoord", "kafka", "tansu"}
    wanted = [b for b in args.brokers.split(",") if b]
    for name in wanted:
        if name not in bases:
            raise SystemExit(f"unknown broker {name!r}; known: {sorted(bases)}")
    ctx = BenchContext(brokers=[], records=args.records, runs=args.runs,
                       startup_repeats=args.startup_repeats,
                       join_sizes=tuple(int(n) for n in args.join_sizes.split(",") if n),
                       group_seconds=args.group_seconds, group_warmup_s=args.group_warmup,
                       kip848_members=args.kip848_members)
    for name in known:
        if name.split("[", 1)[0] not in wanted:
            continue
        ok, reason = known[name].available()
        if ok:
            ctx.brokers.append(known[name])
        else:
            ctx.unavailable[name] = reason
            progress("setup", f"{name} is not runnable, its column stays pending: {reason}")
    return ctx


def _print_section(section: Section) -> None:
    from bench.render import table

    print(f"\n## {section.title}\n\n{table([list(c) for c in section.columns], section.rows)}\n",
          flush=True)


def _portable(argv: list[str], args: argparse.Namespace) -> list[str]:
    """`argv` as recorded: another checkout's path (``--compare-src``) is named by its
    revision, not by where it sat on the measuring machine."""
    if args.compare_src is None:
        return argv
    from bench.brokers import source_revision

    named = f"<checkout of {source_revision(args.compare_src)}>/src"
    out, skip = [], False
    for arg in argv:
        if skip:
            out.append(named)
            skip = False
        elif arg == "--compare-src":
            out.append(arg)
            skip = True
        elif arg.startswith("--compare-src="):
            out.append(f"--compare-src={named}")
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the selected benchmarks; write JSON and markdown unless told not to."""
    argv = sys.argv[1:] if argv is None else argv
    args = _parse(argv)
    ctx = _context(args)
    if not ctx.brokers:
        print("no broker is runnable; nothing to measure", file=sys.stderr)
        return 1
    progress("setup", "brokers: " + ", ".join(b.name for b in ctx.brokers))
    if args.settle > 0:
        wait_for_quiet(args.settle)
    load_start = machine_load()
    selected = [m for m in BENCHMARKS if m.NAME in args.only.split(",")]
    sections: list[Section] = []
    for benchmark in selected:
        progress(benchmark.NAME, f"--- {benchmark.TITLE} ---")
        run: Callable[[BenchContext], Section] = benchmark.run
        load_before = machine_load()
        section = run(ctx)
        section.notes.append(f"Machine load average (1/5/15 min) before this section: "
                             f"{load_before}, after: {machine_load()}.")
        sections.append(section)
        _print_section(section)
    if args.no_save:
        return 0
    load_end = machine_load()
    results = {
        "meta": {
            "command": shlex.join([".venv/bin/python", "-m", "bench.run_all",
                                   *_portable(argv, args)]),
            "machine": machine_info(),
            "brokers": [b.describe() for b in ctx.brokers],
            "unavailable": ctx.unavailable,
            "params": {**ctx.params(), "groupcoord_fsync": args.groupcoord_fsync},
            "load_average": {"start": load_start, "end": load_end},
        },
        "sections": [s.to_json() for s in sections],
    }
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H%M%SZ")
    out = args.out or RESULTS_DIR / f"{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(scrub(json.dumps(results, indent=2)) + "\n")
    progress("done", f"wrote {rel(out)}")
    write_markdown(out, args.markdown)
    progress("done", f"wrote {rel(args.markdown)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
