"""What `python -m groupcoord serve` does before its listener is bound: only what answering
ApiVersions needs. The heavy modules (storage, log format, compression, coordinators,
uuid/platform, shutil's compression modules) load after the bind, the cyclic collector is
paused until the broker has started, and the cluster id is stored (with an fsync) after the
bind, before any other request is answered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from groupcoord.server.cluster_id import (
    META_FILE,
    load_or_create_cluster_id,
    new_cluster_id,
    stored_cluster_id,
)

SRC = str(Path(__file__).resolve().parents[2] / "src")

# Runs `python -m groupcoord serve ...` (as runpy does for -m) and, at the first bind of a
# listening socket, prints what is imported and whether the collector runs, then exits.
AT_BIND = """
import gc, os, runpy, sys

def at_bind(event, args):
    if event == "socket.bind":
        seen = {"modules": sorted(sys.modules), "gc": gc.isenabled(),
                "meta": os.path.exists(os.path.join(data_dir, "meta.properties"))}
        import json
        print(json.dumps(seen), flush=True)
        os._exit(0)

data_dir = sys.argv[-1]

sys.addaudithook(at_bind)
sys.argv = ["groupcoord", "serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir]
runpy.run_module("groupcoord", run_name="__main__", alter_sys=True)
"""

# Not one of these may load before the bind (each is a module or a package prefix).
NOT_BEFORE_BIND = (
    "shutil", "bz2", "lzma", "zlib", "uuid", "platform", "cramjam", "json", "ipaddress",
    "multiprocessing", "hashlib", "dataclasses", "groupcoord.logformat", "groupcoord.storage.manager",
    "groupcoord.storage.log", "groupcoord.storage.config", "groupcoord.storage.memory_io",
    "groupcoord.coordinator", "groupcoord.server.runtime.coordinator_runtime",
    "groupcoord.server.share_runtime", "groupcoord.server.transactions",
    "groupcoord.server.topics", "groupcoord.server.authorization",
    "groupcoord.security.acl", "groupcoord.security.scram_store", "groupcoord.apis.metadata",
    "groupcoord.testing",
    # The enums of 138 error codes and 91 api keys: the request path uses their numbers
    # (wire.error_code_numbers, wire.api_key_numbers); the modules loaded after the bind
    # build ErrorCode.
    "groupcoord.wire.errors", "groupcoord.wire.api_keys",
    # A plain `serve` command line is read from the option table (cli.options); argparse
    # (with gettext) is for --help and for what that reading leaves.
    "argparse", "gettext",
    # The handlers' protocols load with the handlers; the dispatcher needs only RawResponse.
    "groupcoord.apis.context",
)


def _at_bind(data_dir: Path) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", AT_BIND, str(data_dir)], capture_output=True,
                         text=True, timeout=120, check=False,
                         env=dict(os.environ, PYTHONPATH=SRC))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def at_bind(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    return _at_bind(tmp_path_factory.mktemp("data"))


def test_nothing_heavy_is_imported_before_the_bind(at_bind: dict[str, object]) -> None:
    modules = at_bind["modules"]
    assert isinstance(modules, list)
    loaded = [m for m in modules
              if any(m == banned or m.startswith(banned + ".") for banned in NOT_BEFORE_BIND)]
    assert loaded == []
    # What is there: the real broker's listener and the ApiVersions handler.
    assert {"groupcoord.server.broker", "groupcoord.server.acceptor",
            "groupcoord.apis.api_versions"} <= set(modules)


def test_the_collector_is_paused_and_the_cluster_id_not_yet_written(
        at_bind: dict[str, object]) -> None:
    assert at_bind["gc"] is False
    assert at_bind["meta"] is False


def test_the_heavy_modules_are_what_the_broker_loads_after_the_bind() -> None:
    # The test above would pass vacuously if the names no longer existed.
    from groupcoord.server.import_ahead import LOADED_AFTER_BIND

    after = _modules_after_importing(LOADED_AFTER_BIND)
    for name in ("groupcoord.storage.manager", "groupcoord.logformat.batch", "cramjam",
                 "groupcoord.server.runtime.coordinator_runtime", "groupcoord.server.transactions",
                 "groupcoord.security.acl", "uuid", "groupcoord.wire.errors"):
        assert name in after, name


def test_the_cluster_id_read_before_the_bind_is_stored_by_the_broker(tmp_path: Path) -> None:
    assert stored_cluster_id(str(tmp_path)) is None
    made = new_cluster_id()
    assert len(made) == 22 and made != new_cluster_id()  # Kafka's base64 of a random UUID
    from groupcoord.server.cluster_id import store_cluster_id

    store_cluster_id(str(tmp_path / "new"), made)
    assert stored_cluster_id(str(tmp_path / "new")) == made
    before = (tmp_path / "new" / META_FILE).stat().st_mtime_ns
    store_cluster_id(str(tmp_path / "new"), made)  # already there: not written again
    assert (tmp_path / "new" / META_FILE).stat().st_mtime_ns == before
    assert load_or_create_cluster_id(str(tmp_path / "new"), None) == made


def test_a_started_broker_has_stored_its_cluster_id_and_collects_again(tmp_path: Path) -> None:
    """The whole serve path: after the readiness line meta.properties names the id the
    broker serves, and the collector runs again."""
    code = ("import gc, runpy, sys, threading\n"
            "from groupcoord.server.runtime import heap\n"
            "real = heap.settle_after_start\n"
            "def settle():\n"
            "    real()\n"
            "    print('gc', gc.isenabled(), flush=True)\n"
            "heap.settle_after_start = settle\n"
            "sys.argv = ['groupcoord', 'serve', '--listen', '127.0.0.1:0', '--data-dir',"
            f" {str(tmp_path)!r}, '--cluster-id', 'given-id']\n"
            "runpy.run_module('groupcoord', run_name='__main__', alter_sys=True)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=SRC))
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "gc True"
        assert stored_cluster_id(str(tmp_path)) == "given-id"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_client_handlers_imported_while_the_logs_load_exist() -> None:
    from groupcoord.server.broker import CLIENT_HANDLERS

    assert set(CLIENT_HANDLERS) <= _modules_after_importing(CLIENT_HANDLERS)


def _modules_after_importing(names: tuple[str, ...]) -> set[str]:
    """`sys.modules` of a fresh interpreter once it has imported `names`."""
    code = ("import sys\n"
            f"for name in {names!r}: __import__(name)\n"
            "print(' '.join(sorted(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True, env=dict(os.environ, PYTHONPATH=SRC))
    return set(out.stdout.split())
