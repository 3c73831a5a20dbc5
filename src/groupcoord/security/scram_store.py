"""SCRAM credentials kept in the data dir, salted, durable and replaced atomically.

Kafka keeps `UserScramCredentialRecord`s in its metadata log; here the whole (small) set is
one JSON file, `scram-credentials.json`, holding per user and mechanism only what
`ScramCredential` holds: salt, iterations, StoredKey and ServerKey (base64). Never a password.

Every change writes the complete new set through the storage `FileIO` seam (temp file,
write, fsync, rename) and then fsyncs the directory, and only then replaces the set in
memory: a crash leaves the old file or the new one, never a torn one, and nothing answers
from a state that is not on disk. A file that cannot be parsed stops the broker at start-up
rather than silently dropping every user.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable, Mapping

from groupcoord.security.scram import MECHANISMS, ScramCredential
from groupcoord.storage.fileio import OS_FILE_IO, FileIO

STORE_FILE = "scram-credentials.json"
FORMAT_VERSION = 1

Credentials = dict[str, dict[str, ScramCredential]]  # user -> mechanism name -> credential


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _encode(users: Mapping[str, Mapping[str, ScramCredential]]) -> bytes:
    body = {
        user: {mech: {"salt": _b64(c.salt), "stored_key": _b64(c.stored_key),
                      "server_key": _b64(c.server_key), "iterations": c.iterations}
               for mech, c in sorted(mechs.items())}
        for user, mechs in sorted(users.items()) if mechs
    }
    text = json.dumps({"version": FORMAT_VERSION, "users": body}, indent=1, sort_keys=True)
    return (text + "\n").encode("utf-8")


def _decode(text: str, path: str) -> Credentials:
    try:
        doc = json.loads(text)
        if doc.get("version") != FORMAT_VERSION:
            raise ValueError(f"unknown format version {doc.get('version')!r}")
        users: Credentials = {}
        for user, mechs in doc["users"].items():
            users[user] = {}
            for mech, fields in mechs.items():
                if mech not in MECHANISMS:
                    raise ValueError(f"unknown mechanism {mech!r}")
                users[user][mech] = ScramCredential(
                    base64.b64decode(fields["salt"], validate=True),
                    base64.b64decode(fields["stored_key"], validate=True),
                    base64.b64decode(fields["server_key"], validate=True),
                    int(fields["iterations"]))
        return users
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"cannot read SCRAM credentials {path}: {exc}") from exc


class ScramCredentialStore:
    """The broker's SCRAM users; `lookup` is what the SCRAM SASL server asks."""

    def __init__(self, data_dir: str, io: FileIO = OS_FILE_IO) -> None:
        self.data_dir = data_dir
        self.path = os.path.join(data_dir, STORE_FILE)
        self._io = io
        self._users: Credentials = {}
        try:
            self._users = _decode(io.read_text(self.path), self.path)
        except FileNotFoundError:
            pass

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        """A snapshot: user -> mechanism -> credential (users with at least one)."""
        return {user: dict(mechs) for user, mechs in self._users.items() if mechs}

    def apply(self, upserts: Iterable[tuple[str, str, ScramCredential]] = (),
              deletions: Iterable[tuple[str, str]] = ()) -> None:
        """Make the changes durable, then visible. OSError leaves both file and memory as
        they were."""
        users = {user: dict(mechs) for user, mechs in self._users.items()}
        for user, mechanism in deletions:
            users.get(user, {}).pop(mechanism, None)
        for user, mechanism, credential in upserts:
            users.setdefault(user, {})[mechanism] = credential
        users = {user: mechs for user, mechs in users.items() if mechs}
        self._io.makedirs(self.data_dir)
        self._io.replace_file(self.path, _encode(users))
        self._io.fsync_dir(self.data_dir)
        self._users = users
