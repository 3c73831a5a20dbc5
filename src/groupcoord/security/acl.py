"""ACL vocabulary: resource types, pattern types, operations, permissions, bindings, filters.

Mirrors Kafka's `AclOperation`, `ResourceType`, `PatternType`, `AclPermissionType` (same
wire codes), `AclBinding` (one ACL: a resource pattern and an access control entry) and
`AclBindingFilter` (`ResourcePatternFilter.matches` + `AccessControlEntryFilter.matches`),
with the controller's validation of new ACLs and filters (`AclControlManager.validateNewAcl`,
`validateFilter`). Codes outside an enum read as UNKNOWN, as Kafka's `fromCode` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from groupcoord.security.acl_hosts import InvalidCidr, check_cidr_host

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_ENUM = type[IntEnum]


def from_code(enum: _ENUM, code: int) -> IntEnum:
    """Kafka's `fromCode`: an unknown code is UNKNOWN."""
    try:
        return enum(code)
    except ValueError:
        return enum(0)


# `AclEntry.supportedOperations`: what authorized-operations bitfields are made of.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE,
                         AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.ALTER,
                         AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE,
                         AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
    ResourceType.CLUSTER: (AclOperation.CREATE, AclOperation.CLUSTER_ACTION,
                           AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
                           AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                           AclOperation.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE,
                                    AclOperation.TWO_PHASE_COMMIT),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}


class InvalidAcl(ValueError):
    """An ACL or filter Kafka refuses with INVALID_REQUEST (the message is Kafka's)."""


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    """One ACL (Kafka's `StandardAcl`): who may or may not do what on which resources."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def to_json(self) -> list[object]:
        return [int(self.resource_type), self.resource_name, int(self.pattern_type),
                self.principal, self.host, int(self.operation), int(self.permission_type)]

    @classmethod
    def from_json(cls, row: list[object]) -> AclBinding:
        rt, name, pt, principal, host, op, perm = row
        return cls(ResourceType(int(rt)), str(name), PatternType(int(pt)), str(principal),  # type: ignore[call-overload]
                   str(host), AclOperation(int(op)), AclPermissionType(int(perm)))  # type: ignore[call-overload]


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Kafka's `AclBindingFilter`: None name / principal / host match anything."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    def matches(self, acl: AclBinding) -> bool:
        return self._pattern_matches(acl) and self._entry_matches(acl)

    def _pattern_matches(self, acl: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if (self.pattern_type not in (PatternType.ANY, PatternType.MATCH)
                and self.pattern_type != acl.pattern_type):
            return False
        name = self.resource_name
        if name is None:
            return True
        if self.pattern_type in (PatternType.ANY, acl.pattern_type):
            return name == acl.resource_name
        if acl.pattern_type == PatternType.LITERAL:  # MATCH against a literal ACL
            return name == acl.resource_name or acl.resource_name == WILDCARD
        return name.startswith(acl.resource_name)  # MATCH against a prefixed ACL

    def _entry_matches(self, acl: AclBinding) -> bool:
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != acl.operation:
            return False
        return (self.permission_type == AclPermissionType.ANY
                or self.permission_type == acl.permission_type)


def validate_filter(f: AclBindingFilter) -> None:
    """`AclControlManager.validateFilter`."""
    if f.resource_type == ResourceType.UNKNOWN or f.pattern_type == PatternType.UNKNOWN:
        raise InvalidAcl("Unknown patternFilter.")
    if f.operation == AclOperation.UNKNOWN or f.permission_type == AclPermissionType.UNKNOWN:
        raise InvalidAcl("Unknown entryFilter.")


def validate_new_acl(acl: AclBinding) -> None:
    """`AclApis.handleCreateAcls` + `AclControlManager.validateNewAcl`, in Kafka's order."""
    if acl.resource_type == ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        raise InvalidAcl("The only valid name for the CLUSTER resource is " + CLUSTER_NAME)
    if not acl.resource_name:
        raise InvalidAcl("Invalid empty resource name")
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise InvalidAcl(f"Invalid resourceType {acl.resource_type.name}")
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAcl(f"Invalid patternType {acl.pattern_type.name}")
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise InvalidAcl(f"Invalid operation {acl.operation.name}")
    if acl.permission_type not in (AclPermissionType.DENY, AclPermissionType.ALLOW):
        raise InvalidAcl(f"Invalid permissionType {acl.permission_type.name}")
    if ":" not in acl.principal:
        raise InvalidAcl(f"Could not parse principal from `{acl.principal}` (no colon is "
                         "present separating the principal type from the principal name)")
    validate_host(acl.host)


def validate_host(host: str) -> None:
    """`AclControlManager.validateHostPattern`: `*`, any host without `/` (matched as an
    exact address), or a CIDR block commons-net parses (`acl_hosts`)."""
    if not host:
        raise InvalidAcl("Host pattern cannot be null or empty")
    try:
        check_cidr_host(host)
    except InvalidCidr as exc:
        raise InvalidAcl(f"Invalid CIDR notation '{host}': {exc}") from None
