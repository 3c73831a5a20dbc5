"""Run a client library's own integration tests against groupcoord and Apache Kafka 4.4.

`make client-suites` runs franz-go's kgo `TestTxnEtl` (a transactional producer feeding
six chained consume-transform-produce groups: range, cooperative-sticky, range and sticky
over KIP-848, and two with static members) against a groupcoord broker and against the
reference Kafka broker of the conformance suite, each `--runs` times in a row, and prints
one line per variant and run. franz-go comes from the Go module proxy (`go mod download`)
and its test binary is built once into `.cache/client-suites/`; nothing of it is committed.

The kgo tests read their broker from KGO_SEEDS; KGO_TEST_RF=1 because both brokers are a
single node, and KGO_TEST_RECORDS bounds the records the producer writes (franz-go's
default is 500,000; `--records` sets it, 10,000 records are one transaction).
`--tests kgo` runs every test of the kgo package instead (`--tests` takes any `go test
-run` expression): the broker tests on the one node, the unit tests beside them, and those
needing SCRAM, OAUTHBEARER or TLS seeds skip themselves.
The last line is "N passed, N failed" over every (sub)test of every run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers.broker import BrokerFactory
from helpers.kraft_node import CONSUMER_ASSIGNMENT_ON_HEARTBEAT
from helpers.reference_broker import GROUP_SETTINGS, ReferenceBroker

FRANZ_GO = "github.com/twmb/franz-go"
FRANZ_GO_VERSION = "v1.22.3"
CACHE = ROOT / ".cache" / "client-suites"
# One run of TestTxnEtl is well under a minute at 50,000 records on a quiet machine.
RUN_TIMEOUT_S = 900
RESULT = re.compile(r"^(\s*)--- (PASS|FAIL|SKIP): (Test\S*) \(([\d.]+)s\)")
#: `--tests` default: the transactional ETL the issue asks three clean runs of.
TXN_ETL = "^TestTxnEtl$"
#: `--tests kgo`: every kgo test; those needing what a single plain-text broker lacks
#: (SCRAM, OAUTHBEARER, TLS seeds) skip themselves, and the unit tests need no broker.
KGO_ALL = "."


@dataclass(frozen=True)
class Outcome:
    test: str
    result: str
    seconds: float
    # Nesting level from `go test -v`'s indentation (four spaces a level): subtest names
    # may hold a `/` of their own (TestTxnEtl/sticky/848 is one variant), so the name
    # alone does not tell a parent from its subtests.
    depth: int = 0


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GOFLAGS", "-mod=mod")
    return env


def build_kgo_tests(version: str) -> Path:
    """Download franz-go `version` through the module proxy and build its kgo test binary
    (once per version)."""
    binary = CACHE / f"franz-go-{version}" / "kgo.test"
    if binary.exists():
        return binary
    if shutil.which("go") is None:
        raise SystemExit("client-suites: Go 1.26+ is required to build franz-go's tests")
    with tempfile.TemporaryDirectory() as scratch:
        # `go mod download` needs a module to run in; a throwaway one is enough.
        subprocess.run(["go", "mod", "init", "client-suites"], cwd=scratch, check=True,
                       capture_output=True, env=_go_env())
        found = subprocess.run(["go", "mod", "download", "-json", f"{FRANZ_GO}@{version}"],
                               cwd=scratch, check=True, capture_output=True, env=_go_env())
    source = Path(json.loads(found.stdout)["Dir"])
    tree = binary.parent / "src"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(source, tree)
    for path in [tree, *tree.rglob("*")]:  # the module cache is read-only
        path.chmod(path.stat().st_mode | 0o200)
    subprocess.run(["go", "test", "-c", "-o", str(binary), "./pkg/kgo"], cwd=tree, check=True,
                   env=_go_env())
    return binary


def groupcoord_args() -> list[str]:
    """groupcoord with the group settings the reference Kafka runs with (no initial
    rebalance delay, a consumer group's target on every epoch bump, one partition)."""
    interval = "group.consumer.assignment.interval.ms"
    return ["--fsync", "never",
            "--group-initial-rebalance-delay-ms",
            GROUP_SETTINGS["group.initial.rebalance.delay.ms"],
            "--default-partitions", GROUP_SETTINGS["num.partitions"],
            "--group-config", f"{interval}={CONSUMER_ASSIGNMENT_ON_HEARTBEAT[interval]}"]


@contextmanager
def broker(kind: str, base: Path) -> Iterator[str]:
    """A single-node broker on loopback, its bootstrap address; stopped on exit."""
    if kind == "kafka":
        reference = ReferenceBroker(base / "kafka")
        reference.start()
        try:
            yield reference.bootstrap
        finally:
            reference.stop()
        return
    factory = BrokerFactory(base / "groupcoord")
    try:
        yield factory.create(extra_args=groupcoord_args()).bootstrap
    finally:
        factory.close()


def run_kgo_tests(binary: Path, seeds: str, records: int, pattern: str,
                  log: Path) -> list[Outcome]:
    """One run of the kgo tests matching `pattern` (a `go test -run` expression); every
    test's and subtest's outcome, and a FAIL for the binary when it did not finish."""
    env = dict(os.environ, KGO_SEEDS=seeds, KGO_TEST_RF="1", KGO_TEST_RECORDS=str(records),
               KGO_LOG_LEVEL="info")
    with log.open("wb") as out:
        subprocess.run([str(binary), "-test.run", pattern, "-test.v",
                        "-test.timeout", f"{RUN_TIMEOUT_S}s"], cwd=binary.parent / "src" / "pkg"
                       / "kgo", env=env, stdout=out, stderr=subprocess.STDOUT, check=False,
                       timeout=RUN_TIMEOUT_S + 60)
    outcomes = []
    for line in log.read_text(errors="replace").splitlines():
        match = RESULT.match(line)
        if match:
            outcomes.append(Outcome(match[3], match[2], float(match[4]), len(match[1]) // 4))
    last = log.read_text(errors="replace").rstrip().rsplit("\n", 1)[-1]
    if last != "PASS" and not any(o.result == "FAIL" for o in outcomes):
        outcomes.append(Outcome("kgo.test", "FAIL", 0.0))  # crashed or timed out
    return outcomes


def tally(outcomes: list[Outcome]) -> tuple[int, int]:
    """Passed and failed counts over the leaves (tests without subtests); a parent counts
    only when it failed while none of its subtests did (TestTxnEtl's producer errors, a
    panic). Skipped tests count neither."""
    passed = failed = 0
    for i, o in enumerate(outcomes):
        # go test prints a parent's result before its subtests', one level deeper.
        subtests = []
        for s in outcomes[i + 1:]:
            if s.depth <= o.depth:
                break
            subtests.append(s)
        if not subtests:
            passed += o.result == "PASS"
            failed += o.result == "FAIL"
        elif o.result == "FAIL" and not any(s.result == "FAIL" for s in subtests):
            failed += 1
    return passed, failed


def serve(kind: str) -> int:
    if kind == "both":
        raise SystemExit("client-suites: --serve runs one broker: --broker groupcoord or kafka")
    with tempfile.TemporaryDirectory(prefix="client-suites-") as base, \
            broker(kind, Path(base)) as seeds:
        print(f"{kind} bootstrap {seeds}", flush=True)
        # Blocked only now, so the broker process started above keeps the default handlers.
        stop = {signal.SIGINT, signal.SIGTERM}
        signal.pthread_sigmask(signal.SIG_BLOCK, stop)
        try:
            signal.sigwait(stop)
        finally:
            print(f"{kind} stopping", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", choices=("groupcoord", "kafka", "both"), default="both")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--franz-go-version", default=FRANZ_GO_VERSION)
    parser.add_argument("--tests", default=TXN_ETL,
                        help="kgo tests to run, a `go test -run` expression (default "
                             f"{TXN_ETL!r}); `kgo` runs every kgo test")
    parser.add_argument("--logs", type=Path, default=CACHE / "logs",
                        help="where each run's full test output is kept")
    parser.add_argument("--serve", action="store_true",
                        help="only start the broker (one of --broker groupcoord|kafka), print "
                             "its bootstrap address and keep it until interrupted, for "
                             "running another client's tests by hand")
    args = parser.parse_args(argv)
    if args.serve:
        return serve(args.broker)
    pattern = KGO_ALL if args.tests == "kgo" else args.tests
    log_name = "kgo" if args.tests == "kgo" else re.sub(r"\W+", "", pattern) or "kgo"
    binary = build_kgo_tests(args.franz_go_version)
    kinds = ("kafka", "groupcoord") if args.broker == "both" else (args.broker,)
    args.logs.mkdir(parents=True, exist_ok=True)
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="client-suites-") as base:
        for kind in kinds:
            with broker(kind, Path(base)) as seeds:
                for run in range(1, args.runs + 1):
                    log = args.logs / f"{log_name}-{kind}-{run}.log"
                    started = time.monotonic()
                    outcomes = run_kgo_tests(binary, seeds, args.records, pattern, log)
                    ok, bad = tally(outcomes)
                    print(f"{kind} run {run}: {ok} passed, {bad} failed in "
                          f"{time.monotonic() - started:.0f} s (log: {log})", flush=True)
                    for o in outcomes:
                        print(f"  {o.result} {o.test} ({o.seconds:.1f} s)", flush=True)
                    passed += ok
                    failed += bad
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
