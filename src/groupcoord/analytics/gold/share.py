"""Share-group delivery state from ``__share_group_state`` (KIP-932), on the driver.

``share_partition_state``: one row per ShareSnapshot (type 0) or ShareUpdate (type 1) record:
the share-partition start offset (SPSO), epochs and the state batches. ``share_lag`` adds,
at each record's time, the partition's end offset and the backlog ``end - SPSO`` (records not
yet completed by the share group), with the records per delivery state in the batches
(0 available, 2 acknowledged, 4 archived) and the highest delivery count (poison messages
climb towards ``group.share.delivery.count.limit``). An update lists only changed batches.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from groupcoord.analytics.gold.lag import EndOffsets
from groupcoord.analytics.read.dump import uuid_to_string
from groupcoord.analytics.read.reader import decode_share_state

KINDS = {0: "snapshot", 1: "update"}
_STATES = {0: "available", 2: "acked", 4: "archived"}


def share_state_rows(rows: Iterable[dict[str, Any]], names: dict[str, str]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        if row["key"] is None or row.get("txn_outcome") in ("aborted", "open"):
            continue
        rec = decode_share_state(row["key"], row["value"])
        if rec is None or rec.value is None:
            continue
        tid = uuid_to_string(rec.key["TopicId"])
        v = rec.value
        out.append({
            "group_id": rec.key["GroupId"], "topic_id": tid, "topic": names.get(tid, tid),
            "partition": rec.key["Partition"], "record_kind": KINDS[rec.record_type],
            "record_ts_ms": row["record_ts_ms"], "log_offset": row["log_offset"],
            "snapshot_epoch": v["SnapshotEpoch"], "state_epoch": v.get("StateEpoch"),
            "leader_epoch": v["LeaderEpoch"], "start_offset": v["StartOffset"],
            "batches": [{"first_offset": b["FirstOffset"], "last_offset": b["LastOffset"],
                         "delivery_state": b["DeliveryState"],
                         "delivery_count": b["DeliveryCount"]} for b in v["StateBatches"]],
        })
    return out


def share_lag(state: list[dict[str, Any]], ends: dict[tuple[str, int], Any]) -> list[dict[str, Any]]:
    """``ends`` maps (topic, partition) to a pandas frame of ``ts_ms``/``end_offset``."""
    out = []
    lookups: dict[tuple[str, int], EndOffsets] = {}
    for r in state:
        tp = (r["topic"], r["partition"])
        if tp not in lookups and tp in ends:
            frame = ends[tp]
            lookups[tp] = EndOffsets(frame["ts_ms"].to_numpy(), frame["end_offset"].to_numpy())
        eo = lookups.get(tp)
        end = int(eo.at(np.array([r["record_ts_ms"]]))[0]) if eo is not None else None
        counts = dict.fromkeys(_STATES.values(), 0)
        for b in r["batches"]:
            name = _STATES.get(b["delivery_state"])
            if name:
                counts[name] += b["last_offset"] - b["first_offset"] + 1
        out.append({
            "group_id": r["group_id"], "topic": r["topic"], "partition": r["partition"],
            "ts_ms": r["record_ts_ms"], "record_kind": r["record_kind"],
            "start_offset": r["start_offset"], "end_offset": end,
            "lag": None if end is None else max(0, end - r["start_offset"]), **counts,
            "max_delivery_count": max((b["delivery_count"] for b in r["batches"]), default=0),
        })
    return out
