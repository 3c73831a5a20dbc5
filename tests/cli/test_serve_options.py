"""`groupcoord serve` reads a plain command line without argparse (start-up time): whatever
`parse_plain` accepts, argparse (built from the same option table) reads the same way, and
whatever it leaves goes to argparse."""

from __future__ import annotations

import contextlib
import io
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.cli import options, serve


def _argparse(argv: list[str]) -> SimpleNamespace | None:
    """argparse's reading, or None when it rejects the command line."""
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        try:
            return SimpleNamespace(**vars(serve.build_parser().parse_args(argv)))
        except SystemExit:
            return None


PLAIN = [
    [],
    ["--listen", "127.0.0.1:0", "--data-dir", "/tmp/d"],
    ["--listen=127.0.0.1:1", "--listen", "127.0.0.1:2", "--node-id", "3", "--nodes=2"],
    ["--listener", "SSL://h:1", "--listener=SASL_SSL://h:2", "--ssl-cert", "c.pem",
     "--ssl-client-auth", "required", "--ssl-handshake-timeout-ms", "500"],
    ["--no-auto-create-topics", "--auto-create-topics", "--no-auto-create-topics"],
    ["--allow-everyone-if-no-acl-found", "--authorizer", "standard", "--super-users",
     "User:a;User:b"],
    ["--group-config", "a=1", "--group-config=b=2", "--fsync", "never", "--log-level=debug"],
    ["--cluster-id", "abc", "--cluster-id", "def", "--connections-max-idle-ms=-1"],
    ["--clock", "manual", "--control-listen", "127.0.0.1:0", "--max-request-size", " 7 "],
    ["--advertised-listener", "EXTERNAL://h:9", "--listener-security-protocol-map",
     "EXTERNAL:PLAINTEXT", "--sasl-enabled-mechanisms", "PLAIN,SCRAM-SHA-256"],
]


@pytest.mark.parametrize("argv", PLAIN)
def test_a_plain_command_line_reads_as_argparse_reads_it(argv: list[str]) -> None:
    plain = options.parse_plain(serve.OPTIONS, argv)
    assert plain is not None
    assert plain == _argparse(argv)


@pytest.mark.parametrize("argv", [
    ["--help"], ["-h"], ["--data", "d"], ["--node-id", "x"], ["--node-id", "-1"],
    ["--fsync", "sometimes"], ["--listen"], ["--auto-create-topics=yes"],
    ["--allow-everyone-if-no-acl-found=1"], ["--", "--listen", "h:1"], ["positional"],
    ["--listen", "--data-dir", "d"], ["--log-level", "trace"],
])
def test_anything_else_is_left_to_argparse(argv: list[str]) -> None:
    assert options.parse_plain(serve.OPTIONS, argv) is None


def test_what_is_left_is_read_by_argparse() -> None:
    assert serve.parse_args(["--data", "d"]).data_dir == "d"  # an abbreviation
    assert serve.parse_args(["--node-id", "-1"]).node_id == -1
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        serve.parse_args(["--fsync", "sometimes"])


def test_a_default_list_is_not_shared_between_parses() -> None:
    first = options.parse_plain(serve.OPTIONS, ["--group-config", "a=1"])
    second = options.parse_plain(serve.OPTIONS, [])
    assert first is not None and second is not None
    assert first.group_config == ["a=1"] and second.group_config == []


_FLAGS = [opt.flag for opt in serve.OPTIONS] + [
    "--no-auto-create-topics", "--data", "-h", "--", "--no-such-option"]
_VALUES = ["1", "-1", " 2 ", "x", "", "none", "required", "manual", "debug", "a=b",
           "127.0.0.1:0", "SSL://h:1", "--listen"]
_TOKENS = st.one_of(st.sampled_from(_FLAGS), st.sampled_from(_VALUES),
                    st.builds(lambda f, v: f"{f}={v}", st.sampled_from(_FLAGS),
                              st.sampled_from(_VALUES)))


@settings(max_examples=300, deadline=None)
@given(st.lists(_TOKENS, max_size=8))
def test_the_plain_reading_never_differs_from_argparse(argv: list[str]) -> None:
    plain = options.parse_plain(serve.OPTIONS, argv)
    if plain is not None:
        assert plain == _argparse(argv)
