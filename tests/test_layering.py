"""The package layering of docs/architecture.md, enforced.

Two rules: each package imports only the groupcoord packages it may (the arrows), and the pure
layers (wire, logformat, coordinator, apis) import nothing that does IO, reads the clock or
draws randomness, so their behaviour is a function of their inputs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "groupcoord"

# package -> groupcoord packages it may import (itself always allowed)
ALLOWED: dict[str, set[str]] = {
    "wire": set(),
    "logformat": {"wire"},
    "storage": {"logformat", "wire"},
    "coordinator": {"wire", "logformat"},
    "security": {"wire", "logformat", "storage"},
    "apis": {"wire", "logformat", "coordinator", "storage", "security"},
    "server": {"wire", "logformat", "coordinator", "apis", "storage", "security"},
    "cli": {"wire", "logformat", "coordinator", "apis", "storage", "server", "analytics", "security",
            "testing"},
    "analytics": {"wire", "logformat"},
    # The embedded broker and pytest plugin for other projects' test suites: a top layer.
    "testing": {"wire", "logformat", "coordinator", "apis", "storage", "server", "security"},
}

PURE = {"wire", "logformat", "coordinator", "apis"}
BANNED_IN_PURE = {"asyncio", "socket", "time", "random", "os", "uuid", "threading"}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            names.append(_resolve_relative(path, node))
    return names


def _resolve_relative(path: Path, node: ast.ImportFrom) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    base = parts[: len(parts) - node.level]
    return ".".join(base + ([node.module] if node.module else []))


def _package_files() -> list[tuple[str, Path]]:
    files = []
    for pkg in ALLOWED:
        root = SRC / pkg
        if root.is_dir():
            files.extend((pkg, p) for p in sorted(root.rglob("*.py")))
    return files


@pytest.mark.parametrize("pkg,path", _package_files(), ids=lambda v: str(v).split("src/")[-1])
def test_layer_arrows(pkg: str, path: Path) -> None:
    for name in _imports(path):
        parts = name.split(".")
        if parts[0] != "groupcoord" or len(parts) < 2:
            continue
        target = parts[1]
        if target == pkg or target not in ALLOWED:
            continue
        assert target in ALLOWED[pkg], f"{path.name}: {pkg} must not import groupcoord.{target}"


@pytest.mark.parametrize(
    "pkg,path", [fp for fp in _package_files() if fp[0] in PURE], ids=lambda v: str(v).split("src/")[-1]
)
def test_pure_layers_do_no_io(pkg: str, path: Path) -> None:
    for name in _imports(path):
        assert name.split(".")[0] not in BANNED_IN_PURE, f"{path.name} imports {name}"


# analytics' own layers (docs/analytics.md "Layers"): read -> silver -> gold -> report, the
# fixture writer beside them over read, and the driver program on top of all.
# analytics package -> analytics packages it may import (itself always allowed)
ANALYTICS_ALLOWED: dict[str, set[str]] = {
    "read": set(),
    "silver": {"read"},
    "gold": {"read", "silver"},
    "report": {"read", "silver", "gold"},
    "fixture": {"read"},
    "driver": {"read", "silver", "gold", "report", "fixture"},
}
ANALYTICS = SRC / "analytics"
# the package's own files: its docstring, and ``python -m groupcoord.analytics`` (the driver)
ANALYTICS_ROOT_FILES = {"__init__.py", "__main__.py"}


def test_analytics_modules_live_in_a_layer() -> None:
    assert {p.name for p in ANALYTICS.glob("*.py")} == ANALYTICS_ROOT_FILES
    assert {p.name for p in ANALYTICS.iterdir() if p.is_dir() and p.name != "__pycache__"} \
        == set(ANALYTICS_ALLOWED)


@pytest.mark.parametrize(
    "layer,path",
    [(layer, p) for layer in ANALYTICS_ALLOWED for p in sorted((ANALYTICS / layer).rglob("*.py"))],
    ids=lambda v: str(v).split("src/")[-1],
)
def test_analytics_layer_arrows(layer: str, path: Path) -> None:
    for name in _imports(path):
        parts = name.split(".")
        if parts[:2] != ["groupcoord", "analytics"] or len(parts) < 3:
            continue
        target = parts[2]
        if target == layer:
            continue
        assert target in ANALYTICS_ALLOWED[layer], \
            f"{path.name}: analytics.{layer} must not import analytics.{target}"


def test_the_analytics_arrows_find_a_wrong_way_import() -> None:
    """A gold module importing the report layer would fail the check above."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.py"
        probe.write_text("from groupcoord.analytics.report import story\n")
        with pytest.raises(AssertionError, match="analytics.gold must not import analytics.report"):
            test_analytics_layer_arrows("gold", probe)
