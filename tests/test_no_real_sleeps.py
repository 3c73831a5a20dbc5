"""Tests do not wait on the real clock: an in-process broker is driven (its ManualClock
advanced, its futures awaited, loop turns yielded with `asyncio.sleep(0)`), and the few
places that poll another process (a broker subprocess, a Kafka node, a Java client) go
through `tests/helpers/polling.py`. Interop tests and benchmarks are exempt: they run real
processes on real time."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# Directories whose tests run real processes on real time.
EXEMPT_DIRS = ("interop/",)
# Helpers that poll another process; each says so where it sleeps.
POLLING_HELPERS = {"helpers/polling.py", "helpers/broker.py", "helpers/reference_broker.py"}


def _is_zero(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value in (0, 0.0)


def real_sleeps(tree: ast.Module) -> list[int]:
    """Lines calling `time.sleep(...)`, or `asyncio.sleep(x)` with x other than 0 (also
    through `from time import sleep` / `from asyncio import sleep`)."""
    sleep_names = {alias.asname or alias.name for node in ast.walk(tree)
                   if isinstance(node, ast.ImportFrom) and node.module in ("time", "asyncio")
                   for alias in node.names if alias.name == "sleep"}
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        is_sleep = (isinstance(func, ast.Attribute) and func.attr == "sleep"
                    and isinstance(func.value, ast.Name) and func.value.id in ("time", "asyncio")
                    ) or (isinstance(func, ast.Name) and func.id in sleep_names)
        if is_sleep and not (node.args and _is_zero(node.args[0])):
            lines.append(node.lineno)
    return lines


def test_no_test_sleeps_on_the_real_clock() -> None:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        rel = path.relative_to(TESTS).as_posix()
        if rel.startswith(EXEMPT_DIRS) or rel in POLLING_HELPERS:
            continue
        found += [f"{rel}:{line}" for line in real_sleeps(ast.parse(path.read_text()))]
    assert found == [], f"real-clock sleeps in tests (drive the clock or use helpers.polling): {found}"


def test_the_check_sees_each_form() -> None:
    source = ("import time, asyncio\nfrom asyncio import sleep as nap\n"
              "time.sleep(0.1)\nasyncio.sleep(0.01)\nnap(1)\nasyncio.sleep(0)\n")
    assert real_sleeps(ast.parse(source)) == [3, 4, 5]
