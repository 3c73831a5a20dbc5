"""Membership rows by group, the group-epoch bumps and the end of a rebalance in
epoch-based groups.

Shared by the gold rebalances of consumer groups (KIP-848, ``rebalance``) and streams groups
(KIP-1071, ``streams_groups``): both see a rebalance in each bump of the group epoch, and
end it when a target member's current assignment reaches the new epoch in state STABLE.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any


def by_group(rows: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Rows per ``group_id``, each group's in log order (time, then log offset); a group
    event's time is its ``timestamp_ms``."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        out[r["group_id"]].append(r)
    for rs in out.values():
        rs.sort(key=lambda r: (r.get("record_ts_ms") or r.get("timestamp_ms") or 0,
                               r.get("log_offset", 0)))
    return out


def epoch_bumps(epochs: Iterable[dict[str, Any]]
                ) -> Iterator[tuple[int, int | None, dict[str, Any]]]:
    """Each live (not tombstone) group-epoch row of one group, in log order, with the time
    and epoch of the live row before it (-1 and None for the first): one rebalance each."""
    prev_start, prev_epoch = -1, None
    for e in epochs:
        if e["tombstone"]:
            continue
        yield prev_start, prev_epoch, e
        prev_start, prev_epoch = e["record_ts_ms"], e["epoch"]


def reconciled(current: list[dict[str, Any]], members: Iterable[str], epoch: int, since: int
               ) -> tuple[list[int | None], int | None]:
    """Per member of the target, when it reconciled (``reconciled_at``); and the end of the
    rebalance: the last of those times once every member has reconciled, else None."""
    times = [reconciled_at(current, m, epoch, since) for m in members]
    done = [t for t in times if t is not None]
    return times, max(done) if done and len(done) == len(times) else None


def reconciled_at(current: list[dict[str, Any]], member: str, epoch: int, since: int
                  ) -> int | None:
    """When ``member``'s current assignment rows first reach ``epoch`` in STABLE at or after
    ``since``, or None."""
    for r in current:
        if (r["member_id"] == member and not r["tombstone"] and r["record_ts_ms"] >= since
                and (r["member_epoch"] or 0) >= epoch and r["state"] == "STABLE"):
            return int(r["record_ts_ms"])
    return None
