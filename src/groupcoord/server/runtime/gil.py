"""How the serving process hands the GIL between its event loop and its worker threads.

Log recovery, the imports after the bind, large shard loads and log cleaning run Python code
on worker threads so that the loop keeps answering. They still share the GIL with it: the
loop thread gives the GIL up at every poll and every socket call, and each time it wants it
back CPython makes it wait the switch interval (5 ms by default) before the worker is asked
to let go. One answer takes the GIL back several times, so with one busy worker an
ApiVersions round trip took 15-25 ms even with an idle loop, and over 100 ms at worst
during a start-up. A shorter interval bounds each wait; it costs nothing when only the loop
runs (nobody waits for the GIL) and, when a worker runs, a few more hand-offs a second.
"""

from __future__ import annotations

import sys

# Short enough that an answer's several GIL hand-offs stay within a few milliseconds.
SERVING_SWITCH_INTERVAL_S = 0.0005


def favour_the_loop() -> float:
    """Make a waiting thread get the GIL within `SERVING_SWITCH_INTERVAL_S`; returns the
    interval it replaced (for `restore`)."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(SERVING_SWITCH_INTERVAL_S)
    return previous


def restore(previous: float) -> None:
    sys.setswitchinterval(previous)
