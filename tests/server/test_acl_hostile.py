"""Hostile input on the Acl APIs: 600 randomized CreateAcls / DescribeAcls / DeleteAcls
requests (any int8 code, empty, huge and non-ASCII names, null filters, duplicates) from a
super user over raw frames. Each is answered or, for an UNKNOWN code as in Kafka, closes its
connection; the broker stays up, and the ACLs it accepted (whatever their names) are the
ones it serves after a restart."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from acl_support import ADMIN, client_as
from broker_inproc import InProcBroker, run

from groupcoord.wire.generated.create_acls import (
    AclCreation,
    CreateAclsRequest,
    CreateAclsResponse,
)
from groupcoord.wire.generated.delete_acls import (
    DeleteAclsFilter,
    DeleteAclsRequest,
    DeleteAclsResponse,
)
from groupcoord.wire.generated.describe_acls import DescribeAclsRequest, DescribeAclsResponse

NAMES = ["", "*", "t", "topic-1", "ünïcødé-☃", "x" * 5000, "a,b=c", "\u0000nul", "kafka-cluster"]
PRINCIPALS = ["User:alice", "User:*", "alice", "", "Group:x", "User:ünï"]
HOSTS = ["*", "", "10.0.0.1", "10.0.0.0/24", "::1", "bad/host"]


def code(rng: random.Random) -> int:
    """Mostly codes that make sense somewhere, sometimes anything an int8 holds."""
    if rng.random() < 0.7:
        return rng.choice([1, 2, 3, 4, 5, 8])
    return rng.choice([0, 6, 7, 11, 12, 15, 16, 99, 127, -1, -128])


def creation(rng: random.Random) -> AclCreation:
    return AclCreation(resource_type=code(rng), resource_name=rng.choice(NAMES),
                       resource_pattern_type=code(rng), principal=rng.choice(PRINCIPALS),
                       host=rng.choice(HOSTS), operation=code(rng), permission_type=code(rng))


def a_filter(rng: random.Random) -> dict[str, Any]:
    return {"resource_type_filter": code(rng),
                "resource_name_filter": rng.choice([None, *NAMES]),
                "pattern_type_filter": code(rng), "principal_filter": rng.choice([None, *PRINCIPALS]),
                "host_filter": rng.choice([None, *HOSTS]), "operation": code(rng),
                "permission_type": code(rng)}


def request(rng: random.Random) -> tuple[Any, Any]:
    kind = rng.randrange(3)
    if kind == 0:
        return CreateAclsRequest(creations=[creation(rng) for _ in range(rng.randrange(8))]), \
            CreateAclsResponse
    if kind == 1:
        return DescribeAclsRequest(**a_filter(rng)), DescribeAclsResponse
    return DeleteAclsRequest(filters=[DeleteAclsFilter(**a_filter(rng))
                                      for _ in range(rng.randrange(4))]), DeleteAclsResponse


def every() -> DescribeAclsRequest:
    return DescribeAclsRequest(resource_type_filter=1, resource_name_filter=None,
                               pattern_type_filter=1, principal_filter=None, host_filter=None,
                               operation=1, permission_type=1)


def listing(response: Any) -> list[tuple[Any, ...]]:
    return sorted((r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host,
                   a.operation, a.permission_type) for r in response.resources for a in r.acls)


def test_random_acl_requests_never_break_the_broker(tmp_path: Path) -> None:
    rng = random.Random(20261127)
    before: list[tuple[Any, ...]] = []

    async def hammer() -> None:
        nonlocal before
        async with InProcBroker(tmp_path, authorizer="standard", super_users=ADMIN) as b:
            client = await client_as(b, ADMIN)
            answered = closed = 0
            for _ in range(600):
                message, response_cls = request(rng)
                version = rng.choice([1, 2, 3])
                await client.send(message, version)
                try:
                    _, response = await client.recv(response_cls, version)
                except (ConnectionError, EOFError, OSError, TimeoutError):
                    closed += 1
                    client = await client_as(b, ADMIN)
                    continue
                assert response is not None
                answered += 1
            assert answered > 300 and closed > 0, (answered, closed)
            odd = [AclCreation(resource_type=2, resource_name=name, resource_pattern_type=pt,
                               principal="User:ünï", host="*", operation=3, permission_type=3)
                   for name in NAMES[1:] for pt in (3, 4)]
            created = await client.call(CreateAclsRequest(creations=odd), 3, CreateAclsResponse)
            assert {r.error_code for r in created.results} == {0}
            before = listing(await client.call(every(), 3, DescribeAclsResponse))
            assert len(before) >= len(odd)

    async def after_restart() -> None:
        async with InProcBroker(tmp_path, authorizer="standard", super_users=ADMIN) as b:
            client = await client_as(b, ADMIN)
            assert listing(await client.call(every(), 3, DescribeAclsResponse)) == before
    run(hammer())
    run(after_restart())
