"""Writing coordinator `GroupEvent`s to the internal topic `__group_events`.

One partition, delete retention; each event is one record: key = the group id (UTF-8),
value = the event as UTF-8 JSON (`GroupEvent.to_json_dict`), timestamp = the event's
time. Events are soft diagnostics: a failed write is logged, never fatal.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from groupcoord.logformat.internal_topics import GROUP_EVENTS_TOPIC

if TYPE_CHECKING:
    from groupcoord.server.broker_ports import CoordinatorHost

log = logging.getLogger("groupcoord.coordinator")

GROUP_EVENTS_CONFIGS = {"cleanup.policy": "delete", "retention.ms": "604800000"}


def encode_events(events: Iterable[Any]) -> bytes:
    from groupcoord.logformat.batch import build_batch

    rows = [
        (e.group_id.encode("utf-8"),
         json.dumps(e.to_json_dict(), separators=(",", ":"), default=str).encode("utf-8"),
         (), e.timestamp_ms)
        for e in events
    ]
    return build_batch(rows)


def write(broker: CoordinatorHost, events: list[Any]) -> None:
    broker.group_counters.observe(events)
    try:
        broker.topics.ensure_internal(GROUP_EVENTS_TOPIC, 1, GROUP_EVENTS_CONFIGS)
        broker.append(GROUP_EVENTS_TOPIC, 0, encode_events(events))
    except Exception:
        log.exception("cannot write %d group events", len(events))
