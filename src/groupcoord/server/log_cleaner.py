"""The log cleaner: compaction's heavy work in a worker process, off the event loop.

Mirrors what Kafka's `LogCleaner` threads are for: cleaning a full 100 MB segment of
`__consumer_offsets` decodes two million records, about 6 s of Python, and on the event loop
that froze every connection. Here the loop only plans (`storage.compaction.plan_cleaning`)
and swaps the results in (`apply_cleaned`); `run_clean_job` runs in a spawned process that
reads the planned closed segments by path and writes cleaned copies beside them. Appends,
reads, rolls and retention go on meanwhile; a segment that changed while it was cleaned is
left as it is. One job at a time per broker, as one cleaner thread; `stop` terminates a job
in flight (its files are removed at the next load).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from groupcoord.storage.compaction import CleanJob, CleanOutcome, remove_replaced, run_clean_job
from groupcoord.storage.fileio import OS_FILE_IO, FileIO

log = logging.getLogger("groupcoord.server")


# The cleaner's scheduling priority below the broker's (nice +10: about a tenth of the CPU
# share when both want a core), so on a busy machine cleaning waits, not the broker's replies.
CLEANER_NICE = 10


def _work(job: CleanJob, conn: Connection) -> None:
    """The worker process: clean, send the outcome (or the error) back."""
    try:
        os.nice(CLEANER_NICE)
    except OSError:  # not permitted here: clean at the broker's priority
        pass
    try:
        conn.send(run_clean_job(job))
    except (OSError, ValueError) as exc:  # a full disk, a damaged batch: the log is untouched
        conn.send(RuntimeError(f"cleaning {job.directory} failed: {exc!r}"))
    finally:
        conn.close()


class LogCleaner:
    def __init__(self, io: FileIO = OS_FILE_IO) -> None:
        self._context = multiprocessing.get_context("spawn")
        self._running: BaseProcess | None = None
        self.io = io

    async def clean(self, job: CleanJob) -> CleanOutcome:
        """Run `job` in a worker process; its outcome, or the worker's error raised. Files
        no other process can see (a data dir in memory) are cleaned here, on the loop."""
        if not self.io.shared_across_processes:
            try:
                return run_clean_job(job, self.io)
            except (OSError, ValueError) as exc:
                raise RuntimeError(f"cleaning {job.directory} failed: {exc!r}") from exc
        loop = asyncio.get_running_loop()
        receiver, sender = self._context.Pipe(duplex=False)
        proc = self._context.Process(target=_work, args=(job, sender), daemon=True,
                                     name="groupcoord-cleaner")
        proc.start()
        sender.close()
        self._running = proc
        done: asyncio.Future[object] = loop.create_future()

        def on_readable() -> None:
            if done.done():
                return
            try:
                done.set_result(receiver.recv())
            except (EOFError, OSError) as exc:
                done.set_exception(RuntimeError(f"cleaner process ended: {exc!r}"))

        loop.add_reader(receiver.fileno(), on_readable)
        try:
            answer = await done
            await self._exited(proc)
        finally:
            loop.remove_reader(receiver.fileno())
            receiver.close()
            if proc.is_alive():
                proc.terminate()
            self._running = None
        if isinstance(answer, BaseException):
            raise answer
        assert isinstance(answer, CleanOutcome)
        return answer

    @staticmethod
    async def _exited(proc: BaseProcess, timeout_s: float = 10.0) -> None:
        """Wait for the worker's exit without blocking the loop (its interpreter shutdown
        takes tens of milliseconds), then reap it."""
        loop = asyncio.get_running_loop()
        gone: asyncio.Future[None] = loop.create_future()

        def on_exit() -> None:
            if not gone.done():
                gone.set_result(None)

        loop.add_reader(proc.sentinel, on_exit)
        try:
            await asyncio.wait_for(gone, timeout_s)
        except TimeoutError:
            log.warning("cleaner process did not exit after its answer; terminating it")
        finally:
            loop.remove_reader(proc.sentinel)
        if proc.is_alive():
            proc.terminate()
        proc.join(1)

    async def remove_replaced(self, paths: list[str]) -> None:
        """Remove the segment files a swap set aside, on a worker thread: freeing a large
        file's blocks blocks in the kernel (the GIL is released meanwhile)."""
        if not paths:
            return
        if not self.io.shared_across_processes:
            remove_replaced(self.io, paths)
            return
        await asyncio.to_thread(remove_replaced, self.io, paths)

    def stop(self) -> None:
        if self._running is not None and self._running.is_alive():
            self._running.terminate()
