"""ApiVersions v5 (KIP-1242): the cluster id and node id a client meant to reach.

Kafka 4.4's rules (`KafkaApis.handleApiVersionsRequest.clusterIdOrNodeIdIsInvalid` and
`ApiVersionsRequest.isValid`): from v5, a non-null ClusterId must equal the broker's cluster
id and NodeId its node id, else REBOOTSTRAP_REQUIRED (129) with no api keys; a null ClusterId
with NodeId -1 (the defaults) checks nothing; naming only one of the two is INVALID_REQUEST;
before v5 neither field is on the wire, so nothing is checked.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from broker_inproc import InProcBroker, run

from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse

CLUSTER = "test-cluster"  # broker_inproc.make_config's cluster id; node id is 0


def _ask(tmp_path: Path, version: int, cluster_id: str | None,
         node_id: int) -> ApiVersionsResponse:
    async def go() -> ApiVersionsResponse:
        async with InProcBroker(tmp_path) as b:
            assert (b.broker.config.cluster_id, b.broker.config.node_id) == (CLUSTER, 0)
            c = await b.client()
            request = ApiVersionsRequest(client_software_name="t", client_software_version="1",
                                         cluster_id=cluster_id, node_id=node_id)
            return await c.call(request, version, ApiVersionsResponse)
    return run(go())


def test_matching_cluster_and_node_get_the_versions(tmp_path: Path) -> None:
    resp = _ask(tmp_path, 5, CLUSTER, 0)
    assert resp.error_code == ErrorCode.NONE
    assert (18, 0, 5) in [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys]


def test_other_cluster_is_told_to_rebootstrap(tmp_path: Path) -> None:
    resp = _ask(tmp_path, 5, "another-cluster", 0)
    assert resp.error_code == ErrorCode.REBOOTSTRAP_REQUIRED == 129
    assert resp.api_keys == []


def test_other_node_of_this_cluster_is_told_to_rebootstrap(tmp_path: Path) -> None:
    resp = _ask(tmp_path, 5, CLUSTER, 7)
    assert resp.error_code == ErrorCode.REBOOTSTRAP_REQUIRED
    assert resp.api_keys == []


def test_absent_cluster_and_node_check_nothing(tmp_path: Path) -> None:
    resp = _ask(tmp_path, 5, None, -1)
    assert resp.error_code == ErrorCode.NONE
    assert resp.api_keys


def test_only_one_of_cluster_and_node_is_an_invalid_request(tmp_path: Path) -> None:
    assert _ask(tmp_path, 5, CLUSTER, -1).error_code == ErrorCode.INVALID_REQUEST
    assert _ask(tmp_path, 5, None, 0).error_code == ErrorCode.INVALID_REQUEST


def test_versions_before_5_carry_no_cluster_to_check(tmp_path: Path) -> None:
    # v4 cannot carry the fields: the encoder drops them, so a v4 client is never checked.
    resp = _ask(tmp_path, 4, "another-cluster", 7)
    assert resp.error_code == ErrorCode.NONE
