"""Every user mistake gets one line on stderr naming what is wrong and a non-zero exit,
never a traceback: `python -m groupcoord ...` as a user runs it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest

from groupcoord.cli import serve
from groupcoord.cli.options import help_with_default

SRC = str(Path(__file__).resolve().parents[2] / "src")


def groupcoord(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "groupcoord", *args], capture_output=True,
                          text=True, timeout=60, check=False,
                          env=dict(os.environ, PYTHONPATH=SRC))


def one_line(result: subprocess.CompletedProcess[str], status: int = 2) -> str:
    """The single stderr line of a command that failed with `status`."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert result.returncode == status, result.stderr
    return lines[0]


def serve_args(*extra: str) -> tuple[str, ...]:
    return ("serve", "--listen", "127.0.0.1:0", "--data-dir", "memory", *extra)


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_port_out_of_range() -> None:
    line = one_line(groupcoord("serve", "--listen", "127.0.0.1:99999", "--data-dir", "memory"))
    assert line == ("groupcoord serve: port 99999 of '127.0.0.1:99999' is out of range "
                    "0-65535")
    line = one_line(groupcoord(*serve_args("--control-listen", "127.0.0.1:65536")))
    assert "65536" in line and "out of range" in line


def test_a_data_dir_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    line = one_line(groupcoord("serve", "--listen", "127.0.0.1:0", "--data-dir",
                               str(tmp_path / "file")))
    assert line == f"groupcoord serve: --data-dir {tmp_path / 'file'} is not a directory"
    line = one_line(groupcoord("serve", "--listen", "127.0.0.1:0", "--data-dir",
                               str(tmp_path / "file" / "below")))
    assert line == f"groupcoord serve: --data-dir {tmp_path / 'file' / 'below'}: Not a directory"


def test_a_missing_certificate_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "server.pem"
    line = one_line(groupcoord(*serve_args("--listener", "SSL://127.0.0.1:0", "--ssl-cert",
                                           str(missing), "--ssl-key", str(missing))))
    assert line == f"groupcoord serve: --ssl-cert {missing}: no such file"
    line = one_line(groupcoord(*serve_args("--sasl-plain-users", str(tmp_path / "users"))))
    assert line == f"groupcoord serve: --sasl-plain-users {tmp_path / 'users'}: no such file"


def test_an_address_in_use_is_named(taken_port: int) -> None:
    result = groupcoord("serve", "--listen", f"127.0.0.1:{taken_port}", "--data-dir", "memory")
    assert one_line(result, status=1) == (
        f"groupcoord serve: cannot start: cannot listen on 127.0.0.1:{taken_port}: "
        "address already in use")
    result = groupcoord(*serve_args("--control-listen", f"127.0.0.1:{taken_port}"))
    assert str(taken_port) in one_line(result, status=1)


def test_an_unknown_group_config_name_gets_the_closest_one() -> None:
    line = one_line(groupcoord(*serve_args(
        "--group-config", "group.consumer.sesion.timeout.ms=50000")))
    assert line == ("groupcoord serve: unknown --group-config name "
                    "group.consumer.sesion.timeout.ms; did you mean "
                    "group.consumer.session.timeout.ms?")
    line = one_line(groupcoord(*serve_args("--group-config", "no.such.thing=1")))
    assert line == "groupcoord serve: unknown --group-config name no.such.thing"


@pytest.mark.parametrize(("setting", "message"), [
    # Kafka's ConfigDef words; the bound of a setting with a min/max pair is that setting.
    ("group.consumer.session.timeout.ms=-5",
     ("Invalid value -5 for configuration group.consumer.session.timeout.ms: "
     "Value must be at least 45000")),
    ("group.share.delivery.count.limit=11",
     ("Invalid value 11 for configuration group.share.delivery.count.limit: "
     "Value must be no more than 10")),
    ("group.max.size=many",
     "Invalid value many for configuration group.max.size: Not a number of type INT"),
    ("transaction.max.timeout.ms=0",
     "Invalid value 0 for configuration transaction.max.timeout.ms: Value must be at least 1"),
    ("group.consumer.assignor.offload.enable=yes",
     "Invalid value yes for configuration group.consumer.assignor.offload.enable"),
])
def test_a_bad_group_config_value_names_the_setting_and_its_range(setting: str,
                                                                   message: str) -> None:
    assert one_line(groupcoord(*serve_args("--group-config", setting))) == (
        f"groupcoord serve: {message}")


def test_a_good_group_config_passes_the_start_up_check() -> None:
    configs = serve._group_configs(["group.consumer.session.timeout.ms=50000",
                                    "transaction.max.timeout.ms=60000"])
    assert configs == {"group.consumer.session.timeout.ms": "50000",
                       "transaction.max.timeout.ms": "60000"}


def test_a_mistyped_command_gets_the_closest_match() -> None:
    assert one_line(groupcoord("serv")) == "groupcoord: unknown command 'serv'; did you mean 'serve'?"
    assert one_line(groupcoord("gruops")) == (
        "groupcoord: unknown command 'gruops'; did you mean 'groups'?")
    line = one_line(groupcoord("frobnicate"))
    assert line.startswith("groupcoord: unknown command 'frobnicate'; commands: serve, ")


@pytest.mark.parametrize(("args", "message"), [
    (["groups", "descibe", "--group", "g"],
     "groupcoord groups: unknown command 'descibe'; did you mean 'describe'?"),
    (["groups", "--bootstrap-server", "127.0.0.1:1", "--json", "lst"],
     "groupcoord groups: unknown command 'lst'; did you mean 'list'?"),
    (["groups", "--descibe", "--group", "g"],
     "groupcoord groups: unknown option '--descibe'; did you mean '--describe'?"),
    (["groups", "frob"],
     ("groupcoord groups: unknown command 'frob'; commands: list, describe, offsets, delete, "
      "delete-offsets, reset-offsets (groupcoord groups --help)")),
    (["acls", "--bootstrap-server=127.0.0.1:1", "ad", "--topic", "t"],
     "groupcoord acls: unknown command 'ad'; did you mean 'add'?"),
    (["acls", "--bootstrap-server", "127.0.0.1:1", "--lst"],
     "groupcoord acls: unknown option '--lst'; did you mean '--list'?"),
    (["users", "remve", "--data-dir", "d"],
     "groupcoord users: unknown command 'remve'; did you mean 'remove'?"),
    (["analyze", "helth", "--data-dir", "d"],
     "groupcoord analyze: unknown command 'helth'; did you mean 'health'?"),
])
def test_a_mistyped_subcommand_gets_the_closest_match(
        args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    from groupcoord.cli.main import main

    assert main(args) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", message + "\n")


def test_analyze_knows_every_subcommand_of_its_parser() -> None:
    import argparse

    from groupcoord.analytics.driver import cli as analytics_cli

    sub = next(a for a in analytics_cli._parser()._actions
               if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(analytics_cli.COMMANDS)


def test_version_comes_from_the_package_metadata() -> None:
    result = groupcoord("--version")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout == f"groupcoord {version('groupcoord')}\n"


def test_every_serve_option_has_help_and_its_default() -> None:
    for opt in serve.OPTIONS:
        text = help_with_default(opt)
        assert text, opt.flag
        assert "default" in text, opt.flag
    shown = serve.build_parser().format_help()
    assert "(default: 1000)" in shown and "(default: on)" in shown
