"""The 4.4 Java Admin client's feature calls against groupcoord (KIP-584).

`Admin.describeFeatures` reads ApiVersions: it must see the finalized levels and supported
ranges of `apis/features.py` (the conformance suite compares them with Kafka 4.4 on the
wire). `Admin.updateFeatures` keeping a level succeeds, validate-only or not; one that would
change a level fails with InvalidUpdateVersionException and Kafka's message prefix.
"""

from __future__ import annotations

import pytest
from helpers import java
from helpers.broker import BrokerProcess

from groupcoord.apis import features

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]


def test_java_admin_describes_and_updates_features(broker: BrokerProcess) -> None:
    described = java.run_harness("describe-features", broker.bootstrap)
    assert {e["feature"]: (e["min"], e["max"]) for e in described.of("finalized")} == {
        "group.version": (1, 1), "share.version": (2, 2), "streams.version": (1, 1),
        "transaction.version": (2, 2)}
    assert {e["feature"]: (e["min"], e["max"]) for e in described.of("supported")} == {
        f.name: (f.min_supported, f.max_supported) for f in features.FEATURES}
    assert [e["epoch"] for e in described.of("epoch")] == [features.FINALIZED_FEATURES_EPOCH]

    def update(feature: str, level: int, kind: str, validate_only: bool) -> str | None:
        run = java.run_harness("update-feature", broker.bootstrap, "--feature", feature,
                               "--level", str(level), "--type", kind,
                               "--validate-only", str(validate_only).lower())
        (line,) = run.of("feature-updated")
        return line["error"]

    assert update("transaction.version", 2, "upgrade", False) is None
    assert update("share.version", 2, "upgrade", True) is None
    refused = update("transaction.version", 1, "safe_downgrade", False)
    assert refused is not None and refused.startswith(
        "InvalidUpdateVersionException: The update failed for all features since the "
        "following feature had an error: Invalid update version 1 for feature "
        "transaction.version.")
    unknown = update("eligible.leader.replicas.version", 1, "upgrade", True)
    assert unknown is not None and unknown.endswith("does not support this feature.")
