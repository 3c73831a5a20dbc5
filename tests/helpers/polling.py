"""Waiting for a condition that another process makes true: a broker subprocess, a Java
client, a Kafka node. Such a process tells us nothing when it gets there, so the only way
to learn it is to look again after a pause; this module is where tests do that (and the
interop tests, which may sleep). An in-process broker is driven instead: await its futures,
advance its ManualClock, or yield loop turns (`asyncio.sleep(0)`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

DEFAULT_INTERVAL_S = 0.05


def poll_until(condition: Callable[[], bool], timeout: float, *,
               interval: float = DEFAULT_INTERVAL_S) -> bool:
    """Poll `condition` until true (True) or `timeout` seconds have passed (False)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True


def wait_for(condition: Callable[[], bool], what: str, timeout: float,
             detail: Callable[[], str] = lambda: "", *,
             interval: float = DEFAULT_INTERVAL_S) -> None:
    """Poll `condition` until true; fail naming `what` (and `detail()`) after `timeout`
    seconds."""
    if not poll_until(condition, timeout, interval=interval):
        raise AssertionError(f"timed out after {timeout}s waiting for {what}; {detail()}")


async def wait_for_async(condition: Callable[[], Awaitable[bool]], what: str, timeout: float,
                         *, interval: float = DEFAULT_INTERVAL_S) -> None:
    """`wait_for` for a condition that asks the other process over the network."""
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)


def hold(seconds: float) -> None:
    """Let `seconds` pass on the real clock: a fault schedule against real processes (a node
    kept down or paused for so long, the next fault so much later) runs on the clock those
    processes run on, as nothing they do can be awaited instead."""
    if seconds > 0:
        time.sleep(seconds)
