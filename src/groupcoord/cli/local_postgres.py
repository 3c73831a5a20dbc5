"""A throwaway PostgreSQL server on this machine: `initdb` into a temporary directory, started
on a free loopback port with fsync and synchronous commit on (what `serve --storage` demands),
one database created; stopped and its files removed afterwards. The cluster demo runs its
nodes on one, and the tests' fixture (tests/helpers/postgres_server.py) is this server.

PostgreSQL refuses to run as root: then the cluster belongs to the unprivileged `postgres`
user of Debian's package (`nobody` without it), which runs initdb and pg_ctl through
`runuser`; the data lives in a directory that user owns. Readiness is pg_ctl's own bounded
wait (`-w -t`), never a sleep here.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import psycopg

START_TIMEOUT_S = 60
# A port taken by another process between choosing it and the server binding it: try anew.
START_ATTEMPTS = 3
DATABASE = "groupcoord"
SUPERUSER = "groupcoord"
# Who runs the server when we run as root, first found first.
UNPRIVILEGED_USERS = ("postgres", "nobody")


def find_bin_dir() -> Path | None:
    """The directory of `initdb`, `pg_ctl` and `postgres`: from PATH, else the newest
    /usr/lib/postgresql/<version>/bin (Debian keeps them off PATH); None when not installed."""
    found = shutil.which("pg_ctl")
    if found is not None and shutil.which("initdb") is not None:
        return Path(found).resolve().parent
    versions = sorted((p for p in Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")),
                      key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit()
                      else -1)
    return versions[-1].parent if versions else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_user() -> pwd.struct_passwd | None:
    """The unprivileged account to run the server as, or None to run it as ourselves."""
    if os.geteuid() != 0:
        return None
    for name in UNPRIVILEGED_USERS:
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root with no unprivileged user to run PostgreSQL as")


class LocalPostgres:
    """One PostgreSQL cluster in a temporary directory; `dsn` names its database."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.user = _server_user()
        self.work_dir = Path(tempfile.mkdtemp(prefix="groupcoord-pg-"))
        self.data_dir = self.work_dir / "data"
        self.log_path = self.work_dir / "server.log"
        self.port = 0
        if self.user is not None:
            os.chown(self.work_dir, self.user.pw_uid, self.user.pw_gid)

    @property
    def dsn(self) -> str:
        return self.dsn_for(DATABASE)

    def dsn_for(self, database: str) -> str:
        return (f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname={database} "
                "connect_timeout=10")

    def _run(self, program: str, *args: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin_dir / program), *args]
        if self.user is not None:
            command = ["runuser", "-u", self.user.pw_name, "--", *command]
        return subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              cwd=self.work_dir, check=False)

    def _checked(self, program: str, *args: str) -> None:
        done = self._run(program, *args)
        if done.returncode != 0:
            raise RuntimeError(f"{program} {' '.join(args)} failed ({done.returncode}):\n"
                               f"{done.stdout}{done.stderr}{self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            return self.log_path.read_text()[-3000:]
        except OSError:
            return ""

    def start(self) -> None:
        """initdb, start on a free port (pg_ctl waits until it accepts connections), and
        create the database."""
        self._checked("initdb", "-D", str(self.data_dir), "-U", SUPERUSER, "--auth=trust",
                      "--encoding=UTF8", "--no-instructions")
        for attempt in range(START_ATTEMPTS):
            self.port = _free_port()
            # The socket directory in our own tree: the packaged default may not exist here.
            options = (f"-c listen_addresses=127.0.0.1 -p {self.port} "
                       f"-c unix_socket_directories={self.work_dir} "
                       "-c fsync=on -c synchronous_commit=on")
            started = self._run("pg_ctl", "start", "-D", str(self.data_dir), "-l",
                                str(self.log_path), "-w", "-t", str(START_TIMEOUT_S),
                                "-o", options)
            if started.returncode == 0:
                break
            if attempt == START_ATTEMPTS - 1:
                raise RuntimeError(f"PostgreSQL did not start:\n{started.stdout}"
                                   f"{started.stderr}{self._log_tail()}")
        self.create_database(DATABASE)

    def url_for(self, database: str) -> str:
        """The database as a `postgresql://` URL (what `groupcoord serve --storage` takes)."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, database: str) -> None:
        """A new, empty database (`database` a plain identifier)."""
        with psycopg.connect(self.dsn_for("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {database}")

    def restart(self) -> None:
        """Stop (fast: open connections are cut) and start again on the same port and data
        (pg_ctl reuses the options of the last start); returns once the server accepts
        connections."""
        # The server's output goes to its log: to pg_ctl's captured stdout, it would keep
        # that pipe open and `subprocess.run` would never see it end.
        self._checked("pg_ctl", "restart", "-D", str(self.data_dir), "-l", str(self.log_path),
                      "-m", "fast", "-w", "-t", str(START_TIMEOUT_S))

    def stop(self) -> None:
        if (self.data_dir / "postmaster.pid").exists():
            self._run("pg_ctl", "stop", "-D", str(self.data_dir), "-m", "fast", "-w",
                      "-t", str(START_TIMEOUT_S))
        shutil.rmtree(self.work_dir, ignore_errors=True)
