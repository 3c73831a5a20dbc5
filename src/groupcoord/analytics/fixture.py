"""``groupcoord analyze gen-fixture``: a synthetic log dir with known, injected anomalies.

Writes a Kafka-layout log dir: one data topic per group (``t-<group>``, headers and records
valid, mixed compression), ``__consumer_offsets-<n>`` with the groups' records (classic
GroupMetadata, KIP-848 consumer-group records, offset commits including one committed and one
aborted transaction) and ``__group_events-0`` (JSON values, the groupcoord event log), plus
``manifest.json`` saying what was injected and what the pipeline must find.

Time model: data batches of ``rate`` records per partition every second at ``T0 + s*1000``,
so the end offset after second ``s`` is ``(s+1)*rate``; commits every 5 s at ``+500 ms``.
A healthy consumer commits the current end offset (lag 0 at every commit).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from groupcoord.analytics import fixture_records as fr
from groupcoord.analytics import fixture_scenarios, fixture_story
from groupcoord.analytics.fixture_spec import FixtureGroup, FixtureSpec
from groupcoord.analytics.logwriter import LogWriters

T0 = 1_700_000_000_000
COMMIT_EVERY_MS = 5_000
COMMIT_PHASE_MS = 500
# opt-in (fixture_scenarios): a rebalance storm, partitions no member owns, a streams group
SCENARIO_ANOMALIES = (fixture_scenarios.STORM, fixture_scenarios.ORPHAN,
                      fixture_scenarios.STREAMS)


def java_string_hash(s: str) -> int:
    h = 0
    for ch in s.encode("utf-16-be").decode("utf-16-be"):
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(group: str, partitions: int) -> int:
    """Kafka's ``partitionFor``: ``Utils.abs(groupId.hashCode()) % partitions``."""
    h = java_string_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def topic_id_for(topic: str) -> bytes:
    return hashlib.sha256(topic.encode()).digest()[:16]


def end_offset_at(ts: int, rate: int) -> int:
    return 0 if ts < T0 else ((ts - T0) // 1000 + 1) * rate


def _healthy(_p: int, _t: int, end: int, _prev: int | None) -> int:
    return end


def _groups(spec: FixtureSpec) -> list[FixtureGroup]:
    half = T0 + spec.seconds * 500
    rewind_at = T0 + (spec.seconds - 30) * 1000 + COMMIT_PHASE_MS
    p = spec.partitions
    out = [FixtureGroup(f"healthy-{i}", "none", p, _healthy) for i in range(spec.healthy_groups)]
    makers: dict[str, Callable[[], FixtureGroup]] = {
        "stop": lambda: FixtureGroup("stopper", "stop", p,
                               lambda _p, t, e, _o: e if t < half else None,
                               {i: "STOP" for i in range(p)}, "ERR"),
        "stall": lambda: FixtureGroup("staller", "stall", p,
                                lambda _p, t, e, o: e if t < half or o is None else o,
                                {i: "STALL" for i in range(p)}, "ERR"),
        "slow": lambda: FixtureGroup("slowpoke", "slow", p, lambda _p, _t, e, _o: e * 4 // 5,
                               {i: "WARN" for i in range(p)}, "WARN"),
        "rewind": lambda: FixtureGroup("rewind-ok", "rewind", p, _rewinder(rewind_at, False, spec)),
        "rewind-unrecovered": lambda: FixtureGroup(
            "rewind-bad", "rewind-unrecovered", p, _rewinder(rewind_at, True, spec),
            {0: "REWIND"}, "ERR"),
        "rebalance": lambda: FixtureGroup("cg-rebal", "rebalance", p, _healthy),
        "unbalanced": lambda: FixtureGroup("unbalanced", "unbalanced", 6, _healthy),
        "churn": lambda: FixtureGroup("churn", "churn", p, _healthy),
        "txn": lambda: FixtureGroup("txn-group", "txn", p, _healthy),
        # the demo's story (fixture_story): four partitions, one lagging behind m3-slow
        "story": lambda: FixtureGroup(fixture_story.GROUP, "story", 4,
                                fixture_story.commit_fn(
                                    spec, T0, COMMIT_EVERY_MS // 1000 * spec.rate),
                                {fixture_story.SLOW_PARTITION: "WARN"}, "WARN"),
        fixture_scenarios.STORM: lambda: FixtureGroup(fixture_scenarios.STORM, fixture_scenarios.STORM,
                                                p, _healthy, expect_group="WARN"),
        fixture_scenarios.ORPHAN: lambda: FixtureGroup(
            fixture_scenarios.ORPHAN, fixture_scenarios.ORPHAN,
            fixture_scenarios.ORPHAN_PARTITIONS, fixture_scenarios.orphan_commit(spec, T0),
            {i: "OK" if i in fixture_scenarios.ORPHAN_KEPT else "STOP"
             for i in range(fixture_scenarios.ORPHAN_PARTITIONS)}, "ERR"),
        fixture_scenarios.STREAMS: lambda: FixtureGroup(fixture_scenarios.STREAMS,
                                                  fixture_scenarios.STREAMS, p, _healthy),
    }
    out += [makers[a]() for a in spec.anomalies]
    for g in out:
        for i in range(g.partitions):
            g.expect_partitions.setdefault(i, "OK")
    return out


def _rewinder(at: int, unrecovered: bool, spec: FixtureSpec) -> Callable[..., int | None]:
    step = COMMIT_EVERY_MS // 1000 * spec.rate

    def commit(part: int, t: int, end: int, prev: int | None) -> int | None:
        if part != 0 or t < at:
            return end
        if t == at:
            return end - min(3000, end // 2)
        return prev + step if unrecovered and prev is not None else end

    return commit


def _write_data(w: LogWriters, groups: list[FixtureGroup], spec: FixtureSpec) -> int:
    batches = 0
    for g in groups:
        topic = f"t-{g.name}"
        for part in range(g.partitions):
            pw = w.get(topic, part, topic_id_for(topic))
            for s in range(spec.seconds):
                ts = T0 + s * 1000
                recs = [(None, b"v%d" % (s * spec.rate + i), ts) for i in range(spec.rate)]
                pw.append(recs, compression=(part + s) % 5)
                batches += 1
    return batches


def generate(out: str | Path, spec: FixtureSpec | None = None) -> dict[str, Any]:
    """Write the fixture under ``out`` and return (and save) its manifest."""
    spec = spec or FixtureSpec()
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    groups = _groups(spec)
    writers = LogWriters(root)
    data_batches = _write_data(writers, groups, spec)
    coord = fr.CoordinatorLog(lambda g: coordinator_partition(g, spec.coord_partitions),
                              spec.coord_partitions)
    if spec.healthy_groups > 1:
        coord.offset_value_version["healthy-1"] = 4  # Kafka 4.x's flexible OffsetCommitValue
    commits = _plan_commits(coord, groups, spec)
    membership = fr.plan_membership(coord, groups_by_anomaly(groups), spec, T0, topic_id_for)
    if "story" in spec.anomalies:
        membership["expect_rebalances"] += fixture_story.plan_story(coord, spec, T0)
    membership["expect_rebalances"] += fixture_scenarios.plan(coord, spec.anomalies, spec, T0)
    coord.flush(writers)
    writers.close()
    manifest = _manifest(spec, groups, commits, membership, data_batches, coord)
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))
    return manifest


def groups_by_anomaly(groups: list[FixtureGroup]) -> dict[str, FixtureGroup]:
    return {g.anomaly if g.anomaly != "none" else g.name: g for g in groups}


def _plan_commits(coord: fr.CoordinatorLog, groups: list[FixtureGroup], spec: FixtureSpec
                  ) -> dict[str, int]:
    counts: dict[str, int] = {}
    ticks = range(COMMIT_EVERY_MS + COMMIT_PHASE_MS, spec.seconds * 1000, COMMIT_EVERY_MS)
    for g in groups:
        prev: dict[int, int | None] = dict.fromkeys(range(g.partitions))
        for rel in ticks:
            t = T0 + rel
            offsets = {}
            for part in range(g.partitions):
                off = g.commit(part, t, end_offset_at(t, spec.rate), prev[part])
                if off is not None:
                    offsets[part] = prev[part] = off
            if offsets:
                coord.commit(g.name, f"t-{g.name}", offsets, t,
                             transactional=g.anomaly == "txn")
                counts[g.name] = counts.get(g.name, 0) + len(offsets)
        if g.anomaly == "txn":
            coord.aborted_commit(g.name, f"t-{g.name}", g.partitions, T0 + 100_250)
    return counts


def _manifest(spec: FixtureSpec, groups: list[FixtureGroup], commits: dict[str, int],
              membership: dict[str, Any], data_batches: int, coord: fr.CoordinatorLog
              ) -> dict[str, Any]:
    return {
        "t0_ms": T0,
        "end_ms": T0 + (spec.seconds - 1) * 1000,
        "spec": {"seconds": spec.seconds, "partitions": spec.partitions, "rate": spec.rate,
                 "coord_partitions": spec.coord_partitions},
        "groups": {
            g.name: {"anomaly": g.anomaly, "topic": f"t-{g.name}", "partitions": g.partitions,
                     "expect_partition_status": {str(k): v for k, v in g.expect_partitions.items()},
                     "expect_group_status": g.expect_group,
                     "commit_rows": commits.get(g.name, 0)}
            for g in groups
        },
        "data_batches": data_batches,
        "commit_rows": sum(commits.values()),
        "aborted_commit_rows": coord.aborted_rows,
        "coordinator_records": coord.record_count,
        "group_events": coord.events,
        "classic_generations": coord.classic_generations,
        "rewind_at_ms": T0 + (spec.seconds - 30) * 1000 + COMMIT_PHASE_MS,
        **membership,
    }
