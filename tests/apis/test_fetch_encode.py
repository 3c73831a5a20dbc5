"""The hand-written FetchResponse encoder is byte-identical to the generated codec."""

from __future__ import annotations

import pytest

from groupcoord.apis.fetch_encode import encode_fetch_response
from groupcoord.wire.generated.fetch import (
    AbortedTransaction,
    FetchableTopicResponse,
    FetchResponse,
    PartitionData,
)


def _response(records: list[bytes | None], aborted: list | None) -> FetchResponse:
    partitions = [
        PartitionData(partition_index=i, error_code=i % 2, high_watermark=100 + i,
                      last_stable_offset=99 + i, log_start_offset=i, preferred_read_replica=-1,
                      aborted_transactions=aborted, records=rec)
        for i, rec in enumerate(records)
    ]
    return FetchResponse(throttle_time_ms=3, error_code=0, session_id=77, responses=[
        FetchableTopicResponse(topic="tópico", topic_id=b"\x05" * 16, partitions=partitions),
        FetchableTopicResponse(topic="empty", topic_id=b"\x06" * 16, partitions=[]),
    ])


CASES = [
    ([b"", b"abc", b"x" * 5000, None], None),
    ([b"y" * 200], []),
    ([b"z" * 9000, b"q"], [AbortedTransaction(producer_id=4, first_offset=10)] * 2),
    ([b"r" * 130] * 130, None),
]


@pytest.mark.parametrize("version", range(4, 18))
@pytest.mark.parametrize("case", range(len(CASES)))
def test_matches_generated_encoder(version: int, case: int) -> None:
    response = _response(*CASES[case])
    raw = encode_fetch_response(response, version)
    body = b"".join(bytes(p) for p in raw.parts)
    assert body == response.encode(version)
    assert raw.size == len(body)
