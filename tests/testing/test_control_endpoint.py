"""The HTTP control endpoint of a `serve --clock manual` broker: what it answers, and what
it refuses; and `serve` refusing a manual clock nobody could advance."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.testing import KafkaBroker
from groupcoord.testing.control_client import HttpClock


@pytest.fixture(scope="module")
def control() -> Iterator[HttpClock]:
    with KafkaBroker(clock="manual", subprocess=True) as broker:
        assert isinstance(broker.clock, HttpClock)
        yield broker.clock


def _status(clock: HttpClock, method: str, path: str, body: bytes | None = None) -> tuple[
        int, Any]:
    request = urllib.request.Request(clock.base + path, data=body, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def test_the_clock_reads_and_advances(control: HttpClock) -> None:
    before = control.now_ms()
    assert control.advance(1234) >= 0
    assert control.now_ms() == before + 1234
    assert all(deadline > before + 1234 for deadline in control.pending())


@pytest.mark.parametrize("body", [b"not json", b'{"ms": -1}', b'{"ms": "5"}', b'{"ms": true}',
                                  b"[1]", b"{}"])
def test_bad_bodies_answer_400_and_leave_the_clock(control: HttpClock, body: bytes) -> None:
    before = control.now_ms()
    status, answer = _status(control, "POST", "/clock/advance", body)
    assert status == 400 and "error" in answer
    assert control.now_ms() == before


def test_unknown_paths_and_wrong_methods(control: HttpClock) -> None:
    assert _status(control, "GET", "/nodes")[0] == 404
    assert _status(control, "GET", "/clock/advance")[0] == 405
    assert _status(control, "POST", "/clock", b"{}")[0] == 405


def test_a_garbage_request_closes_the_connection_and_the_endpoint_goes_on(
        control: HttpClock) -> None:
    host, port = control.base.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"\x00\xff garbage\r\n\r\n")
        assert b"400" in sock.recv(4096).split(b"\r\n")[0]
    assert control.now_ms() > 0


def test_serve_refuses_a_manual_clock_without_a_control_endpoint(tmp_path: Any) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "groupcoord", "serve", "--listen", "127.0.0.1:0",
         "--data-dir", str(tmp_path), "--clock", "manual"],
        check=False, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "--control-listen" in result.stderr
