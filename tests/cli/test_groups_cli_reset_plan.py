"""`groupcoord groups reset-offsets --from-file` / `--export` (KIP-1323 for share groups,
the same plan format for consumer groups): the plan format and range check as pure
functions, then against a broker subprocess, where a plan initialises a share group that
does not exist yet, an exported plan copies it to another group, and a real share consumer
(confluent-kafka) starts where the plan said."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupcoord.cli.reset_plan import (
    ResetPlanError,
    check_offsets_range,
    export_csv,
    parse_reset_plan,
)

pytestmark = pytest.mark.timeout(120)

TOPIC = "plan-orders"
NEW, COPY, CLASSIC = "plan-new", "plan-copy", "plan-classic"


def test_plan_of_one_group_is_three_columns_and_round_trips() -> None:
    plan = parse_reset_plan("t,0,5\nt,1,7\nu,0,0\n", "g")
    assert plan == {("t", 0): 5, ("t", 1): 7, ("u", 0): 0}
    assert parse_reset_plan(export_csv(plan), "other") == plan
    assert export_csv(plan) == "t,0,5\nt,1,7\nu,0,0\n"


def test_plan_with_group_column_applies_the_named_group_only() -> None:
    text = "g,t,0,5\nh,t,0,9\ng,t,1,2"
    assert parse_reset_plan(text, "g") == {("t", 0): 5, ("t", 1): 2}
    assert parse_reset_plan(text, "h") == {("t", 0): 9}
    assert parse_reset_plan(text, "absent") is None
    assert parse_reset_plan("", "g") is None


def test_malformed_plans_name_the_line() -> None:
    for text, line in (("t,zero,5\n", 1), ("t,0,5\nt,1\n", 2), ("g,t,0,5\ng,t,x,1\n", 2),
                       ("g,t,0,5\nt,0,1\n", 2)):
        with pytest.raises(ResetPlanError, match=f"line {line} "):
            parse_reset_plan(text, "g")


def test_offsets_are_moved_into_the_log_with_kafkas_warnings(
        capsys: pytest.CaptureFixture[str]) -> None:
    starts = {("t", 0): 2, ("t", 1): 0, ("t", 2): 0}
    ends = {("t", 0): 10, ("t", 1): 4, ("t", 2): 4}
    got = check_offsets_range({("t", 0): 1, ("t", 1): 99, ("t", 2): 3},
                              lambda ps: {tp: starts[tp] for tp in ps},
                              lambda ps: {tp: ends[tp] for tp in ps})
    assert got == {("t", 0): 2, ("t", 1): 4, ("t", 2): 3}
    assert capsys.readouterr().err.splitlines() == [
        ("WARN: New offset (1) is lower than earliest offset for topic partition t-0. "
         "Value will be set to 2."),
        ("WARN: New offset (99) is higher than latest offset for topic partition t-1. "
         "Value will be set to 4.")]


def groups(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "groupcoord", "groups", "--bootstrap-server", bootstrap, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)


def _ok(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    done = groups(bootstrap, *args)
    assert done.returncode == 0, done.stderr
    return done


def _start_offsets(bootstrap: str, group: str) -> dict[int, int]:
    described = json.loads(_ok(bootstrap, "describe", group, "--json").stdout)
    return {r["partition"]: r["start_offset"] for r in described["partitions"]}


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    ck = pytest.importorskip("confluent_kafka")
    admin_mod = pytest.importorskip("confluent_kafka.admin")
    from helpers.broker import BrokerFactory

    factory = BrokerFactory(tmp_path_factory.mktemp("cli-plan"))
    try:
        address = factory.create().bootstrap
        admin = admin_mod.AdminClient({"bootstrap.servers": address})
        admin.create_topics([admin_mod.NewTopic(TOPIC, 2, 1)])[TOPIC].result(10)
        producer = ck.Producer({"bootstrap.servers": address, "linger.ms": 20})
        for partition in (0, 1):
            for i in range(10):
                producer.produce(TOPIC, f"{partition}-{i}".encode(), partition=partition)
        assert producer.flush(10) == 0
        yield address
    finally:
        factory.close()


def test_a_plan_initialises_a_new_share_group(bootstrap: str, tmp_path: Path) -> None:
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{TOPIC},0,3\n{TOPIC},1,99\n")
    dry = _ok(bootstrap, "reset-offsets", NEW, "--share", "--from-file", str(plan), "--dry-run")
    assert dry.stdout.split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET",
                                 NEW, TOPIC, "0", "3", NEW, TOPIC, "1", "10"]
    assert (f"WARN: New offset (99) is higher than latest offset for topic partition "
            f"{TOPIC}-1. Value will be set to 10.") in dry.stderr
    listed = json.loads(_ok(bootstrap, "list", "--json").stdout)
    assert NEW not in {g["group"] for g in listed}  # a dry run creates nothing
    _ok(bootstrap, "reset-offsets", NEW, "--share", "--from-file", str(plan), "--execute")
    assert _start_offsets(bootstrap, NEW) == {0: 3, 1: 10}
    # An exported plan of the group initialises another one with the same offsets.
    exported = _ok(bootstrap, "reset-offsets", NEW, "--all-topics", "--to-current", "--export")
    assert exported.stdout == f"{TOPIC},0,3\n{TOPIC},1,10\n"
    copy_plan = tmp_path / "copy.csv"
    copy_plan.write_text(exported.stdout)
    _ok(bootstrap, "reset-offsets", COPY, "--share", "--from-file", str(copy_plan), "--execute")
    assert _start_offsets(bootstrap, COPY) == {0: 3, 1: 10}
    # A plan with a group column changes the named group's partitions only.
    many = tmp_path / "many.csv"
    many.write_text(f"someone-else,{TOPIC},0,1\n{COPY},{TOPIC},0,5\n")
    _ok(bootstrap, "reset-offsets", COPY, "--from-file", str(many), "--execute")
    assert _start_offsets(bootstrap, COPY) == {0: 5, 1: 10}
    other = tmp_path / "other.csv"
    other.write_text(f"someone-else,{TOPIC},0,1\n")
    nothing = _ok(bootstrap, "reset-offsets", COPY, "--from-file", str(other), "--execute")
    assert f"No reset plan for group {COPY} found." in nothing.stderr
    assert _start_offsets(bootstrap, COPY) == {0: 5, 1: 10}


def test_plan_refusals(bootstrap: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(f"{TOPIC},zero,1\n")
    failed = groups(bootstrap, "reset-offsets", NEW, "--share", "--from-file", str(bad))
    assert failed.returncode != 0 and "line 1" in failed.stderr
    both = groups(bootstrap, "reset-offsets", NEW, "--from-file", str(bad), "--topic", TOPIC)
    assert both.returncode != 0 and "can't be used with option --topic" in both.stderr
    neither = groups(bootstrap, "reset-offsets", NEW, "--to-latest")
    assert neither.returncode != 0 and "--all-topics, --from-file, --topic" in neither.stderr
    missing = groups(bootstrap, "reset-offsets", NEW, "--from-file", str(tmp_path / "none"))
    assert missing.returncode != 0 and "cannot read" in missing.stderr


def test_a_share_consumer_starts_where_the_plan_said(bootstrap: str, tmp_path: Path) -> None:
    ck = pytest.importorskip("confluent_kafka")
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{TOPIC},0,7\n{TOPIC},1,10\n")
    group = "plan-consumed"
    _ok(bootstrap, "reset-offsets", group, "--share", "--from-file", str(plan), "--execute")
    consumer = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    consumer.subscribe([TOPIC])
    seen: list[tuple[int, int]] = []
    try:
        deadline = time.monotonic() + 30
        while len(seen) < 3 and time.monotonic() < deadline:
            seen.extend((m.partition(), m.offset()) for m in consumer.poll(0.5)
                        if m.error() is None)
    finally:
        consumer.close()
    assert sorted(seen) == [(0, 7), (0, 8), (0, 9)]


def test_a_plan_resets_a_consumer_group(bootstrap: str, tmp_path: Path) -> None:
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{TOPIC},0,4\n{TOPIC},1,6\n")
    _ok(bootstrap, "reset-offsets", CLASSIC, "--from-file", str(plan), "--execute")
    exported = _ok(bootstrap, "reset-offsets", CLASSIC, "--all-topics", "--to-current",
                   "--export")
    assert exported.stdout == f"{TOPIC},0,4\n{TOPIC},1,6\n"
    offsets: Any = json.loads(_ok(bootstrap, "offsets", CLASSIC, "--json").stdout)
    assert {(r["partition"], r["current_offset"], r["lag"]) for r in offsets["partitions"]} == {
        (0, 4, 6), (1, 6, 4)}
