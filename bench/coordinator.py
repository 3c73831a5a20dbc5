"""Wait until a broker's group coordinator serves a group, before anything is timed.

Kafka creates `__consumer_offsets` on the first FindCoordinator and then loads the group's
partition: until it has, it answers COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR or
COORDINATOR_LOAD_IN_PROGRESS, which real clients wait out. groupcoord and Tansu answer at
once, so for them this is one round trip.
"""

from __future__ import annotations

import time

from groupcoord.cli.wire_client import WireClient
from groupcoord.wire.generated.describe_groups import DescribeGroupsRequest
from groupcoord.wire.generated.find_coordinator import FindCoordinatorRequest

COORDINATOR_WAIT_S = 60.0
POLL_S = 0.05


def wait_for_group_coordinator(client: WireClient, group: str,
                               timeout_s: float = COORDINATOR_WAIT_S) -> None:
    """FindCoordinator for `group` until it names a coordinator, then DescribeGroups until
    that coordinator answers for the group without an error."""
    deadline = time.monotonic() + timeout_s
    while True:
        found, version = client.request(
            FindCoordinatorRequest(key=group, key_type=0, coordinator_keys=[group]), 4)
        code = found.coordinators[0].error_code if version >= 4 else found.error_code
        if code == 0:
            described, _ = client.request(DescribeGroupsRequest(groups=[group]), 5)
            code = described.groups[0].error_code
        if code == 0:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"group coordinator for {group}: error {code} after "
                               f"{timeout_s:.0f}s")
        time.sleep(POLL_S)


def wait_for_coordinator_at(bootstrap: str, group: str) -> None:
    """`wait_for_group_coordinator` on a connection of its own to `bootstrap`."""
    with WireClient(bootstrap) as client:
        wait_for_group_coordinator(client, group)
