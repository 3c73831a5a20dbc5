"""Injected faults as tests ask for them: one function per control operation, shared by
`KafkaBroker` (in-process) and the HTTP control endpoint, so both accept and answer the
same things. They run on the broker's event loop.

    inject(broker, "JoinGroup", error="NOT_COORDINATOR", count=2, group_id="g")
    inject(broker, "JoinGroup", drop=True)
    inject(broker, "SyncGroup", delay_ms=3000)

Exactly one of `error`, `drop`, `delay_ms`; APIs and errors by Kafka's names or numbers.
See `server.fault_injection` for what each action does.
"""

from __future__ import annotations

from typing import Any

from groupcoord.server.broker import Broker
from groupcoord.server.fault_injection import Action, InvalidRule, api_key_of


def inject(broker: Broker, api: int | str, *, error: int | str | None = None,
           drop: bool = False, delay_ms: int | None = None, count: int = 1,
           group_id: str | None = None, topic: str | None = None) -> dict[str, Any]:
    """Arm a rule; returns it (with its `id`). Raises ValueError for a rule that cannot
    fire: an API this broker does not serve, an error it cannot answer, bad numbers."""
    chosen = [error is not None, bool(drop), delay_ms is not None]
    if chosen.count(True) != 1:
        raise InvalidRule("give exactly one of error, drop, delay_ms")
    action: Action = "error" if error is not None else "drop" if drop else "delay"
    api_key = api_key_of(api)
    spec = broker.handlers.get(api_key)
    if spec is None:
        raise InvalidRule(f"api key {api_key} is not served by this broker")
    if action == "error" and spec.error_response is None \
            and "error_code" not in spec.response_cls._FIELDS:
        raise InvalidRule(f"api key {api_key} has no error response to inject")
    for name, value in (("group_id", group_id), ("topic", topic)):
        if value is not None and not isinstance(value, str):
            raise InvalidRule(f"{name} must be a string")
    rule = broker.faults.add(api_key, action, count=count,
                             error=error if error is not None else 0,
                             delay_ms=delay_ms or 0, group_id=group_id, topic=topic)
    return rule.as_dict()


def injections(broker: Broker) -> dict[str, Any]:
    """`{"rules": [armed rules], "fired": [every firing, oldest first]}`."""
    return {"rules": [rule.as_dict() for rule in broker.faults.rules()],
            "fired": [firing.as_dict() for firing in broker.faults.fired]}


def clear(broker: Broker) -> int:
    """Disarm every rule; returns how many were armed."""
    return broker.faults.clear()


def inject_from_json(broker: Broker, body: Any) -> dict[str, Any]:
    """`inject` from a JSON object: `{"api": "JoinGroup", "error": "NOT_COORDINATOR",
    "count": 1, "group_id": "g"}`; unknown keys are refused."""
    if not isinstance(body, dict):
        raise InvalidRule("body must be a JSON object")
    allowed = {"api", "error", "drop", "delay_ms", "count", "group_id", "topic"}
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidRule(f"unknown keys {unknown}")
    if "api" not in body:
        raise InvalidRule('"api" is required (a name like "JoinGroup" or a number)')
    drop = body.get("drop", False)
    if not isinstance(drop, bool):
        raise InvalidRule('"drop" must be true or false')
    return inject(broker, body["api"], error=body.get("error"), drop=drop,
                  delay_ms=body.get("delay_ms"), count=body.get("count", 1),
                  group_id=body.get("group_id"), topic=body.get("topic"))
