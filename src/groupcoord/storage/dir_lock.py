"""One owner per data dir: the lock on ``<data_dir>/.lock`` that Kafka takes on a log dir.

Kafka's ``LogManager.lockLogDirs`` opens ``.lock`` (``FileLock``: create, read, write) and
calls ``FileChannel.tryLock()``, on Linux an ``fcntl(F_SETLK)`` write lock over the whole
file. Taking the very same lock makes a running Kafka broker and a groupcoord broker (and two
groupcoord brokers) exclude each other on one directory. The broker takes it before it
touches anything else in the dir and holds it until it stops; a holder that dies (SIGKILL
included) loses it with its descriptors, so nothing stale is ever left to clean up. The
file itself stays empty and is left in place (Kafka deletes it at shutdown, which lets a
second opener lock an unlinked file; keeping it costs nothing).

POSIX record locks belong to a process, not a descriptor: a second lock in the same process
succeeds, and closing *any* descriptor of the file drops the process's lock. So the dirs this
process holds are also kept in ``_HELD`` (keyed by the dir's device and inode), checked
before ``.lock`` is even opened: two embedded brokers on one dir exclude each other too, as
Java's ``OverlappingFileLockException`` makes two ``FileLock`` s of one JVM do.

Kept free of the storage layer's heavier modules: the broker takes the lock before it binds
its listeners.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import threading

LOCK_FILE = ".lock"

# struct flock on Linux: l_type, l_whence (short), l_start, l_len (off_t), l_pid (pid_t),
# padded to the struct's alignment ("0q").
_FLOCK = "@hhqqi0q"

_HELD: set[tuple[int, int]] = set()
_HELD_GUARD = threading.Lock()


class DataDirLocked(OSError):
    """Another broker (groupcoord, or Kafka) holds the data dir."""

    def __init__(self, data_dir: str, holder_pid: int | None) -> None:
        self.data_dir = data_dir
        self.holder_pid = holder_pid
        holder = f"process {holder_pid}" if holder_pid else "another process"
        super().__init__(
            errno.EAGAIN,
            f"data dir {os.path.abspath(data_dir)} is in use by {holder} (it holds {LOCK_FILE}); one broker "
            f"per data dir")

    def __str__(self) -> str:
        return str(self.strerror)


class DataDirLock:
    """The held lock of one data dir; `release` gives it up (once)."""

    def __init__(self, data_dir: str, fd: int, key: tuple[int, int]) -> None:
        self.data_dir = data_dir
        self._fd: int | None = fd
        self._key = key

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        # Closing the descriptor drops the fcntl lock.
        os.close(fd)
        with _HELD_GUARD:
            _HELD.discard(self._key)


def lock_data_dir(data_dir: str) -> DataDirLock:
    """Create ``data_dir`` if needed and take its ``.lock``; raises `DataDirLocked` if a
    broker in this or another process holds it. Nothing else in the dir is touched."""
    os.makedirs(data_dir, exist_ok=True)
    st = os.stat(data_dir)
    key = (st.st_dev, st.st_ino)
    path = os.path.join(data_dir, LOCK_FILE)
    with _HELD_GUARD:
        if key in _HELD:
            # Opening `.lock` here and closing it again would drop this process's lock.
            raise DataDirLocked(data_dir, os.getpid())
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise
            pid = lock_holder(fd)
            os.close(fd)
            raise DataDirLocked(data_dir, pid) from None
        _HELD.add(key)
    return DataDirLock(data_dir, fd, key)


def lock_holder(fd: int) -> int | None:
    """The pid holding a conflicting lock on ``fd``'s file (``F_GETLK``); None if none is
    held or the holder is not a process this one can name (an open file description lock,
    or another pid namespace)."""
    query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
    try:
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
    except OSError:
        return None
    lock_type, _, _, _, pid = struct.unpack(_FLOCK, answer)
    if lock_type == fcntl.F_UNLCK or pid <= 0:
        return None
    return int(pid)
