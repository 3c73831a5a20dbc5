"""The SCRAM credential store: salted only, durable across reopen, replaced atomically (a
failed write leaves the old file and the old answers), and loud about a damaged file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from groupcoord.security.scram import SHA_256, SHA_512, credential_from_password
from groupcoord.security.scram_store import STORE_FILE, ScramCredentialStore
from groupcoord.storage.fileio import FileIO


class FailingIO(FileIO):
    def __init__(self) -> None:
        self.fail = False

    def fsync(self, fd: int) -> None:
        if self.fail:
            raise OSError(5, "Input/output error")
        super().fsync(fd)


def test_round_trip_and_never_the_password(tmp_path: Path) -> None:
    store = ScramCredentialStore(str(tmp_path))
    alice = credential_from_password(SHA_256, "hunter2-password", 4096)
    store.apply([("alice", SHA_256.name, alice),
                 ("alice", SHA_512.name, credential_from_password(SHA_512, "hunter2-password"))])
    raw = (tmp_path / STORE_FILE).read_text()
    assert "hunter2" not in raw
    assert set(json.loads(raw)["users"]["alice"][SHA_256.name]) == {
        "salt", "iterations", "stored_key", "server_key"}
    again = ScramCredentialStore(str(tmp_path))
    assert again.lookup("alice", SHA_256.name) == alice
    again.apply(deletions=[("alice", SHA_256.name), ("alice", SHA_512.name)])
    assert ScramCredentialStore(str(tmp_path)).users() == {}
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_a_failed_write_changes_nothing(tmp_path: Path) -> None:
    io = FailingIO()
    store = ScramCredentialStore(str(tmp_path), io)
    first = credential_from_password(SHA_256, "one")
    store.apply([("alice", SHA_256.name, first)])
    before = (tmp_path / STORE_FILE).read_bytes()
    io.fail = True
    with pytest.raises(OSError):
        store.apply([("alice", SHA_256.name, credential_from_password(SHA_256, "two")),
                     ("bob", SHA_256.name, first)])
    assert (tmp_path / STORE_FILE).read_bytes() == before
    assert store.lookup("alice", SHA_256.name) == first and store.lookup("bob", SHA_256.name) is None
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


@pytest.mark.parametrize("content", ["{", "[]", '{"version": 9, "users": {}}',
                                     '{"version": 1, "users": {"a": {"SCRAM-SHA-1": {}}}}',
                                     ('{"version": 1, "users": {"a": {"SCRAM-SHA-256": '
                                     '{"salt": "!!", "stored_key": "", "server_key": "", '
                                     '"iterations": 4096}}}}')])
def test_a_damaged_file_is_an_error(tmp_path: Path, content: str) -> None:
    (tmp_path / STORE_FILE).write_text(content)
    with pytest.raises(ValueError, match="SCRAM credentials"):
        ScramCredentialStore(str(tmp_path))
