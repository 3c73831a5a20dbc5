"""Consumer-group members of any client as processes the test drives, and what they report.

A `MemberHost` is one process hosting members of one client: `member_host.py` for the
Python clients, the Java harness mode `group-members` for the Java client. Both speak the
same stdin/stdout JSON-lines protocol (see `member_host.py`), so one scenario driver serves
every client. Several members share a host (threads) to keep process count and start-up
cost low; a member that must die without leaving gets a host of its own, which is SIGKILLed.

The `Ledger` folds every host's events into per-member state: the partitions each member
owns according to its rebalance callbacks, every record it processed and whether the
commit after that poll succeeded. The checks in `helpers.group_checks` read it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from helpers import java
from helpers.polling import wait_for

MEMBER_HOST = Path(__file__).resolve().parent / "member_host.py"
CLOSE_TIMEOUT_S = 30.0


@dataclass
class MemberLog:
    """What one member reported, in its own order."""

    owned: set[int] = field(default_factory=set)
    callbacks: int = 0
    # One entry per processed poll: the [partition, offset] pairs and whether the commit
    # right after it succeeded (None while that commit is still outstanding).
    batches: list[list[Any]] = field(default_factory=list)
    commit_failures: list[str] = field(default_factory=list)
    generations: list[int] = field(default_factory=list)
    closed: bool = False
    errors: list[str] = field(default_factory=list)


class Ledger:
    """Every member's reports, updated by the hosts' reader threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.members: dict[int, MemberLog] = {}
        # (time ms, member, event, partitions) of every rebalance callback, as reported.
        self.ownership: list[tuple[float, int, str, list[int]]] = []

    def apply(self, event: dict[str, Any]) -> None:
        with self.lock:
            log = self.members.setdefault(int(event["m"]), MemberLog())
            kind = event["ev"]
            if kind in ("assigned", "revoked", "lost"):
                self.ownership.append((float(event.get("t", 0)), int(event["m"]), kind,
                                       list(event["parts"])))
                log.callbacks += 1
                parts = set(event["parts"])
                log.owned = log.owned | parts if kind == "assigned" else log.owned - parts
                if "generation" in event:
                    log.generations.append(int(event["generation"]))
            elif kind == "records":
                log.batches.append([event["recs"], None])
            elif kind in ("committed", "commit_failed"):
                if log.batches and log.batches[-1][1] is None:
                    log.batches[-1][1] = kind == "committed"
                if kind == "commit_failed":
                    log.commit_failures.append(str(event.get("error")))
            elif kind == "closed":
                log.closed = True
            elif kind == "error":
                log.errors.append(str(event.get("message")))

    def forget(self, idx: int) -> MemberLog | None:
        """Drop member `idx`'s reports (before a new process takes over its identity)."""
        with self.lock:
            return self.members.pop(idx, None)

    def owned(self) -> dict[int, set[int]]:
        with self.lock:
            return {m: set(log.owned) for m, log in self.members.items()}

    def processed(self) -> set[tuple[int, int]]:
        with self.lock:
            return {(p, o) for log in self.members.values() for recs, _ in log.batches
                    for p, o in recs}

    def errors(self) -> dict[int, list[str]]:
        with self.lock:
            return {m: list(log.errors) for m, log in self.members.items() if log.errors}

    def callbacks(self) -> dict[int, int]:
        with self.lock:
            return {m: log.callbacks for m, log in self.members.items()}


class MemberHost:
    """One host process; members are addressed by index, client.id `m<index>`."""

    def __init__(self, cmd: list[str], ledger: Ledger, stderr_path: Path) -> None:
        self.ledger = ledger
        self.stderr_path = stderr_path
        self._stderr: IO[bytes] = stderr_path.open("ab")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr, text=True, bufsize=1,
                                     env=_child_env())
        self.members: set[int] = set()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.ledger.apply(json.loads(line))

    def _send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def start(self, idx: int, instance_id: str | None = None) -> None:
        self.members.add(idx)
        self._send(f"start {idx}" + (f" {instance_id}" if instance_id else ""))

    def leave(self, idx: int) -> None:
        """Close member `idx` the client's normal way and wait until it has closed."""
        self._send(f"leave {idx}")
        self.members.discard(idx)
        wait_for(lambda: self.ledger.members.get(idx, MemberLog()).closed,
                 f"member {idx} to close", CLOSE_TIMEOUT_S)

    def kill(self) -> None:
        """SIGKILL: the members vanish without LeaveGroup, as in a crash."""
        self.proc.kill()
        self.proc.wait(CLOSE_TIMEOUT_S)
        self._reader.join(5)  # everything it printed before dying is in the ledger now
        self.members.clear()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self._send("exit")
                self.proc.stdin.close()  # type: ignore[union-attr]
                self.proc.wait(CLOSE_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(CLOSE_TIMEOUT_S)
        self._reader.join(5)
        self._stderr.close()

    def stderr_tail(self, chars: int = 3000) -> str:
        return self.stderr_path.read_text(errors="replace")[-chars:]


HostFactory = Callable[[Ledger, str], MemberHost]


def host_factory(client: str, bootstrap: str, topic: str, group: str, assignor: str,
                 tmp: Path) -> HostFactory:
    """A function making hosts of `client` for this group; `name` labels the stderr file."""
    if client == "java":
        prefix = java.harness_command("group-members")
    else:
        prefix = [sys.executable, str(MEMBER_HOST), "--client", client]
    args = ["--bootstrap", bootstrap, "--topic", topic, "--group", group,
            "--assignor", assignor]

    def make(ledger: Ledger, name: str) -> MemberHost:
        return MemberHost([*prefix, *args], ledger, tmp / f"{group}-{name}.stderr")

    return make


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    return env
