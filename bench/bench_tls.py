"""Produce and fetch throughput over TLS against plaintext, one broker, one run.

``python -m bench.bench_tls [--records 100000] [--runs 3]`` starts one groupcoord broker
with three listeners, PLAINTEXT, SSL and SASL_SSL (SCRAM-SHA-256), and measures with the
produce and fetch benchmarks' confluent-kafka client and settings (`bench.clients`):
- produce: each run, each listener in turn (order reversed every other run) produces
  ``--records`` 1 KiB records (acks=1) to a fresh 1-partition topic;
- fetch: one topic is filled once (untimed); each run, each listener in turn is read by a new
  consumer from offset 0 to the end.
Reported per listener: median MB/s, broker CPU µs/record (the broker's user+system CPU during
the timed part, which moves less with machine load than wall-clock rates), and the rate
relative to PLAINTEXT. Test certificates (EC P-256, TLS 1.3 negotiated) are made with the
`openssl` command line at start. Results go to stdout and ``bench/results/tls.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import clients
from bench.brokers import GroupcoordBroker, RunningBroker, start_broker
from bench.common import REPO_ROOT, RESULTS_DIR, free_port, median, progress
from bench.machine import machine_info
from groupcoord.security.scram import SHA_256, credential_from_password
from groupcoord.security.scram_store import ScramCredentialStore

SECTION = "tls"
LISTENERS = ("PLAINTEXT", "SSL", "SASL_SSL")
USER, PASSWORD = "bench", "bench-secret"


def _tls_material(directory: Path) -> Any:
    """The test suite's certificate maker (one definition of how test certs are made)."""
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from helpers.certs import make_tls_material

    return make_tls_material(directory)


class SecuredGroupcoord(GroupcoordBroker):
    """groupcoord with SSL and SASL_SSL listeners next to its PLAINTEXT one."""

    def __init__(self, tls: Any) -> None:
        super().__init__("interval", "groupcoord")
        self.tls = tls
        self.ports = {"SSL": free_port(), "SASL_SSL": free_port()}

    def command(self, port: int, data_dir: Path) -> list[str]:
        # The SCRAM user goes into the fresh data dir before the broker starts on it.
        ScramCredentialStore(str(data_dir)).apply(
            [(USER, SHA_256.name, credential_from_password(SHA_256, PASSWORD))])
        return [*super().command(port, data_dir),
                "--listener", f"SSL://127.0.0.1:{self.ports['SSL']}",
                "--listener", f"SASL_SSL://127.0.0.1:{self.ports['SASL_SSL']}",
                "--ssl-cert", str(self.tls.server_cert), "--ssl-key", str(self.tls.server_key),
                "--sasl-enabled-mechanisms", SHA_256.name]

    def endpoint(self, broker: RunningBroker, listener: str) -> tuple[str, dict[str, Any]]:
        """Bootstrap address and client security settings of one listener."""
        if listener == "PLAINTEXT":
            return broker.bootstrap, {}
        security: dict[str, Any] = {"security.protocol": listener,
                                    "ssl.ca.location": str(self.tls.ca)}
        if listener == "SASL_SSL":
            security.update({"sasl.mechanism": SHA_256.name, "sasl.username": USER,
                             "sasl.password": PASSWORD})
        return f"127.0.0.1:{self.ports[listener]}", security


def _order(run: int) -> tuple[str, ...]:
    return LISTENERS if run % 2 == 0 else tuple(reversed(LISTENERS))


def _produce(spec: SecuredGroupcoord, broker: RunningBroker, records: int,
             runs: int) -> dict[str, list[dict[str, float]]]:
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in LISTENERS}
    for run in range(runs):
        for listener in _order(run):
            bootstrap, security = spec.endpoint(broker, listener)
            topic = f"bench-tls-produce-{listener.lower()}-{run}"
            clients.create_topic(bootstrap, topic, security=security)
            broker.mark_cpu()
            out = clients.produce(bootstrap, topic, records, "1", security=security)
            cpu = broker.cpu_since_mark() or 0.0
            if out.errors:
                raise RuntimeError(f"{out.errors} delivery errors: {out.first_error}")
            samples[listener].append({"mb_s": out.records * clients.RECORD_SIZE / out.seconds
                                      / 1e6, "cpu_us": cpu / out.records * 1e6})
            progress(SECTION, f"produce {listener} run {run + 1}/{runs}: "
                              f"{samples[listener][-1]['mb_s']:.1f} MB/s")
    return samples


def _fetch(spec: SecuredGroupcoord, broker: RunningBroker, records: int,
           runs: int) -> dict[str, list[dict[str, float]]]:
    topic = "bench-tls-fetch"
    clients.create_topic(broker.bootstrap, topic)
    filled = clients.produce(broker.bootstrap, topic, records, "1")
    if filled.errors:
        raise RuntimeError(f"fill failed: {filled.first_error}")
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in LISTENERS}
    for run in range(runs):
        for listener in _order(run):
            bootstrap, security = spec.endpoint(broker, listener)
            broker.mark_cpu()
            # The fill's warm-up record makes records + 1.
            out = clients.consume(bootstrap, topic, records + 1, security=security)
            cpu = broker.cpu_since_mark() or 0.0
            samples[listener].append({"mb_s": out.value_bytes / out.seconds / 1e6,
                                      "cpu_us": cpu / out.records * 1e6})
            progress(SECTION, f"fetch {listener} run {run + 1}/{runs}: "
                              f"{samples[listener][-1]['mb_s']:.1f} MB/s")
    return samples


def _rows(kind: str, samples: dict[str, list[dict[str, float]]]) -> list[str]:
    base = median([s["mb_s"] for s in samples["PLAINTEXT"]])
    rows = []
    for listener in LISTENERS:
        rates = [s["mb_s"] for s in samples[listener]]
        cpu = median([s["cpu_us"] for s in samples[listener]])
        rows.append(f"| {kind} | {listener} | {median(rates):.1f} | {max(rates):.1f} | "
                    f"{median(rates) / base:.2f}x | {cpu:.2f} | {len(rates)} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_tls")
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-tls-") as tmp:
        spec = SecuredGroupcoord(_tls_material(Path(tmp)))
        with start_broker(spec, "tls") as broker:
            produced = _produce(spec, broker, args.records, args.runs)
            fetched = _fetch(spec, broker, args.records, args.runs)
    info = machine_info()
    load_end = os.getloadavg()
    command = f"python -m bench.bench_tls --records {args.records} --runs {args.runs}"
    lines = [
        "# Produce and fetch over TLS vs plaintext\n",
        f"Command: `{command}`  ",
        (f"Date (UTC): {info['date_utc']}; {info['cpu_model']}, {info['cpu_cores']} cores, "
        f"{info['python']}; load average (1/5/15 min) at start "
        f"{' / '.join(f'{v:.2f}' for v in load_start)}, at end "
        f"{' / '.join(f'{v:.2f}' for v in load_end)}\n"),
        (f"One groupcoord broker (`--fsync interval`) with PLAINTEXT, SSL and SASL_SSL "
        f"(SCRAM-SHA-256) listeners; one confluent-kafka client, the produce/fetch "
        f"benchmarks' settings, {args.records:,} records of {clients.RECORD_SIZE} B per run, "
        f"acks=1; listeners alternate within each run. Client and broker share the machine.\n"),
        ("| direction | listener | MB/s (median) | MB/s (best) | vs PLAINTEXT | "
        "broker CPU µs/record (median) | runs |"),
        "|---|---|---|---|---|---|---|",
        *_rows("produce", produced),
        *_rows("fetch", fetched),
    ]
    text = "\n".join(lines) + "\n"
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "tls.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
