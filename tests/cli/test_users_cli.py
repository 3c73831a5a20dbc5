"""`groupcoord users`: add, list and remove SCRAM users of a data dir, and a broker started
on that data dir authenticates them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from helpers.sasl_wire import connect, scram_login
from server.broker_inproc import InProcBroker, run

from groupcoord.cli import main as cli_main
from groupcoord.security.config import SecurityConfig
from groupcoord.server.config import Listener
from groupcoord.storage.dir_lock import lock_data_dir


def users(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli_main.main(["users", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_add_list_remove(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                         monkeypatch: pytest.MonkeyPatch) -> None:
    data = str(tmp_path)
    assert users(capsys, "add", "--data-dir", data, "--user", "alice",
                 "--password", "correct-horse-battery")[0] == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("from-stdin\n"))
    assert users(capsys, "add", "--data-dir", data, "--user", "bob", "--password-stdin",
                 "--mechanism", "SCRAM-SHA-512", "--iterations", "8192")[0] == 0
    code, out, _ = users(capsys, "list", "--data-dir", data, "--json")
    assert code == 0 and json.loads(out) == {
        "alice": {"SCRAM-SHA-256": 4096, "SCRAM-SHA-512": 4096}, "bob": {"SCRAM-SHA-512": 8192}}
    stored = (tmp_path / "scram-credentials.json").read_text()
    assert "correct-horse" not in stored and "from-stdin" not in stored
    code, _, err = users(capsys, "remove", "--data-dir", data, "--user", "bob",
                         "--mechanism", "SCRAM-SHA-256")
    assert code == 1 and "no SCRAM-SHA-256 credential" in err
    assert users(capsys, "remove", "--data-dir", data, "--user", "bob")[0] == 0
    code, out, _ = users(capsys, "list", "--data-dir", data)
    assert out == "alice: SCRAM-SHA-256 (iterations=4096), SCRAM-SHA-512 (iterations=4096)\n"
    code, _, err = users(capsys, "add", "--data-dir", data, "--user", "x", "--password", "p",
                         "--iterations", "100")
    assert code == 1 and "iterations" in err


def test_a_broker_authenticates_users_added_offline(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    users(capsys, "add", "--data-dir", str(data), "--user", "alice", "--password", "pw")

    async def main() -> None:
        async with InProcBroker(data, listeners=(Listener("127.0.0.1", 0, "SASL_PLAINTEXT"),),
                                security=SecurityConfig()) as b:
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                final, scram = await scram_login(await connect(b.port), mechanism, "alice", "pw")
                assert final.error_code == 0 and scram.server_final_ok(final.auth_bytes)
    run(main())


def test_changes_refuse_a_data_dir_a_broker_holds(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    data = str(tmp_path)
    held = lock_data_dir(data)
    try:
        code, _, err = users(capsys, "add", "--data-dir", data, "--user", "alice",
                             "--password", "correct-horse-battery")
        assert code == 1 and "is in use by process" in err and len(err.splitlines()) == 1
        assert not (tmp_path / "scram-credentials.json").exists()
        assert users(capsys, "list", "--data-dir", data)[0] == 0  # reading is fine
    finally:
        held.release()
    assert users(capsys, "add", "--data-dir", data, "--user", "alice",
                 "--password", "correct-horse-battery")[0] == 0
