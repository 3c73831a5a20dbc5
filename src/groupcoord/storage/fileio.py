"""The file operations storage performs that can fail on a sick disk, behind one seam.

Every write, positional write, fsync and truncate of a segment, an index or a checkpoint goes
through a ``FileIO``; reads stay plain ``os.pread`` (a failing read raises on its own and
changes nothing). The default ``OS_FILE_IO`` is the operating system; tests and the embedded
test broker pass ``storage.faults.FaultInjectingFileIO`` to make the Nth write fail with
ENOSPC or EIO, write short, or fail an fsync, exactly where the real disk would.

``FileIO.open`` is the only way storage opens a file for writing, so an injector can tell
which file a descriptor belongs to (faults are usually aimed at ``.log`` files only).
"""

from __future__ import annotations

import os


class FileIO:
    """The operating system's file calls (Kafka's ``FileChannel`` writes and ``force``)."""

    def open(self, path: str, flags: int, mode: int = 0o644) -> int:
        return os.open(path, flags, mode)

    def close(self, fd: int) -> None:
        os.close(fd)

    def write(self, fd: int, data: bytes | bytearray | memoryview) -> int:
        return os.write(fd, data)

    def pwrite(self, fd: int, data: bytes | bytearray | memoryview, offset: int) -> int:
        return os.pwrite(fd, data, offset)

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def ftruncate(self, fd: int, size: int) -> None:
        os.ftruncate(fd, size)

    def write_all(self, fd: int, data: bytes | bytearray | memoryview) -> None:
        """Write every byte or raise; a short count from a full disk is an ENOSPC."""
        view = memoryview(data)
        while view:
            written = self.write(fd, view)
            if written <= 0:
                raise OSError(28, "No space left on device (short write)")
            view = view[written:]

    def replace_file(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` atomically: temp file, fsync, rename, as Kafka's
        checkpoint files. A failure leaves the old file in place and removes the temp."""
        tmp = path + ".tmp"
        fd = self.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            self.write_all(fd, data)
            self.fsync(fd)
        except OSError:
            self.close(fd)
            _unlink_quietly(tmp)
            raise
        self.close(fd)
        os.replace(tmp, path)


def fsync_dir(path: str) -> None:
    """Make a directory's entries (a new, renamed or removed file) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


OS_FILE_IO = FileIO()
