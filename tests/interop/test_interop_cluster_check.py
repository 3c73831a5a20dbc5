"""KIP-1242 with a real Kafka 4.4 Java client: after bootstrap, its connections to the broker
by node id and to the group coordinator open with ApiVersions v5 naming the cluster id and
node id it learnt from Metadata/FindCoordinator, and groupcoord accepts them (its Metadata,
FindCoordinator and ApiVersions agree on who it is). The mismatch rules are unit-tested in
tests/apis/test_api_versions_cluster_check.py and compared with Kafka in the conformance
suite.

The client is `kip1242/ClusterCheckClient.java`, run from source against the reference
broker's libs (`make reference`, Kafka 4.4.0's kafka-clients); the frames are read from a
recording proxy in front of the broker.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.broker import BrokerProcess, free_port
from helpers.reference_broker import CACHE_DIR
from helpers.wire_capture import REQUEST, RESPONSE, WireCapture

from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.headers import decode_request_header

pytestmark = pytest.mark.interop

CLIENT = Path(__file__).resolve().parent / "kip1242" / "ClusterCheckClient.java"
CLUSTER_ID = "kip1242-check-cluster"
NODE_ID = 3
API_VERSIONS = 18
RESPONSE_HEADER_BYTES = 4 + 4  # size prefix, correlation id (ApiVersions: header v0)


def _api_versions_exchanges(frames: list) -> list[tuple[int, str | None, int, int]]:
    """(version, cluster id, node id, answered error code) of every ApiVersions exchange."""
    answers = {(f.connection, f.correlation_id): f for f in frames
               if f.direction == RESPONSE and f.api_key == API_VERSIONS}
    out = []
    for f in frames:
        if f.direction != REQUEST or f.api_key != API_VERSIONS:
            continue
        header, pos = decode_request_header(f.data, 4)
        request, _ = ApiVersionsRequest.decode(f.data, pos, header.api_version)
        answer = answers[(f.connection, f.correlation_id)]
        response, _ = ApiVersionsResponse.decode(answer.data, RESPONSE_HEADER_BYTES,
                                                 header.api_version)
        out.append((header.api_version, request.cluster_id, request.node_id,
                    response.error_code))
    return out


def test_java_44_client_names_the_cluster_and_node_it_meant(tmp_path: Path) -> None:
    libs = CACHE_DIR / "libs"
    assert shutil.which("java"), "java not found (Java 17+ is required)"
    assert libs.is_dir(), f"{libs} missing: run `make reference`"
    broker_port = free_port()
    with WireCapture(f"127.0.0.1:{broker_port}") as proxy:
        broker = BrokerProcess(tmp_path / "data", tmp_path / "broker.log", extra_args=[
            "--advertised-listener", proxy.address, "--cluster-id", CLUSTER_ID,
            "--node-id", str(NODE_ID), "--group-initial-rebalance-delay-ms", "0",
            "--fsync", "never"])
        broker.port = broker_port
        broker.start()
        try:
            run = subprocess.run(
                ["java", "-XX:TieredStopAtLevel=1", "-cp", f"{libs}/*", str(CLIENT),
                 proxy.address, "kip1242-topic", "kip1242-group"],
                check=False, capture_output=True, text=True, timeout=180)
        finally:
            broker.stop()
        frames = proxy.take()
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    assert f"cluster {CLUSTER_ID}" in run.stdout
    assert "assigned [kip1242-topic-0]" in run.stdout
    exchanges = _api_versions_exchanges(frames)
    assert exchanges and all(error == 0 for *_, error in exchanges), exchanges
    assert all(version == 5 for version, *_ in exchanges), exchanges
    # Bootstrap connections know no cluster yet; later ones name it.
    named = [(cluster, node) for _v, cluster, node, _e in exchanges if cluster is not None]
    assert (None, -1) in [(c, n) for _v, c, n, _e in exchanges]
    assert named and set(named) == {(CLUSTER_ID, NODE_ID)}, exchanges
