"""Server-side regex subscriptions (`TopicRegexResolver`, `Utils.throwIfRegularExpressionIsInvalid`).

Kafka compiles with Google RE2/J and matches the whole topic name
(`matcher(topic).matches()`); here the RE2 library gives the same syntax (linear time, no
backreferences or lookaround) and `fullmatch` the same anchoring. Every topic of the image
is matched, internal ones too, as `TopicRegexResolver` does.
`resolve_all` is `GroupMetadataManager.refreshRegularExpressions`: a pure function over the
topics image, run by the refresh operation (`regex_refresh`), never by the heartbeat.
"""

from __future__ import annotations

from collections.abc import Iterable
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
    return resolve_all([pattern], image)[pattern]


def resolve_all(patterns: Iterable[str], image: TopicsImage) -> dict[str, frozenset[str]]:
    """Every pattern's matching topics, in one scan of the image. A pattern that does not
    compile (validated on the heartbeat, so it should not happen) resolves to nothing, as
    Kafka logs and ignores it."""
    found: dict[str, set[str]] = {p: set() for p in patterns}
    compiled = []
    for pattern in found:
        try:
            compiled.append((pattern, compile_regex(pattern)))
        except InvalidRegex:
            continue
    for name in image.by_name:
        for pattern, regex in compiled:
            if regex.fullmatch(name) is not None:
                found[pattern].add(name)
    return {p: frozenset(names) for p, names in found.items()}
