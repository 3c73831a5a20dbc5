"""Each group's health at the end of the data: the one computation the report's cards and
tables, ``summary.json`` and ``analyze health`` all read.

Per group: its kind (classic, consumer, share, streams, or offsets only), members at the
end, Burrow's partition statuses at the end of the data (``burrow``), and the lag figures:
total lag now (the sum of Burrow's current lags), the worst partition, seconds behind and
the trend (from the group's lag series, which ends at the same evaluation), lag per member.
Three findings go beyond Burrow's rules and are told in words, with who and why:

- an *abandoned* group (every member left) with lag: nobody will commit, so its lagging
  partitions are STOP (Burrow would say STOP once the window's span has passed);
- *silent non-assignment*: a group with members in which no member owns some partitions
  while records wait on them (STOP: nobody commits them);
- *falling behind*: over the trend window a partition's lag grew by more than
  ``BEHIND_SHARE`` of the records appended to it (its consumer keeps less than 90 % of the
  pace), which Burrow's 10-commit window misses when commits are rare or the consumer was
  caught up a minute ago (WARN);
- a *rebalance storm*: ``STORM_REBALANCES`` or more rebalances within ``STORM_WINDOW_MS``,
  naming the members that churned (WARN).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from groupcoord.analytics.gold.burrow import Status, fold_status
from groupcoord.analytics.report import story

Row = Mapping[str, Any]
STORM_REBALANCES = 4
STORM_WINDOW_MS = 60_000
BEHIND_SHARE = 0.1
LEFT = "left with no consumer (the group is empty)"
UNOWNED = "owned by no member (silent non-assignment)"
_RANK = {"NOTFOUND": 0, "OK": 1, "WARN": 2, "ERR": 3}


@dataclass(frozen=True)
class PartitionState:
    """One partition of a group at the end of the data."""

    topic: str
    partition: int
    burrow: str  # Burrow's status at the end of the data
    status: str  # the verdict: Burrow's, or STOP for an abandoned or unowned partition
    lag: int
    owner: str | None
    why: str = ""


@dataclass(frozen=True)
class GroupHealth:
    group: str
    kind: str
    status: str  # OK / WARN / ERR (Burrow's fold)
    members: list[str]
    lag: int
    worst: tuple[str, int, int] | None  # topic, partition, lag
    seconds_behind: float | None
    trend_records_per_s: float | None
    trend_window_ms: int | None
    trend_records: int | None
    member_lag: dict[str, int]
    partitions: list[PartitionState]
    findings: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"group": self.group, "kind": self.kind, "status": self.status,
                "members": self.members, "lag": self.lag,
                "worst_partition": None if self.worst is None else
                {"topic": self.worst[0], "partition": self.worst[1], "lag": self.worst[2]},
                "seconds_behind": self.seconds_behind,
                "trend_records_per_s": self.trend_records_per_s,
                "member_lag": self.member_lag, "findings": self.findings,
                "partitions": [{"topic": p.topic, "partition": p.partition,
                                "status": p.status, "burrow": p.burrow, "lag": p.lag,
                                "owner": p.owner, "why": p.why} for p in self.partitions]}


@dataclass
class HealthInputs:
    """What the verdicts are computed from (the pipeline's tables, or ``health_data``)."""

    start_ms: int
    end_ms: int
    final: Mapping[tuple[str, str, int], Row]  # Burrow at end_ms: status, current_lag
    series: Mapping[str, list[story.LagPoint]]  # group -> total lag, ending at end_ms
    ownership: Sequence[Row]  # silver/ownership intervals
    rebalances: Sequence[Row]  # gold/rebalances and gold/streams_rebalances
    kinds: Mapping[str, str]
    members: Mapping[str, list[str]]  # group -> member ids at the end of the data
    share_backlog: Mapping[str, list[Row]] = field(default_factory=dict)  # group -> share_lag
    # (group, topic, partition) -> [(ts_ms, lag, end offset)] on the grid
    partition_series: Mapping[tuple[str, str, int], list[tuple[int, int, int]]] = \
        field(default_factory=dict)
    allowed_lag: int = 0
    # (group, topic, partition) -> append time of the first record past the last commit
    appended_at: Mapping[tuple[str, str, int], int] = field(default_factory=dict)


def kinds_and_members(t: Any) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Each group's kind and its members at the end, from the membership tables."""
    kinds: dict[str, str] = {}
    members: dict[str, list[str]] = {}
    for g in sorted(t.classic_generations, key=lambda r: r["record_ts_ms"]):
        kinds[g["group_id"]] = "classic"
        members[g["group_id"]] = [] if g["tombstone"] else [m["member_id"] for m in g["members"]]
    for rows in (t.cg_members, t.sg_members):
        live: dict[str, dict[str, None]] = defaultdict(dict)
        for r in sorted(rows, key=lambda r: r["record_ts_ms"]):
            kinds.setdefault(r["group_id"], r["group_type"])
            if r["tombstone"]:
                live[r["group_id"]].pop(r["member_id"], None)
            else:
                live[r["group_id"]][r["member_id"]] = None
        for g, ms in live.items():
            members[g] = list(ms)
    for r in (*t.cg_epochs, *t.sg_epochs):
        kinds.setdefault(r["group_id"], r["group_type"])
        members.setdefault(r["group_id"], [])
    return kinds, members


def _owners_at(ownership: Sequence[Row], at: int) -> dict[tuple[str, str, int], str]:
    return {(o["group_id"], o["topic"], o["partition"]): o["member_id"] for o in ownership
            if o["from_ts_ms"] <= at < o["to_ts_ms"]}


def _last_owner(ownership: Sequence[Row]) -> dict[tuple[str, str, int], Row]:
    out: dict[tuple[str, str, int], Row] = {}
    for o in sorted(ownership, key=lambda o: o["to_ts_ms"]):
        out[(o["group_id"], o["topic"], o["partition"])] = o
    return out


def _trend(pts: list[story.LagPoint], span_ms: int) -> tuple[float | None, int | None,
                                                            int | None]:
    """Records/s, the window and the change in records over the last 5 minutes (or a quarter
    of a shorter run), from the same series the lag chart draws."""
    if len(pts) < 2:
        return None, None, None
    last = pts[-1]
    window = story.trend_window_ms(span_ms)
    base = next((p for p in reversed(pts) if p.ts_ms <= last.ts_ms - window), pts[0])
    dt_ms = last.ts_ms - base.ts_ms
    if dt_ms <= 0:
        return None, None, None
    d = last.records - base.records
    return d * 1000 / dt_ms, dt_ms, d


def falling_behind(pts: list[tuple[int, int, int]], lag: int, end_ms: int, span_ms: int
                    ) -> str | None:
    """``falling behind: ...`` when the lag grew by more than ``BEHIND_SHARE`` of what was
    appended over the trend window, else None."""
    if not pts:
        return None
    window = story.trend_window_ms(span_ms)
    base = next((p for p in reversed(pts) if p[0] <= end_ms - window), pts[0])
    end_offset = max(pts[-1][2], base[2])
    appended, grew = end_offset - base[2], lag - base[1]
    if appended <= 0 or grew <= BEHIND_SHARE * appended or end_ms <= base[0]:
        return None
    return (f"falling behind (lag grew by {grew:,} records in the last "
            f"{story.fmt_seconds(end_ms - base[0])} while {appended:,} were appended)")


def _storms(rebalances: Sequence[Row]) -> list[str]:
    """Bursts of ``STORM_REBALANCES`` or more rebalances within ``STORM_WINDOW_MS``, with the
    members that joined and left in them and the reasons they gave."""
    rows = sorted(rebalances, key=lambda r: r.get("end_ts_ms") or r.get("start_ts_ms") or 0)
    times = [r.get("end_ts_ms") or r.get("start_ts_ms") or 0 for r in rows]
    out, i = [], 0
    while i < len(rows):
        j = i
        while j + 1 < len(rows) and times[j + 1] - times[i] <= STORM_WINDOW_MS:
            j += 1
        if j - i + 1 >= STORM_REBALANCES:
            burst = rows[i:j + 1]
            churn: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            reasons: dict[str, None] = {}
            for r in burst:
                for m in r.get("joined") or []:
                    churn[story.short_member(m)][0] += 1
                for m in r.get("left") or []:
                    churn[story.short_member(m)][1] += 1
                for c in r.get("causes") or []:
                    if c.get("kind") in ("member_left", "member_expired", "member_fenced",
                                         "member_removed") and c.get("reason"):
                        reasons[f"{story.short_member(c.get('member_id'))}: {c['reason']}"] = None
            who = [f"{m} joined {story.plural(n[0], 'time')} and left {n[1]}"
                   for m, n in sorted(churn.items(), key=lambda kv: -sum(kv[1]))
                   if max(n) > 1]
            if not who:  # members joining one by one, or leaving once: no storm
                i += 1
                continue
            why = f" (reasons given: {'; '.join(reasons)})" if reasons else ""
            out.append(f"rebalance storm: {len(burst)} rebalances in "
                       f"{story.fmt_seconds(times[j] - times[i])} from {story.fmt_ts(times[i])}"
                       f"; {', '.join(who)}{why}")
            i = j + 1
        else:
            i += 1
    return out


def with_end_point(pts: list[story.LagPoint], lag: int, end_ms: int, seconds: float | None
                   ) -> list[story.LagPoint]:
    """The series closed by the evaluation at the end of the data, so that the last point
    drawn, the card and the tables give the same lag."""
    end = story.LagPoint(end_ms, lag, seconds or 0.0)
    return [*[p for p in pts if p.ts_ms < end_ms], end] if pts or seconds is not None else pts


def _share_partitions(rows: list[Row]) -> list[PartitionState]:
    """A share group's partitions: the backlog (end offset minus the share-partition start
    offset) at its newest share-state record."""
    newest: dict[tuple[str, int], Row] = {}
    for r in sorted(rows, key=lambda r: r["ts_ms"]):
        newest[(r["topic"], r["partition"])] = r
    return [PartitionState(t, p, "OK", "OK", int(r["lag"] or 0), None,
                           "share-partition backlog") for (t, p), r in sorted(newest.items())]


def _partitions(ps: Sequence[PartitionState]) -> str:
    topics = sorted({p.topic for p in ps})
    return "; ".join(_partition_list(t, [p.partition for p in ps if p.topic == t])
                     for t in topics)


def _partition_list(topic: str, parts: list[int]) -> str:
    return f"{topic} partition{'s' if len(parts) > 1 else ''} " + ", ".join(map(str, parts))


def evaluate(inp: HealthInputs) -> list[GroupHealth]:
    """Every group's health, worst first (status, then lag, then name)."""
    owners_now = _owners_at(inp.ownership, inp.end_ms)
    last_owner = _last_owner(inp.ownership)
    by_group: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
    for key in sorted(inp.final):
        by_group[key[0]].append(key)
    rebs: dict[str, list[Row]] = defaultdict(list)
    for r in inp.rebalances:
        rebs[r["group_id"]].append(r)
    groups = sorted(set(by_group) | set(inp.kinds) | set(inp.share_backlog))
    out = [_group(g, inp, by_group.get(g, []), owners_now, last_owner, rebs.get(g, []))
           for g in groups]
    return sorted(out, key=lambda h: (-_RANK.get(h.status, 0), -h.lag, h.group))


def _group(g: str, inp: HealthInputs, keys: list[tuple[str, str, int]],
           owners_now: dict[tuple[str, str, int], str], last_owner: dict[tuple[str, str, int], Row],
           rebalances: list[Row]) -> GroupHealth:
    members = inp.members.get(g, [])
    kind = inp.kinds.get(g, "share" if g in inp.share_backlog else "offsets only")
    has_membership = g in inp.kinds
    empty = has_membership and not members
    findings: list[str] = []
    parts: list[PartitionState] = []
    unowned: dict[str, list[int]] = defaultdict(list)
    if not keys and g in inp.share_backlog:
        parts += _share_partitions(inp.share_backlog[g])
    for key in keys:
        row = inp.final[key]
        lag = int(row["current_lag"] or 0)
        burrow = str(row["status"])
        owner = owners_now.get(key)
        status, why = burrow, story.STATUS_WHY.get(burrow, "")
        lagging = lag > inp.allowed_lag
        if lagging and empty:
            status, why = "STOP", LEFT
        elif lagging and has_membership and members and owner is None \
                and kind in ("classic", "consumer"):
            status, why = "STOP", UNOWNED
            unowned[key[1]].append(key[2])
        elif lagging and burrow == "OK":
            behind = falling_behind(inp.partition_series.get(key, []), lag, inp.end_ms,
                                     inp.end_ms - inp.start_ms)
            if behind:
                status, why = "WARN", behind
        shown_owner = owner or (last_owner[key]["member_id"] if key in last_owner else None)
        parts.append(PartitionState(key[1], key[2], burrow, status, lag, shown_owner, why))
    left_behind = [p for p in parts if p.why == LEFT]
    if left_behind:
        left = max((r.get("end_ts_ms") or 0 for r in rebalances), default=0)
        since = f" since {story.fmt_ts(left)}" if left else ""
        last = sorted({story.short_member(p.owner) for p in left_behind if p.owner})
        by = f", last owned by {', '.join(last)}" if last else ""
        findings.append(f"abandoned: the group has been empty{since} (every member left) "
                        f"while {story.plural(sum(p.lag for p in left_behind), 'record')} wait "
                        f"on {_partitions(left_behind)}{by}; nobody will commit them")
    for topic, ps in sorted(unowned.items()):
        waiting = sum(p.lag for p in parts if p.topic == topic and p.partition in ps)
        before = sorted({story.short_member(last_owner[(g, topic, p)]["member_id"])
                         for p in ps if (g, topic, p) in last_owner})
        was = f"; last owned by {', '.join(before)}" if before else "; never owned"
        lost = [last_owner[(g, topic, p)]["to_ts_ms"] for p in ps if (g, topic, p) in last_owner]
        since = f" since {story.fmt_ts(max(lost))}" if lost else ""
        findings.append(f"silent non-assignment: {_partition_list(topic, sorted(ps))} "
                        f"{'has' if len(ps) == 1 else 'have'} had no owner{since} although "
                        f"the group has members "
                        f"({', '.join(story.short_member(m) for m in members)}); "
                        f"{story.plural(waiting, 'record')} wait and nobody commits{was}")
    storms = _storms(rebalances)
    findings += storms
    code = max((int(fold_status(Status[p.status])) for p in parts), default=int(Status.OK))
    if storms:
        code = max(code, int(Status.WARN))
    if not parts and not has_membership:
        code = int(Status.NOTFOUND)
    behind_ms = [inp.end_ms - inp.appended_at[(g, p.topic, p.partition)] for p in parts
                 if p.lag > 0 and inp.appended_at.get((g, p.topic, p.partition), -1) >= 0]
    seconds = max(behind_ms, default=0) / 1000 if parts else None
    pts = with_end_point(list(inp.series.get(g, [])), sum(p.lag for p in parts), inp.end_ms,
                         seconds)
    trend, window, d = _trend(pts, inp.end_ms - inp.start_ms)
    worst_p = max(parts, key=lambda p: p.lag, default=None)
    member_lag: dict[str, int] = defaultdict(int)
    for p in parts:  # an emptied group's lag is the lag its last members left
        if p.owner and p.why != UNOWNED:
            member_lag[story.short_member(p.owner)] += p.lag
    return GroupHealth(
        g, kind, Status(code).name, [story.short_member(m) for m in members],
        sum(p.lag for p in parts),
        None if worst_p is None else (worst_p.topic, worst_p.partition, worst_p.lag),
        seconds, trend, window, d, dict(member_lag), parts, findings)


def stuck_rows(verdicts: Sequence[GroupHealth], end_ms: int) -> list[dict[str, Any]]:
    """The partitions not OK at the end (``gold/stuck_consumers``, the report's table)."""
    return [{"group_id": h.group, "topic": p.topic, "partition": p.partition,
             "status": p.status, "burrow_status": p.burrow, "why": p.why,
             "member_id": p.owner, "current_lag": p.lag, "eval_ts_ms": end_ms}
            for h in verdicts for p in h.partitions if p.status not in ("OK", "NOTFOUND")]


def health_sentence(h: GroupHealth) -> str:
    """The card's health line: the verdict and why, naming partitions and owners."""
    bad = [p for p in h.partitions if p.status not in ("OK", "NOTFOUND")
           and p.why not in (LEFT, UNOWNED)]
    clauses = []
    for st in ("STOP", "REWIND", "STALL", "WARN"):
        ps = [p for p in bad if p.status == st]
        by_why: dict[str, list[PartitionState]] = defaultdict(list)
        for p in ps:
            by_why[p.why].append(p)
        for why, group in by_why.items():
            topics = sorted({p.topic for p in group})
            names = "; ".join(_partition_list(t, [p.partition for p in group if p.topic == t])
                              for t in topics)
            owners = sorted({story.short_member(p.owner) for p in group if p.owner})
            who = f", owned by {', '.join(owners)}" if owners else ""
            verb = "is" if len(group) == 1 else "are"
            clauses.append(f"{names} {verb} {why or st}{who}")
    text = "; ".join(clauses + h.findings)
    if text:
        return f"{h.status}: {text}"
    if not h.partitions:
        return f"{h.status}: no committed offsets to evaluate ({h.kind} group)"
    if h.kind == "share":
        return (f"{h.status}: {story.plural(h.lag, 'record')} not yet acknowledged on "
                f"{story.plural(len(h.partitions), 'share partition')}")
    return (f"{h.status}: all {story.plural(len(h.partitions), 'partition')} committing and "
            "keeping up")


def lag_sentence(h: GroupHealth) -> str:
    """The card's lag line: now, the worst partition, the trend (the same figures the
    tables and ``summary.json`` show)."""
    text = f"lag now {story.plural(h.lag, 'record')}"
    if h.seconds_behind is not None:
        text += f", {h.seconds_behind:,.1f} s behind"
    if h.worst is not None and h.lag:
        text += f" (worst: {h.worst[0]} partition {h.worst[1]}, {story.plural(h.worst[2], 'record')})"
    if h.member_lag and h.lag:
        text += "; per member: " + ", ".join(f"{m} {n:,}" for m, n in sorted(h.member_lag.items()))
    if h.trend_records_per_s is None or h.trend_window_ms is None or h.trend_records is None:
        return text + "; no trend (a single sample)"
    return (f"{text}; trend over the last {story.fmt_seconds(h.trend_window_ms)}: "
            f"{story.fmt_signed(h.trend_records)} records "
            f"({story.fmt_signed(h.trend_records_per_s, 1)} records/s)")


def terminal_lines(verdicts: Sequence[GroupHealth]) -> list[str]:
    """``analyze health``: one block per group, worst first."""
    out = []
    for h in verdicts:
        out.append(f"{h.group} ({h.kind}): {health_sentence(h)}")
        out.append(f"    {lag_sentence(h)}")
    return out
