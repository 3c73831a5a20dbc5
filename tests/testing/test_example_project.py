"""The package as its users install it: `make wheel` builds a wheel, which installs into a
bare venv (nothing of the project's preinstalled, no PYTHONPATH), and there `groupcoord
serve` runs, `groupcoord analyze` says it needs the [spark] extra, and examples/pytest-project
passes its own tests with nothing configured (the plugin comes from the entry point).

The dependencies come from PyPI through pip's cache, at the versions this suite runs with
(so a warm cache answers them); the wheel itself is installed from its file."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pytest-project"
EXAMPLE_TESTS = 3
# What the example installs beside groupcoord (its README, examples/pytest-project).
EXAMPLE_DEPENDENCIES = ("pytest", "confluent-kafka", "aiokafka")


def _bare_env() -> dict[str, str]:
    """The environment of a user's shell: this checkout's src is not on the path."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def _run(args: list[str], timeout: float, cwd: Path | None = None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, check=False, cwd=cwd,
                          timeout=timeout, env=_bare_env())


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv with the wheel of `make wheel` and the example's dependencies."""
    built = _run(["make", "-s", "wheel", f"PYTHON={sys.executable}"], cwd=ROOT, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    wheel = ROOT / "dist" / f"groupcoord-{version('groupcoord')}-py3-none-any.whl"
    assert wheel.is_file(), sorted(p.name for p in (ROOT / "dist").iterdir())
    home = tmp_path_factory.mktemp("venv")
    made = _run([sys.executable, "-m", "venv", str(home)], timeout=120)
    assert made.returncode == 0, made.stderr
    python = home / "bin" / "python"
    bare = _run([str(python), "-c", "import groupcoord"], timeout=60)
    assert bare.returncode != 0  # nothing of the project is there before the install
    pinned = [f"{name}=={version(name)}" for name in EXAMPLE_DEPENDENCIES]
    installed = _run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                      str(wheel), *pinned], timeout=480)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    yield home


def test_the_installed_package_is_the_wheel(venv: Path) -> None:
    where = _run([str(venv / "bin" / "python"), "-c",
                  "import groupcoord; print(groupcoord.__file__)"], timeout=60)
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout + where.stderr
    shown = _run([str(venv / "bin" / "groupcoord"), "--version"], timeout=60)
    assert shown.stdout == f"groupcoord {version('groupcoord')}\n", shown.stderr


def test_groupcoord_serve_runs_from_the_wheel(venv: Path, tmp_path: Path) -> None:
    proc = subprocess.Popen([str(venv / "bin" / "groupcoord"), "serve", "--listen",
                             "127.0.0.1:0", "--data-dir", str(tmp_path / "data")],
                            stderr=subprocess.PIPE, text=True, env=_bare_env())
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "groupcoord listening on 127.0.0.1:" in line, line
    finally:
        proc.terminate()
        assert proc.wait(timeout=60) == 0


def test_analyze_says_it_needs_the_spark_extra(venv: Path, tmp_path: Path) -> None:
    result = _run([str(venv / "bin" / "groupcoord"), "analyze", "run", "--data-dir",
                   str(tmp_path), "--out", str(tmp_path / "out")], timeout=120)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "groupcoord analyze: needs the [spark] extra (no module named "), result.stderr


def test_the_example_project_passes_its_own_tests(venv: Path) -> None:
    result = _run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p",
                   "no:cacheprovider"], cwd=EXAMPLE, timeout=300)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    assert f"{EXAMPLE_TESTS} passed" in result.stdout, result.stdout
