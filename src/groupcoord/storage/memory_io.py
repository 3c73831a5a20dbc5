"""A data dir kept in memory: the ``FileIO`` of a broker that needs no files (tests).

Files are inodes (a ``bytearray`` and a modification time) named by path; a descriptor
refers to its inode, not its name, so a segment renamed or unlinked while open behaves as on
POSIX (compaction swaps files under open descriptors). Directories are a set of paths.
Descriptors are numbered from ``FIRST_FD``, far above the operating system's, so a call that
bypassed the seam fails with EBADF instead of touching a real file. ``fsync`` does nothing:
there is nothing to make durable. Everything runs on the broker's one thread (the event
loop and the storage calls it makes), as with the operating system's calls.
"""

from __future__ import annotations

import errno
import os
import posixpath
import time
from dataclasses import dataclass, field

from groupcoord.storage.fileio import FileIO

FIRST_FD = 1 << 24
# The root under which a memory data dir is named; it exists on no disk.
MEMORY_ROOT = "/groupcoord-memory"


def memory_data_dir() -> str:
    """A fresh name for a data dir in memory (the name shows in logs and DescribeConfigs)."""
    return f"{MEMORY_ROOT}/{os.urandom(8).hex()}"


@dataclass
class _Inode:
    data: bytearray = field(default_factory=bytearray)
    mtime_ms: int = field(default_factory=lambda: time.time_ns() // 1_000_000)


@dataclass
class _Open:
    inode: _Inode
    append: bool
    position: int = 0


def _error(code: int, path: str) -> OSError:
    return OSError(code, os.strerror(code), path)


class MemoryFileIO(FileIO):
    shared_across_processes = False

    def __init__(self) -> None:
        self.files: dict[str, _Inode] = {}
        self.dirs: set[str] = {"/"}
        self.fds: dict[int, _Open] = {}
        self._next_fd = FIRST_FD

    # -- descriptors -------------------------------------------------------------------------

    def open(self, path: str, flags: int, mode: int = 0o644) -> int:
        path = posixpath.normpath(path)
        inode = self.files.get(path)
        if inode is None:
            if not flags & os.O_CREAT:
                raise _error(errno.ENOENT, path)
            self._parent_must_exist(path)
            inode = self.files[path] = _Inode()
        elif flags & os.O_CREAT and flags & os.O_EXCL:
            raise _error(errno.EEXIST, path)
        if flags & os.O_TRUNC:
            del inode.data[:]
        fd = self._next_fd
        self._next_fd += 1
        self.fds[fd] = _Open(inode, bool(flags & os.O_APPEND))
        return fd

    def close(self, fd: int) -> None:
        self._fd(fd)
        del self.fds[fd]

    def write(self, fd: int, data: bytes | bytearray | memoryview) -> int:
        opened = self._fd(fd)
        position = len(opened.inode.data) if opened.append else opened.position
        written = self._put(opened.inode, data, position)
        opened.position = position + written
        return written

    def pwrite(self, fd: int, data: bytes | bytearray | memoryview, offset: int) -> int:
        return self._put(self._fd(fd).inode, data, offset)

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        return bytes(self._fd(fd).inode.data[offset:offset + length])

    def fsync(self, fd: int) -> None:
        self._fd(fd)

    def ftruncate(self, fd: int, size: int) -> None:
        inode = self._fd(fd).inode
        if size < len(inode.data):
            del inode.data[size:]
        else:
            inode.data.extend(bytes(size - len(inode.data)))
        inode.mtime_ms = time.time_ns() // 1_000_000

    def size(self, fd: int) -> int:
        return len(self._fd(fd).inode.data)

    def mtime_ms(self, fd: int) -> int:
        return self._fd(fd).inode.mtime_ms

    # -- names -------------------------------------------------------------------------------

    def read_bytes(self, path: str) -> bytes:
        inode = self.files.get(posixpath.normpath(path))
        if inode is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        return bytes(inode.data)

    def exists(self, path: str) -> bool:
        path = posixpath.normpath(path)
        return path in self.files or path in self.dirs

    def isdir(self, path: str) -> bool:
        return posixpath.normpath(path) in self.dirs

    def listdir(self, path: str) -> list[str]:
        path = posixpath.normpath(path)
        if path not in self.dirs:
            raise _error(errno.ENOENT, path)
        prefix = path.rstrip("/") + "/"
        return sorted({name[len(prefix):] for name in (*self.files, *self.dirs)
                       if name.startswith(prefix) and "/" not in name[len(prefix):]})

    def makedirs(self, path: str) -> None:
        path = posixpath.normpath(path)
        if path in self.files:
            raise _error(errno.EEXIST, path)
        while path not in self.dirs:
            self.dirs.add(path)
            path = posixpath.dirname(path)

    def unlink(self, path: str) -> None:
        path = posixpath.normpath(path)
        if self.files.pop(path, None) is None:
            raise _error(errno.EISDIR if path in self.dirs else errno.ENOENT, path)

    def replace(self, src: str, dst: str) -> None:
        src, dst = posixpath.normpath(src), posixpath.normpath(dst)
        if src in self.files:
            if dst in self.dirs:
                raise _error(errno.EISDIR, dst)
            self._parent_must_exist(dst)
            self.files[dst] = self.files.pop(src)
            return
        if src not in self.dirs:
            raise _error(errno.ENOENT, src)
        if dst in self.files or any(self._under(name, dst) for name in (*self.files, *self.dirs)):
            raise _error(errno.ENOTEMPTY, dst)
        self._parent_must_exist(dst)
        for name in [n for n in self.files if self._under(n, src)]:
            self.files[dst + name[len(src):]] = self.files.pop(name)
        for name in [d for d in self.dirs if d == src or self._under(d, src)]:
            self.dirs.discard(name)
            self.dirs.add(dst + name[len(src):])

    def rmtree(self, path: str) -> None:
        path = posixpath.normpath(path)
        for name in [n for n in self.files if self._under(n, path)]:
            del self.files[name]
        self.dirs -= {d for d in self.dirs if d == path or self._under(d, path)}

    def fsync_dir(self, path: str) -> None:
        if posixpath.normpath(path) not in self.dirs:
            raise _error(errno.ENOENT, path)

    # -- helpers -----------------------------------------------------------------------------

    def _fd(self, fd: int) -> _Open:
        opened = self.fds.get(fd)
        if opened is None:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        return opened

    def _put(self, inode: _Inode, data: bytes | bytearray | memoryview, offset: int) -> int:
        view = memoryview(data).cast("B")
        end = offset + len(view)
        if offset > len(inode.data):
            inode.data.extend(bytes(offset - len(inode.data)))
        inode.data[offset:end] = view
        inode.mtime_ms = time.time_ns() // 1_000_000
        return len(view)

    def _parent_must_exist(self, path: str) -> None:
        if posixpath.dirname(path) not in self.dirs:
            raise _error(errno.ENOENT, path)

    @staticmethod
    def _under(name: str, directory: str) -> bool:
        return name.startswith(directory.rstrip("/") + "/")
