"""``groupcoord.analytics.driver.cli.main(argv)`` without Spark: gen-fixture, dump, bench."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groupcoord.analytics.driver.cli import main


def test_gen_fixture_then_dump(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fx"
    assert main(["gen-fixture", "--out", str(out), "--seconds", "60", "--partitions", "2"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    capsys.readouterr()
    assert main(["dump", "--data-dir", str(out), "--types", "0,1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == manifest["commit_rows"]
    assert all(json.loads(x)["key"]["type"] == 1 for x in lines)


def test_bench_without_spark(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "bench"
    assert main(["bench", "--in", str(data), "--generate", "2400",
                 "--out", str(tmp_path / "b.json")]) == 0
    result = json.loads((tmp_path / "b.json").read_text())
    assert result["python_decoder"]["rows"] == result["numba_decoder"]["rows"] == 2400


def test_run_requires_arguments() -> None:
    with pytest.raises(SystemExit):
        main(["run"])
