"""The client side of the control endpoint (`groupcoord.testing.control`): a broker
subprocess's injected faults, group state and cluster routes (`ControlClient`), and its
virtual clock with the same methods as `VirtualClock` (`HttpClock`)."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from typing import Any

REQUEST_TIMEOUT_S = 60.0


class ControlClient:
    def __init__(self, host: str, port: int) -> None:
        self.base = f"http://{host}:{port}"

    def inject(self, api: int | str, **rule: Any) -> dict[str, Any]:
        """`testing.faults.inject` over HTTP (a refused rule raises urllib's HTTPError 400)."""
        body = {"api": api, **{k: v for k, v in rule.items() if v is not None}}
        return dict(self.call("POST", "/faults", body)["rule"])

    def injections(self) -> dict[str, Any]:
        return dict(self.call("GET", "/faults"))

    def clear_injections(self) -> int:
        return int(self.call("DELETE", "/faults")["removed"])

    def describe_group(self, group_id: str) -> dict[str, Any]:
        return dict(self.call("GET", "/groups/" + urllib.parse.quote(group_id, safe="")))

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Any route of the endpoint, as JSON in and out."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
            return json.load(response)


class HttpClock(ControlClient):
    def now_ms(self) -> int:
        return int(self.call("GET", "/clock")["now_ms"])

    def pending(self) -> list[int]:
        return [int(d) for d in self.call("GET", "/clock")["pending"]]

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError("time does not go back")
        return int(self.call("POST", "/clock/advance", {"ms": ms})["fired"])
