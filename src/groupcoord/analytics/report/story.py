"""Gold rows told in words: rebalance causes, Burrow health and lag, as people read them.

Shared by ``report.html`` (one summary line per group and topic) and ``analyze why``. Inputs
are the rows the pipeline writes (``gold/rebalances`` with its structured ``causes``, the
final ``burrow_status`` per partition, ``silver/classic_generations`` for session timeouts);
nothing here touches Spark.

Kafka keeps no "why" for a rebalance in ``__consumer_offsets``: the causes come from the
``__group_events`` topic (docs/group-events.md: KIP-800 reasons, session expiry). Without
events, a rebalance is told from the member-set difference only, and says so.

Member ids of librdkafka and the Java client are ``client.id-<uuid>``; the uuid is dropped
(``short_member``) because the client id is the name people gave the member.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

Row = Mapping[str, Any]

_UUID_TAIL = re.compile(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# What each Burrow partition status means, after "partition(s) ... is/are".
STATUS_WHY = {
    "STOP": "stopped (Burrow STOP: no commit while records kept arriving)",
    "STALL": "stalled (Burrow STALL: the same offset committed again while lag grows)",
    "REWIND": "rewound (Burrow REWIND: an offset committed behind an earlier one)",
    "WARN": "slow (Burrow WARN: lag grew at every commit of the window)",
}
_STATUS_ORDER = ["REWIND", "STOP", "STALL", "WARN"]


def short_member(member_id: str | None) -> str:
    """``m4-killed-6f1c...-uuid`` -> ``m4-killed``; ids without a uuid tail are kept."""
    if not member_id:
        return "an unknown member"
    return _UUID_TAIL.sub("", member_id)


def fmt_int(n: float | None) -> str:
    return "-" if n is None else f"{round(n):,}"


def fmt_signed(n: float, digits: int = 0) -> str:
    text = f"{abs(n):,.{digits}f}"
    return ("+" if n >= 0 else "-") + text


def fmt_seconds(ms: float | None) -> str:
    """A duration in the largest sensible unit: ``850 ms``, ``1.1 s``, ``45 s``, ``5 min 3 s``."""
    if ms is None:
        return "unknown"
    if ms < 1000:
        return f"{round(ms)} ms"
    s = ms / 1000
    if s < 10:
        return f"{s:.1f} s"
    if s < 120:
        return f"{round(s)} s"
    m, rest = divmod(round(s), 60)
    if m < 120:
        return f"{m} min {rest} s" if rest else f"{m} min"
    h, m = divmod(m, 60)
    return f"{h} h {m} min" if m else f"{h} h"


def fmt_ts(ms: int | None) -> str:
    """UTC wall time with milliseconds, ``2026-11-21 23:51:36.120``."""
    if ms is None:
        return "-"
    t = datetime.fromtimestamp(ms / 1000, UTC)
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{t.microsecond // 1000:03d}"


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def session_timeouts(generations: Iterable[Row]) -> dict[tuple[str, str], int]:
    """(group, member) -> the session timeout the member joined with (classic groups)."""
    out: dict[tuple[str, str], int] = {}
    for g in generations:
        for m in g.get("members") or []:
            if m.get("session_timeout_ms") is not None:
                out[(g["group_id"], m["member_id"])] = int(m["session_timeout_ms"])
    return out


def _cause(c: Row, group: str, timeouts: Mapping[tuple[str, str], int]) -> str | None:
    kind, who, reason = c["kind"], short_member(c.get("member_id")), c.get("reason")
    given = f": \"{reason}\"" if reason and reason != "not provided" else ""
    if kind == "member_joined":
        return f"{who} joined{given}"
    if kind == "member_left":
        return f"{who} left the group{given}"
    if kind == "member_expired":
        timeout = timeouts.get((group, c.get("member_id") or ""))
        after = f" after {fmt_seconds(timeout)}" if timeout is not None else ""
        return f"{who} was evicted{after} without a heartbeat ({reason or 'session timeout'})"
    if kind == "member_fenced":
        return f"{who} was fenced by a new instance with the same group.instance.id"
    if kind == "member_removed":
        return f"{who} was removed by the coordinator" + (f" ({reason})" if reason else "")
    return None


def rebalance_causes(r: Row, timeouts: Mapping[tuple[str, str], int]) -> list[str]:
    """Why a rebalance happened: one clause per membership event, or the member-set
    difference when the group event log did not say."""
    told = [t for c in r.get("causes") or [] if (t := _cause(c, r["group_id"], timeouts))]
    named = {short_member(c.get("member_id")) for c in r.get("causes") or []}
    for m in r.get("joined") or []:
        if short_member(m) not in named:
            told.append(f"{short_member(m)} joined")
    for m in r.get("left") or []:
        if short_member(m) not in named:
            told.append(f"{short_member(m)} left (no group event says why)")
    if not told:
        trigger = next((c.get("reason") for c in r.get("causes") or []
                        if c["kind"] == "rebalance_started" and c.get("reason")), None)
        told.append(f"rebalance triggered: {trigger}" if trigger
                    else "a new generation with the same members (no group event says why)")
    return told


def rebalance_sentence(r: Row, timeouts: Mapping[tuple[str, str], int]) -> str:
    """``m4 was evicted after 45 s without a heartbeat; 3 partitions moved; 1.1 s``."""
    parts = ["; ".join(rebalance_causes(r, timeouts))]
    moved = r.get("partitions_moved")
    if moved is not None:
        parts.append(f"{plural(int(moved), 'partition')} moved")
    if r.get("duration_ms") is not None:
        took = fmt_seconds(r["duration_ms"])
        parts.append(f"about {took} (start estimated from the last commit)"
                     if r.get("estimated") else took)
    elif r.get("end_ts_ms") is None:
        parts.append("still reconciling at the end of the data")
    else:
        parts.append("duration unknown (no rebalance start recorded)")
    if r.get("members_after") == 0:
        parts.append("the group is now empty")
    return "; ".join(parts)


def epoch_label(r: Row) -> str:
    word = "generation" if r["group_type"] == "classic" else "epoch"
    return f"{word} {r['to_epoch']}"


def rebalance_line(r: Row, timeouts: Mapping[tuple[str, str], int]) -> str:
    """The rebalance with its time and epoch: ``generation 6 at 12:03:45.120: ...``."""
    at = r.get("end_ts_ms") if r.get("end_ts_ms") is not None else r.get("start_ts_ms")
    return f"{epoch_label(r)} at {fmt_ts(at)}: {rebalance_sentence(r, timeouts)}"


@dataclass(frozen=True)
class PartitionHealth:
    """One partition's final Burrow status and who owns it."""

    topic: str
    partition: int
    status: str
    owner: str | None


def _partition_list(ps: Sequence[PartitionHealth]) -> str:
    topics = sorted({p.topic for p in ps})
    if len(topics) == 1:
        nums = ", ".join(str(p.partition) for p in sorted(ps, key=lambda p: p.partition))
        return f"{topics[0]} partition{'s' if len(ps) > 1 else ''} {nums}"
    return ", ".join(f"{p.topic}-{p.partition}" for p in ps)


def health_line(status: str, partitions: Sequence[PartitionHealth]) -> str:
    """Burrow's group status and why: which partitions are not OK, what that means, and
    which members own them (the slow or stuck consumers)."""
    bad = [p for p in partitions if p.status not in ("OK", "NOTFOUND")]
    if not bad:
        if not partitions:
            return f"{status}: no commits evaluated"
        return f"{status}: all {plural(len(partitions), 'partition')} committing and keeping up"
    clauses = []
    for st in _STATUS_ORDER:
        ps = [p for p in bad if p.status == st]
        if not ps:
            continue
        owners = sorted({short_member(p.owner) for p in ps if p.owner})
        who = f", owned by {', '.join(owners)}" if owners else ""
        verb = "is" if len(ps) == 1 else "are"
        clauses.append(f"{_partition_list(ps)} {verb} {STATUS_WHY[st]}{who}")
    return f"{status}: " + "; ".join(clauses)


@dataclass(frozen=True)
class LagPoint:
    """A group's lag at one time: the sum over partitions in records, the worst in seconds."""

    ts_ms: int
    records: int
    seconds: float


def trend_window_ms(span_ms: int) -> int:
    """The trend looks back 5 minutes, or a quarter of a shorter run."""
    return max(1, min(300_000, span_ms // 4))


def lag_line(now_records: int | None, worst: tuple[str, int, int] | None,
             series: Sequence[LagPoint], span_ms: int) -> str:
    """``lag now 1,234 records, 12.5 s behind (worst: t-0 partition 3, 600 records); trend
    over the last 5 min: +500 records (+1.7 records/s), +2.0 s``."""
    last = series[-1] if series else None
    records = now_records if now_records is not None else (last.records if last else 0)
    text = f"lag now {plural(records, 'record')}"
    if last is not None:
        text += f", {last.seconds:,.1f} s behind"
    if worst is not None and records:
        topic, part, n = worst
        text += f" (worst: {topic} partition {part}, {plural(n, 'record')})"
    if last is None or len(series) < 2:
        return text + "; no trend (a single sample)"
    window = trend_window_ms(span_ms)
    base = next((p for p in reversed(series) if p.ts_ms <= last.ts_ms - window), series[0])
    dt_s = max((last.ts_ms - base.ts_ms) / 1000, 1e-3)
    d_rec, d_sec = last.records - base.records, last.seconds - base.seconds
    return (f"{text}; trend over the last {fmt_seconds(last.ts_ms - base.ts_ms)}: "
            f"{fmt_signed(d_rec)} records ({fmt_signed(d_rec / dt_s, 1)} records/s), "
            f"{fmt_signed(d_sec, 1)} s")
