"""`groupcoord.testing.KafkaBroker`: lifecycle in both modes, and virtual time on the wire.

The virtual-time test (in-process, and a `serve --clock manual` subprocess advanced over
its control endpoint) drives a classic member with raw requests, so what it checks is the
broker alone: the member's 45 s session expires exactly when the test moves time past it,
and the effect is visible as soon as `advance` returns.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from helpers.wire_client import WireConnection

from groupcoord.storage.memory_io import MEMORY_ROOT
from groupcoord.testing import KafkaBroker
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.api_versions import ApiVersionsRequest
from groupcoord.wire.generated.describe_groups import DescribeGroupsRequest
from groupcoord.wire.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.wire.generated.sync_group import SyncGroupRequest, SyncGroupRequestAssignment

SESSION_TIMEOUT_MS = 45_000


def _connect(broker: KafkaBroker) -> WireConnection:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return WireConnection(host, int(port), client_id="embedded-test")


def _api_versions_ok(broker: KafkaBroker) -> bool:
    conn = _connect(broker)
    try:
        response = conn.call(ApiVersionsRequest(client_software_name="t",
                                                client_software_version="1"), 3)
        return response.error_code == 0 and len(response.api_keys) > 10
    finally:
        conn.close()


@pytest.mark.parametrize("subprocess", [False, True], ids=["in-process", "subprocess"])
def test_start_serve_stop_and_clean_up(subprocess: bool) -> None:
    broker = KafkaBroker(subprocess=subprocess)
    with broker:
        assert broker.running
        assert broker.storage == "memory" and broker.data_dir is None
        assert _api_versions_ok(broker)
    assert not broker.running
    assert not Path(MEMORY_ROOT).exists()  # the memory data dir never touched the disk
    with pytest.raises(RuntimeError):
        _ = broker.bootstrap_servers
    broker.stop()  # a second stop is harmless


def test_a_given_data_dir_is_kept_and_reused(tmp_path: Path) -> None:
    data_dir = tmp_path / "logs"
    with KafkaBroker(data_dir=data_dir) as broker:
        assert _api_versions_ok(broker)
    cluster_file = data_dir / "meta.properties"
    assert cluster_file.is_file()
    first = cluster_file.read_text()
    with KafkaBroker(data_dir=data_dir):
        pass
    assert cluster_file.read_text() == first


def test_options_that_cannot_work_are_refused() -> None:
    with pytest.raises(ValueError, match="clock"):
        KafkaBroker(clock="fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="extra_args"):
        KafkaBroker(extra_args=["--offsets-partitions", "1"])
    with pytest.raises(ValueError, match="BrokerConfig"):
        KafkaBroker(subprocess=True, offsets_partitions=1)
    with KafkaBroker() as broker, pytest.raises(RuntimeError, match="manual"):
        broker.advance(1)


def _join_and_sync(conn: WireConnection, group: str) -> tuple[str, int]:
    protocol = JoinGroupRequestProtocol(name="range", metadata=b"")
    join = conn.call(JoinGroupRequest(
        group_id=group, session_timeout_ms=SESSION_TIMEOUT_MS, rebalance_timeout_ms=60_000,
        member_id="", protocol_type="consumer", protocols=[protocol]), 3)
    assert join.error_code == 0, ErrorCode.of(join.error_code)
    sync = conn.call(SyncGroupRequest(
        group_id=group, generation_id=join.generation_id, member_id=join.member_id,
        assignments=[SyncGroupRequestAssignment(member_id=join.member_id, assignment=b"a")]), 3)
    assert sync.error_code == 0, ErrorCode.of(sync.error_code)
    return join.member_id, join.generation_id


def _group(conn: WireConnection, group: str) -> tuple[str, list[str]]:
    described = conn.call(DescribeGroupsRequest(groups=[group]), 3).groups[0]
    return described.group_state, [m.member_id for m in described.members]


@pytest.mark.parametrize("subprocess", [False, True], ids=["in-process", "subprocess"])
def test_a_45_s_session_expires_when_virtual_time_passes_it(subprocess: bool) -> None:
    with KafkaBroker(clock="manual", subprocess=subprocess) as broker:
        assert broker.clock is not None
        conn = _connect(broker)
        member, _generation = _join_and_sync(conn, "vt-group")
        assert _group(conn, "vt-group") == ("Stable", [member])
        started = time.monotonic()
        broker.advance(SESSION_TIMEOUT_MS - 1)
        assert _group(conn, "vt-group") == ("Stable", [member])
        assert broker.advance(1) >= 1
        # No polling: the expiry (and its records) are done when advance returns.
        assert _group(conn, "vt-group") == ("Empty", [])
        assert time.monotonic() - started < 2.0
        conn.close()


def test_advance_is_safe_from_any_thread_and_time_only_moves_forward() -> None:
    with KafkaBroker(clock="manual", start_ms=1_000_000) as broker:
        assert broker.clock is not None
        threads = [threading.Thread(target=broker.advance, args=(250,)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert broker.clock.now_ms() == 1_001_000
        with pytest.raises(ValueError):
            broker.clock.advance(-1)


@pytest.mark.parametrize("subprocess", [False, True], ids=["in-process", "subprocess"])
def test_a_failed_start_raises_and_leaves_nothing_behind(subprocess: bool) -> None:
    with KafkaBroker() as first:
        port = int(first.bootstrap_servers.rsplit(":", 1)[1])
        second = KafkaBroker(port=port, subprocess=subprocess)
        threads_before = threading.active_count()
        with pytest.raises((OSError, RuntimeError)):
            second.start()
        assert not second.running
        assert second._scratch is None  # its temporary directory is gone
        assert threading.active_count() == threads_before
        assert _api_versions_ok(first)
