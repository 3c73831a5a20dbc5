"""The client side of the control endpoint (`groupcoord.testing.control`): a broker
subprocess's virtual clock, with the same methods as `VirtualClock`, and its other routes."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

REQUEST_TIMEOUT_S = 60.0


class HttpControl:
    """Any route of the endpoint, as JSON in and out."""

    def __init__(self, host: str, port: int) -> None:
        self.base = f"http://{host}:{port}"

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
            return json.load(response)


class HttpClock:
    def __init__(self, host: str, port: int) -> None:
        self.base = f"http://{host}:{port}"
        self._http = HttpControl(host, port)

    def now_ms(self) -> int:
        return int(self._call("GET", "/clock")["now_ms"])

    def pending(self) -> list[int]:
        return [int(d) for d in self._call("GET", "/clock")["pending"]]

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError("time does not go back")
        return int(self._call("POST", "/clock/advance", {"ms": ms})["fired"])

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._http.call(method, path, body)
