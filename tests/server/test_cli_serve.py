"""`groupcoord` command line: dispatch, serve flags, readiness line, clean SIGTERM stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from groupcoord.cli import main as cli_main
from groupcoord.cli.serve import build_parser, config_from_args
from groupcoord.server.cluster_id import load_or_create_cluster_id
from groupcoord.server.config import BrokerConfig, Listener

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_listener_parse() -> None:
    assert Listener.parse("127.0.0.1:9092") == Listener("127.0.0.1", 9092)
    assert Listener.parse(":19092") == Listener("0.0.0.0", 19092)
    assert Listener.parse("[::1]:1") == Listener("::1", 1)
    with pytest.raises(ValueError):
        Listener.parse("nohost")


def test_flags_map_to_config(tmp_path: Path) -> None:
    ns = build_parser().parse_args([
        "--listen", "127.0.0.1:0", "--listen", "127.0.0.1:1", "--data-dir", str(tmp_path),
        "--advertised-listener", "example:9999", "--node-id", "4", "--fsync", "always",
        "--no-auto-create-topics", "--default-partitions", "3",
        "--group-initial-rebalance-delay-ms", "0", "--offsets-partitions", "5"])
    cfg = config_from_args(ns)
    assert len(cfg.listeners) == 2 and cfg.node_id == 4 and cfg.fsync == "always"
    assert not cfg.auto_create_topics and cfg.default_partitions == 3
    assert cfg.offsets_partitions == 5 and cfg.group_initial_rebalance_delay_ms == 0
    assert cfg.advertised() == Listener("example", 9999)
    with pytest.raises(ValueError):
        BrokerConfig(fsync="sometimes")


def test_cluster_id_is_kept_in_the_data_dir(tmp_path: Path) -> None:
    first = load_or_create_cluster_id(str(tmp_path), None)
    assert load_or_create_cluster_id(str(tmp_path), None) == first
    assert load_or_create_cluster_id(str(tmp_path), "given") == "given"
    assert load_or_create_cluster_id(str(tmp_path), None) == "given"


def test_main_dispatch(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main.main(["--help"]) == 0
    assert "serve" in capsys.readouterr().out
    assert cli_main.main(["bogus"]) == 2
    assert cli_main.main([]) == 2


def test_serve_announces_and_stops_cleanly(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=SRC)
    proc = subprocess.Popen(
        [sys.executable, "-m", "groupcoord", "serve", "--listen", "127.0.0.1:0", "--listen",
         "127.0.0.1:0", "--data-dir", str(tmp_path / "data")],
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    assert proc.stderr is not None
    lines = [proc.stderr.readline().decode(), proc.stderr.readline().decode()]
    assert all("groupcoord listening on 127.0.0.1:" in line for line in lines)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0
    rest = proc.stderr.read().decode()
    assert "listening on" not in rest and "Traceback" not in rest
    assert (tmp_path / "data" / "meta.properties").exists()


def test_connection_limit_flags_map_to_config(tmp_path: Path) -> None:
    cfg = config_from_args(build_parser().parse_args(["--data-dir", str(tmp_path)]))
    assert cfg.max_connections == cfg.max_connections_per_ip == 2**31 - 1
    assert cfg.max_connections_per_ip_overrides == ""
    assert cfg.connections_max_idle_ms == 600000
    cfg = config_from_args(build_parser().parse_args([
        "--data-dir", str(tmp_path), "--max-connections", "10", "--max-connections-per-ip",
        "0", "--max-connections-per-ip-overrides", "127.0.0.1:5,::1:2",
        "--connections-max-idle-ms", "-1"]))
    assert (cfg.max_connections, cfg.max_connections_per_ip) == (10, 0)
    assert cfg.max_connections_per_ip_overrides == "127.0.0.1:5,::1:2"
    assert cfg.connections_max_idle_ms == -1
    for bad in (["--max-connections-per-ip", "0"], ["--max-connections", "-1"],
                ["--max-connections-per-ip-overrides", "host"],
                ["--max-connections", str(2**31)]):
        with pytest.raises(ValueError):
            config_from_args(build_parser().parse_args(["--data-dir", str(tmp_path), *bad]))
