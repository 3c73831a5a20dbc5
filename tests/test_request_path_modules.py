"""How many of our modules one request passes through, traced on the in-process broker.

A JoinGroup and a ConsumerGroupHeartbeat, each the first of a new group on a coordinator
shard that is already loaded, are sent over the wire while a profile hook on every thread
records the source file of each of our functions called (the broker answers on its own
thread). The clock is manual, so no timer fires inside the measured window; the client's
own modules are left out, as is everything before the request reaches the broker.

The ceilings are today's counts (docs/architecture.md, "The request path"): the test keeps
the path from growing deeper unnoticed. Lower them when a change shortens it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from groupcoord.cli.wire_client import WireClient
from groupcoord.coordinator.partitioning import partition_for
from groupcoord.testing.broker import KafkaBroker
from groupcoord.wire.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.wire.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.wire.generated.metadata import MetadataRequest

OFFSETS_PARTITIONS = 50
JOIN_GROUP_CEILING = 51
CONSUMER_GROUP_HEARTBEAT_CEILING = 69
CLIENT_MODULES = ("groupcoord/cli/wire_client.py",)


class ModuleTrace:
    """The modules of ours whose functions run while `recording` is set."""

    def __init__(self) -> None:
        self.recording = False
        self.modules: set[str] = set()

    def __call__(self, frame: FrameType, event: str, _arg: Any) -> None:
        # The default executor's threads are left out: while it starts, the broker imports
        # there the handlers clients send first, which is no request's path.
        if self.recording and event == "call" and \
                not threading.current_thread().name.startswith("asyncio_"):
            path = frame.f_code.co_filename
            if "/groupcoord/" in path:
                module = "groupcoord/" + path.rsplit("/groupcoord/", 1)[1]
                if module not in CLIENT_MODULES:
                    self.modules.add(module)

    def during(self, request: Callable[[], Any]) -> tuple[Any, list[str]]:
        self.modules.clear()
        self.recording = True
        try:
            response = request()
        finally:
            self.recording = False
        return response, sorted(self.modules)


def _same_shard_groups(count: int) -> list[str]:
    first = partition_for("g0", OFFSETS_PARTITIONS)
    ids = (f"g{i}" for i in range(100_000))
    return [g for g in ids if partition_for(g, OFFSETS_PARTITIONS) == first][:count]


def _join(client: WireClient, group: str) -> Any:
    return client.request(JoinGroupRequest(
        group_id=group, session_timeout_ms=30_000, rebalance_timeout_ms=30_000, member_id="",
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")]), 5)[0]


def _heartbeat(client: WireClient, group: str) -> Any:
    return client.request(ConsumerGroupHeartbeatRequest(
        group_id=group, member_id="m-" + "1" * 22, member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=["t"], topic_partitions=[]), 0)[0]


def test_a_join_and_a_heartbeat_stay_within_their_module_ceilings() -> None:
    trace = ModuleTrace()
    warm_join, warm_heartbeat, join, heartbeat = _same_shard_groups(4)
    previous = sys.getprofile()
    threading.setprofile(trace)
    try:
        with KafkaBroker(clock="manual", offsets_partitions=OFFSETS_PARTITIONS) as broker, \
                WireClient(broker.bootstrap_servers) as client:
            client.request(MetadataRequest(topics=None), 12)
            _join(client, warm_join)  # loads the shard and the code on the path
            _heartbeat(client, warm_heartbeat)
            joined, join_modules = trace.during(lambda: _join(client, join))
            beat, heartbeat_modules = trace.during(lambda: _heartbeat(client, heartbeat))
    finally:
        threading.setprofile(previous)  # type: ignore[arg-type]
    assert joined.error_code == 79  # MEMBER_ID_REQUIRED: the first join of a member
    assert beat.error_code == 0
    assert "groupcoord/apis/join_group.py" in join_modules
    assert "groupcoord/apis/consumer_group_heartbeat.py" in heartbeat_modules
    assert len(join_modules) <= JOIN_GROUP_CEILING, "\n".join(join_modules)
    assert len(heartbeat_modules) <= CONSUMER_GROUP_HEARTBEAT_CEILING, \
        "\n".join(heartbeat_modules)
