"""Wire <-> ACL conversions shared by CreateAcls, DescribeAcls and DeleteAcls.

Kafka's request constructors refuse an UNKNOWN (code 0) resource type, pattern type,
operation or permission while parsing (`CreateAclsRequest.validate`,
`DescribeAclsRequest.normalizeAndValidate`, `DeleteAclsRequest.normalizeAndValidate`),
which closes the connection; `has_unknown` lets the handlers do the same. Other codes
outside the enums read as UNKNOWN and meet the controller's validation (INVALID_REQUEST).
"""

from __future__ import annotations

from typing import Any

from groupcoord.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    from_code,
)

NO_AUTHORIZER = "No Authorizer is configured."


def has_unknown(resource_type: int, pattern_type: int, operation: int, permission: int) -> bool:
    return 0 in (resource_type, pattern_type, operation, permission)


def not_constructible(c: Any) -> bool:
    """Kafka builds an `AclBinding` from each creation before validating any, and its
    `ResourcePattern` / `AccessControlEntry` constructors throw for a resource type ANY, a
    pattern type ANY or MATCH, an operation ANY or a permission ANY: the whole request then
    fails with UNKNOWN_SERVER_ERROR on every creation (no message)."""
    return (c.resource_type == ResourceType.ANY
            or c.resource_pattern_type in (PatternType.ANY, PatternType.MATCH)
            or c.operation == AclOperation.ANY or c.permission_type == AclPermissionType.ANY)


def binding(creation: Any) -> AclBinding:
    return AclBinding(
        from_code(ResourceType, creation.resource_type),  # type: ignore[arg-type]
        creation.resource_name,
        from_code(PatternType, creation.resource_pattern_type),  # type: ignore[arg-type]
        creation.principal, creation.host,
        from_code(AclOperation, creation.operation),  # type: ignore[arg-type]
        from_code(AclPermissionType, creation.permission_type))  # type: ignore[arg-type]


def binding_filter(f: Any, *, operation: int, permission_type: int) -> AclBindingFilter:
    """DescribeAcls' request and DeleteAcls' filters share field names but for these two."""
    return AclBindingFilter(
        from_code(ResourceType, f.resource_type_filter),  # type: ignore[arg-type]
        f.resource_name_filter,
        from_code(PatternType, f.pattern_type_filter),  # type: ignore[arg-type]
        f.principal_filter, f.host_filter,
        from_code(AclOperation, operation),  # type: ignore[arg-type]
        from_code(AclPermissionType, permission_type))  # type: ignore[arg-type]
