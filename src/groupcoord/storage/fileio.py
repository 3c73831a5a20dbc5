"""Every file operation of the broker's data dir, behind one seam.

Every open, read, write, positional write, fsync and truncate of a segment, an index or a
checkpoint, and every directory operation (list, create, rename, remove) goes through a
``FileIO``. The default ``OS_FILE_IO`` is the operating system; tests pass
``storage.faults.FaultInjectingFileIO`` to make the Nth write fail with ENOSPC or EIO, write
short, or fail an fsync, exactly where the real disk would; and ``storage.memory_io.
MemoryFileIO`` keeps a whole data dir in memory (the test broker's default), so everything
above this seam runs the same code on either.

``FileIO.open`` is the only way storage opens a file, so an injector can tell which file a
descriptor belongs to (faults are usually aimed at ``.log`` files only).
"""

from __future__ import annotations

import os

# What `--data-dir` and `KafkaBroker(data_dir=...)` take for a data dir in memory
# (`storage.memory_io`, imported only when one is asked for).
MEMORY = "memory"


class FileIO:
    """The operating system's file calls (Kafka's ``FileChannel`` writes and ``force``)."""

    # Whether another process opening the same paths sees the same files (the log
    # cleaner's worker process relies on it).
    shared_across_processes = True

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

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        return os.pread(fd, length, offset)

    def size(self, fd: int) -> int:
        return os.fstat(fd).st_size

    def mtime_ms(self, fd: int) -> int:
        return int(os.fstat(fd).st_mtime * 1000)

    def read_bytes(self, path: str) -> bytes:
        """The whole file; FileNotFoundError when there is none."""
        with open(path, "rb") as f:
            return f.read()

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)

    def listdir(self, path: str) -> list[str]:
        return os.listdir(path)

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def unlink(self, path: str) -> None:
        os.unlink(path)

    def replace(self, src: str, dst: str) -> None:
        """Rename a file or a directory over ``dst`` (``os.replace``)."""
        os.replace(src, dst)

    def rmtree(self, path: str) -> None:
        """Remove a directory and everything under it; nothing there is no error."""
        import shutil  # with its compression modules, not on the broker's start-up path

        shutil.rmtree(path, ignore_errors=True)

    def fsync_dir(self, path: str) -> None:
        fsync_dir(path)

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
            self.unlink_quietly(tmp)
            raise
        self.close(fd)
        self.replace(tmp, path)


    def unlink_quietly(self, path: str) -> None:
        try:
            self.unlink(path)
        except OSError:
            pass


def fsync_dir(path: str) -> None:
    """Make a directory's entries (a new, renamed or removed file) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


OS_FILE_IO = FileIO()
