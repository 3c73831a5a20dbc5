"""Helpers for authorization tests over raw frames: connections with a principal, and ACLs
created through CreateAcls as a super user."""

from __future__ import annotations

import asyncio
from typing import Any

from broker_inproc import InProcBroker, RawClient

from groupcoord.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from groupcoord.security.principal import KafkaPrincipal
from groupcoord.wire.generated.create_acls import (
    AclCreation,
    CreateAclsRequest,
    CreateAclsResponse,
)

ADMIN = "User:admin"


async def client_as(b: InProcBroker, principal: str) -> RawClient:
    """A connection the broker treats as authenticated as `principal` (what SASL would do)."""
    client = await b.client()
    port = client.writer.get_extra_info("sockname")[1]
    for _ in range(10_000):  # the server side registers the connection on its next turn
        conn = next((c for c in b.broker.connections if c.peer.endswith(f":{port}")), None)
        if conn is not None:
            conn.principal = KafkaPrincipal.parse(principal)
            return client
        await asyncio.sleep(0)
    raise AssertionError("the broker never saw the connection")


def acl(resource_type: ResourceType, name: str, principal: str, operation: AclOperation,
        *, pattern: PatternType = PatternType.LITERAL,
        permission: AclPermissionType = AclPermissionType.ALLOW, host: str = "*") -> AclCreation:
    return AclCreation(resource_type=int(resource_type), resource_name=name,
                       resource_pattern_type=int(pattern), principal=principal, host=host,
                       operation=int(operation), permission_type=int(permission))


async def grant(b: InProcBroker, *creations: AclCreation) -> None:
    admin = await client_as(b, ADMIN)
    response: Any = await admin.call(CreateAclsRequest(creations=list(creations)), 3,
                                     CreateAclsResponse)
    assert [r.error_code for r in response.results] == [0] * len(creations)
