"""`serve --storage` options, on a real PostgreSQL server: the cluster id the first node
stores and every later one adopts (from any data dir), a `--cluster-id` naming another
refused, the lease settings and their checks, one node per process."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.cli.serve import build_parser, config_from_args
from groupcoord.server.config import BrokerConfig


def _config(*argv: str) -> BrokerConfig:
    return config_from_args(build_parser().parse_args(list(argv)))


def test_every_node_on_the_storage_has_the_first_nodes_cluster_id(
        storage_url: str, tmp_path: Path) -> None:
    first = _config("--storage", storage_url, "--data-dir", str(tmp_path / "a"),
                    "--node-id", "1")
    again = _config("--storage", storage_url, "--data-dir", str(tmp_path / "b"),
                    "--node-id", "2")
    assert again.cluster_id == first.cluster_id and first.storage == storage_url
    named = _config("--storage", storage_url, "--data-dir", str(tmp_path / "c"),
                    "--cluster-id", first.cluster_id)
    assert named.cluster_id == first.cluster_id
    with pytest.raises(ValueError, match="form cluster"):
        _config("--storage", storage_url, "--data-dir", str(tmp_path / "c"),
                "--cluster-id", "another-cluster")


def test_lease_settings_default_to_kafkas_broker_session(storage_url: str,
                                                       tmp_path: Path) -> None:
    defaults = _config("--storage", storage_url, "--data-dir", str(tmp_path))
    assert (defaults.broker_session_timeout_ms, defaults.broker_heartbeat_interval_ms) == (
        9000, 2000)
    short = _config("--storage", storage_url, "--data-dir", str(tmp_path),
                    "--broker-session-timeout-ms", "3000",
                    "--broker-heartbeat-interval-ms", "500")
    assert (short.broker_session_timeout_ms, short.broker_heartbeat_interval_ms) == (3000, 500)
    with pytest.raises(ValueError, match="heartbeat"):
        BrokerConfig(storage=storage_url, broker_session_timeout_ms=2000,
                     broker_heartbeat_interval_ms=2000)
    with pytest.raises(ValueError, match="one node per process"):
        BrokerConfig(storage=storage_url, nodes=2)
