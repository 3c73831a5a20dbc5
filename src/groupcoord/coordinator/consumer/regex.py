"""Server-side regex subscriptions (`TopicRegexResolver`, `Utils.throwIfRegularExpressionIsInvalid`).

Kafka compiles with Google RE2/J and matches the whole topic name
(`matcher(topic).matches()`); here the RE2 library gives the same syntax (linear time, no
backreferences or lookaround) and `fullmatch` the same anchoring. Resolution runs inside
the heartbeat instead of on an executor, so a resolved regex and the epoch bump it causes
are written by the same operation. Names starting with "__" (internal topics) are left out.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

from groupcoord.coordinator.topics import TopicsImage

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a client's bad regex is an error code, not a log line


class InvalidRegex(Exception):
    pass


@lru_cache(maxsize=256)
def compile_regex(pattern: str) -> Any:
    try:
        return re2.compile(pattern, _OPTIONS)
    except Exception as exc:  # re2 raises its own error type
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise InvalidRegex(f"SubscribedTopicRegex `{pattern}` is not a valid regular "
                           f"expression: {detail}.") from exc


def resolve(pattern: str, image: TopicsImage) -> frozenset[str]:
    compiled = compile_regex(pattern)
    return frozenset(name for name in image.by_name
                     if not name.startswith("__") and compiled.fullmatch(name) is not None)
