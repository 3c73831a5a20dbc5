"""Faults on demand on the request path, for tests: answer an error, drop the connection,
or delay the response of the next N requests of an API.

A rule names an API key, optionally a group id or a topic the request must carry, how many
matching requests it takes (`count`), and an action:

- `error`: the request is not handled; it is answered with the API's own error response for
  the code, built as every other error answer is (`Dispatcher._error_response`: the API
  module's `error_response`, Kafka's `AbstractRequest.getErrorResponse`, else the
  top-level `error_code`);
- `drop`: the connection is closed at once, the request unanswered and unhandled, as a
  network failure between client and broker would leave it (responses still owed on that
  connection are lost with it);
- `delay`: the request is handled as usual and its response leaves `delay_ms` later. The
  delay is real (event-loop) time even when the broker runs on a manual clock: it stands
  for latency that the client measures with its own real-time timers, and a response held
  until a test advances virtual time would look to the client like a hung broker.

Rules are matched in the order they were added; a request fires at most one rule. Every
firing is recorded. With no rule the dispatcher pays one dictionary lookup per request.
Everything here runs on the broker's event loop; other threads go through it.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterator
from typing import Any, Literal

from groupcoord.wire import error_code_numbers as codes

# `ApiKey` and `ErrorCode` are imported where a rule is added or shown: this module loads
# before the listener is bound, and building those enums costs more than the rest of it.

Action = Literal["error", "drop", "delay"]
ACTIONS: tuple[str, ...] = ("error", "drop", "delay")
# Firings kept for `fired()`; the oldest go first.
MAX_FIRED = 10_000


class InvalidRule(ValueError):
    """A rule that cannot fire (unknown API or error, bad count or delay, wrong types)."""


class FaultRule:
    """One rule; `remaining` counts down as it fires and the rule goes at zero.

    A plain class: the module is loaded before the broker binds its listeners, where a
    dataclass costs its generated code and a NamedTuple its `exec`."""

    __slots__ = (
        "action",
        "api_key",
        "count",
        "delay_ms",
        "error_code",
        "group_id",
        "id",
        "remaining",
        "topic",
    )

    def __init__(self, id: int, api_key: int, action: Action, count: int, remaining: int,
                 error_code: int = 0, delay_ms: int = 0, group_id: str | None = None,
                 topic: str | None = None) -> None:
        self.id = id
        self.api_key = api_key
        self.action = action
        self.count = count
        self.remaining = remaining
        self.error_code = error_code
        self.delay_ms = delay_ms
        self.group_id = group_id
        self.topic = topic

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"FaultRule({fields})"

    def as_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__slots__}
        return _named(out, self.api_key, self.action, self.error_code)


class Firing:
    """A rule that fired on one request. A plain class (as `FaultRule`): a NamedTuple's
    class is built by `exec` when this module loads, before the listener is bound."""

    __slots__ = ("action", "api_key", "api_version", "client_id", "connection",
                 "correlation_id", "delay_ms", "error_code", "now_ms", "rule")

    def __init__(self, rule: int, api_key: int, api_version: int, correlation_id: int,
                 client_id: str, connection: str, action: Action, error_code: int,
                 delay_ms: int, now_ms: int) -> None:
        self.rule = rule
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.connection = connection
        self.action: Action = action
        self.error_code = error_code
        self.delay_ms = delay_ms
        self.now_ms = now_ms

    def as_dict(self) -> dict[str, Any]:
        fields = {"rule": self.rule, "api_key": self.api_key, "api_version": self.api_version,
                  "correlation_id": self.correlation_id, "client_id": self.client_id,
                  "connection": self.connection, "action": self.action,
                  "error_code": self.error_code, "delay_ms": self.delay_ms,
                  "now_ms": self.now_ms}
        return _named(fields, self.api_key, self.action, self.error_code)


def _named(out: dict[str, Any], api_key: int, action: Action, error_code: int
           ) -> dict[str, Any]:
    """`out` with the API's name, and the error's for an error rule."""
    out["api"] = api_name(api_key)
    if action == "error":
        out["error"] = error_name(error_code)
    return out


def _by_number(table: type[enum.IntEnum], value: object, what: str) -> int | str:
    """`value` if it is a member's number, a name (to look up) if a string, else an error."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise InvalidRule(f"not an {what}: {value!r}")
    if isinstance(value, int) and value not in table._value2member_map_:
        raise InvalidRule(f"unknown {what} {value}")
    return value


def api_key_of(value: int | str) -> int:
    """An API key by number, by `ApiKey` name (`JOIN_GROUP`) or by Kafka's name (`JoinGroup`)."""
    from groupcoord.wire.api_keys import ApiKey

    value = _by_number(ApiKey, value, "api key")
    if isinstance(value, int):
        return value
    wanted = value.replace("_", "").lower()
    for key in ApiKey:
        if key.name.replace("_", "").lower() == wanted:
            return int(key)
    raise InvalidRule(f"unknown api {value!r}")


def error_code_of(value: int | str) -> int:
    """An error code by number or by Kafka's name (`NOT_COORDINATOR`)."""
    from groupcoord.wire.errors import ErrorCode

    value = _by_number(ErrorCode, value, "error code")
    if isinstance(value, int):
        return value
    try:
        return int(ErrorCode[value.upper()])
    except KeyError:
        raise InvalidRule(f"unknown error {value!r}") from None


def api_name(api_key: int) -> str:
    from groupcoord.wire.api_keys import ApiKey

    return ApiKey(api_key).name


def error_name(code: int) -> str:
    from groupcoord.wire.errors import ErrorCode

    return ErrorCode(code).name


class FaultInjector:
    """The rules of one broker and what they did."""

    def __init__(self) -> None:
        # api key -> its rules in the order added: the dispatcher's one lookup.
        self.by_api: dict[int, list[FaultRule]] = {}
        self.fired: deque[Firing] = deque(maxlen=MAX_FIRED)
        self._next_id = 0

    def add(self, api: int | str, action: Action, *, count: int = 1, error: int | str = 0,
            delay_ms: int = 0, group_id: str | None = None,
            topic: str | None = None) -> FaultRule:
        if action not in ACTIONS:
            raise InvalidRule(f"action must be one of {ACTIONS}, got {action!r}")
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise InvalidRule(f"count must be a positive integer, got {count!r}")
        code = error_code_of(error) if action == "error" else 0
        if action == "error" and code == codes.NONE:
            raise InvalidRule("an error rule needs a non-zero error code")
        if action == "delay" and (not isinstance(delay_ms, int) or isinstance(delay_ms, bool)
                                  or delay_ms < 0):
            raise InvalidRule(f"delay_ms must be a non-negative integer, got {delay_ms!r}")
        self._next_id += 1
        rule = FaultRule(self._next_id, api_key_of(api), action, count, count, code,
                         delay_ms if action == "delay" else 0, group_id, topic)
        self.by_api.setdefault(rule.api_key, []).append(rule)
        return rule

    def rules(self) -> list[FaultRule]:
        """Rules still armed, in the order added."""
        return sorted((r for rules in self.by_api.values() for r in rules), key=lambda r: r.id)

    def clear(self) -> int:
        """Disarm every rule; returns how many were armed. What fired is kept."""
        removed = sum(len(rules) for rules in self.by_api.values())
        self.by_api.clear()
        return removed

    def match(self, api_key: int, request: Any) -> FaultRule | None:
        """The first armed rule of `api_key` that `request` matches, counted down; the
        caller records the firing."""
        rules = self.by_api.get(api_key)
        if not rules:
            return None
        for rule in rules:
            if rule.group_id is not None and rule.group_id not in request_groups(request):
                continue
            if rule.topic is not None and rule.topic not in request_topics(request):
                continue
            rule.remaining -= 1
            if rule.remaining == 0:
                rules.remove(rule)
                if not rules:
                    del self.by_api[api_key]
            return rule
        return None

    def record(self, rule: FaultRule, api_version: int, correlation_id: int, client_id: str,
               connection: str, now_ms: int) -> None:
        self.fired.append(Firing(rule.id, rule.api_key, api_version, correlation_id, client_id,
                                 connection, rule.action, rule.error_code, rule.delay_ms,
                                 now_ms))


# Request fields that name groups or topics. Generated messages list their fields in
# `_FIELDS`; one table here instead of a per-API matcher keeps every API matchable.
_GROUP_FIELDS = ("group_id", "key", "coordinator_keys", "groups", "group_ids")
_TOPIC_FIELDS = ("topics", "topic_data", "topic_names")


def request_groups(request: Any) -> set[str]:
    return set(_names(request, _GROUP_FIELDS, ("group_id",)))


def request_topics(request: Any) -> set[str]:
    return set(_names(request, _TOPIC_FIELDS, ("name", "topic")))


def _names(request: Any, fields: tuple[str, ...], element_fields: tuple[str, ...]
           ) -> Iterator[str]:
    # Reflection by field name over the generated classes' `_FIELDS` (any request type).
    present = getattr(type(request), "_FIELDS", ())
    for field in fields:
        if field not in present:
            continue
        value = getattr(request, field)
        if isinstance(value, str):
            yield value
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, str):
                    yield item
                    continue
                item_fields = getattr(type(item), "_FIELDS", ())
                for name in element_fields:
                    if name in item_fields and isinstance(getattr(item, name), str):
                        yield getattr(item, name)
