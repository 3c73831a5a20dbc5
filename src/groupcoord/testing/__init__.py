"""groupcoord for other people's test suites: an embedded broker and a pytest plugin.

`KafkaBroker` starts a real groupcoord broker inside the test process (its own thread and
event loop) or as a `python -m groupcoord serve` subprocess; `clock="manual"` gives it
virtual time that only `advance(ms)` moves. The pytest plugin (`groupcoord.testing.
pytest_plugin`, registered through the `pytest11` entry point) wraps it in fixtures.
See docs/testing.md.
"""

from groupcoord.testing.broker import KafkaBroker
from groupcoord.testing.virtual_clock import VirtualClock

__all__ = ["KafkaBroker", "VirtualClock"]
