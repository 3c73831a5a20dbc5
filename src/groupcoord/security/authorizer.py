"""Kafka's StandardAuthorizer: decide whether a principal may perform an operation.

The rules are `StandardAuthorizerData.authorize` / `findResult`, exactly:
- a super user (`super.users`, principal strings such as `User:admin`) may do anything;
- the ACLs that apply to a resource are its LITERAL ACLs, the PREFIXED ACLs whose name is a
  prefix of the resource name, and the LITERAL `*` ACLs of its resource type;
- of those, an ACL matches when its principal is the caller's or `User:*`, its host is `*`,
  the caller's bare address (`127.0.0.1`, Java's `getHostAddress()`) or a CIDR block
  holding it (`acl_hosts.host_matches`), and its operation is the requested one
  or ALL; an ALLOW of READ, WRITE, DELETE or ALTER also grants DESCRIBE, and an ALLOW of
  ALTER_CONFIGS grants DESCRIBE_CONFIGS (a DENY implies nothing);
- any matching DENY denies; else any matching ALLOW allows; else, if the resource has
  ACLs at all (for anyone, any operation) the answer is DENY, and only a resource without
  any ACL gets the default (`allow.everyone.if.no.acl.found`, false unless configured).

Kafka keeps the ACLs in one set sorted by (type, reversed name) and walks it; here the
same answer comes from hash lookups, which cost far less in Python: literal ACLs by
(type, name), prefixed ACLs by (type, prefix) probed only at the prefix lengths that
exist, each bucket split by principal so a check reads only the caller's and `User:*`'s
ACLs. With 1,000 ACLs a check costs a few microseconds (bench/bench_authz.py); a
property test compares the index with a scan of every ACL.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from groupcoord.security.acl import (
    SUPPORTED_OPERATIONS,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from groupcoord.security.acl_hosts import host_matches

_NONE, _ALLOW, _DENY = 0, 1, 2
_IMPLIES_DESCRIBE = frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
                               AclOperation.DELETE, AclOperation.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS,
                                       AclOperation.ALTER_CONFIGS})
_ALL, _DESCRIBE, _DESCRIBE_CONFIGS = AclOperation.ALL, AclOperation.DESCRIBE, \
    AclOperation.DESCRIBE_CONFIGS
_LITERAL = PatternType.LITERAL

# principal string -> ACLs of one resource pattern
_Bucket = dict[str, list[AclBinding]]


def parse_super_users(text: str | None) -> frozenset[str]:
    """`super.users`: principals separated by ';' (Kafka's `getConfiguredSuperUsers`)."""
    if not text:
        return frozenset()
    return frozenset(p.strip() for p in text.split(";") if p.strip())


def acl_result(acl: AclBinding, operation: AclOperation, host: str) -> int:
    """`findResult` for an ACL whose resource and principal already match."""
    acl_host = acl.host
    if acl_host != WILDCARD and acl_host != host and not host_matches(acl_host, host):
        return _NONE
    acl_op = acl.operation
    allow = acl.permission_type == AclPermissionType.ALLOW
    if acl_op != _ALL:
        if not allow:
            if operation != acl_op:
                return _NONE
        elif operation == _DESCRIBE:
            if acl_op not in _IMPLIES_DESCRIBE:
                return _NONE
        elif operation == _DESCRIBE_CONFIGS:
            if acl_op not in _IMPLIES_DESCRIBE_CONFIGS:
                return _NONE
        elif operation != acl_op:
            return _NONE
    return _ALLOW if allow else _DENY


def _bucket_result(bucket: _Bucket, principal: str, host: str, operation: AclOperation) -> int:
    found = _NONE
    for who in (principal, WILDCARD_PRINCIPAL):
        for acl in bucket.get(who, ()):
            result = acl_result(acl, operation, host)
            if result == _DENY:
                return _DENY
            if result == _ALLOW:
                found = _ALLOW
    return found


class StandardAuthorizer:
    """The ACL index and the decisions made from it. Pure: persistence is the caller's
    (`security.acl_control`)."""

    def __init__(self, super_users: Iterable[str] = (), *,
                 allow_everyone_if_no_acl_found: bool = False,
                 acls: Iterable[AclBinding] = ()) -> None:
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_everyone_if_no_acl_found
        self._acls: set[AclBinding] = set()
        self._literal: dict[tuple[int, str], _Bucket] = {}
        self._prefixed: dict[int, dict[str, _Bucket]] = {}
        self._prefix_lengths: dict[int, tuple[int, ...]] = {}
        for acl in acls:
            self.add(acl)

    # -- the index ---------------------------------------------------------------------
    def acls(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        """Every ACL the filter matches, sorted (Kafka's `acls(filter)`)."""
        if acl_filter is None:
            return sorted(self._acls)
        return sorted(a for a in self._acls if acl_filter.matches(a))

    def __len__(self) -> int:
        return len(self._acls)

    def __contains__(self, acl: AclBinding) -> bool:
        return acl in self._acls

    def add(self, acl: AclBinding) -> None:
        if acl in self._acls:
            return
        self._acls.add(acl)
        self._bucket(acl, create=True).setdefault(acl.principal, []).append(acl)  # type: ignore[union-attr]
        if acl.pattern_type != _LITERAL:
            self._refresh_lengths(acl.resource_type)

    def remove(self, acl: AclBinding) -> None:
        if acl not in self._acls:
            return
        self._acls.discard(acl)
        bucket = self._bucket(acl, create=False)
        assert bucket is not None
        entries = bucket[acl.principal]
        entries.remove(acl)
        if not entries:
            del bucket[acl.principal]
        if not bucket:
            rtype = int(acl.resource_type)
            if acl.pattern_type == _LITERAL:
                del self._literal[(rtype, acl.resource_name)]
            else:
                del self._prefixed[rtype][acl.resource_name]
                self._refresh_lengths(acl.resource_type)

    def _bucket(self, acl: AclBinding, *, create: bool) -> _Bucket | None:
        rtype = int(acl.resource_type)
        if acl.pattern_type == _LITERAL:
            table = self._literal
            key: object = (rtype, acl.resource_name)
        else:
            table = self._prefixed.setdefault(rtype, {})  # type: ignore[assignment]
            key = acl.resource_name
        bucket = table.get(key)  # type: ignore[call-overload]
        if bucket is None and create:
            bucket = table[key] = {}  # type: ignore[index]
        return bucket  # type: ignore[no-any-return]

    def _refresh_lengths(self, rtype: int) -> None:
        names = self._prefixed.get(int(rtype), {})
        self._prefix_lengths[int(rtype)] = tuple(sorted({len(n) for n in names}))

    # -- decisions -----------------------------------------------------------------------
    def authorize(self, principal: str, host: str, operation: AclOperation,
                  resource_type: ResourceType, name: str) -> bool:
        """`StandardAuthorizerData.authorize` for a LITERAL resource."""
        if principal in self.super_users:
            return True
        has_acls = allowed = False
        for bucket in self._matching_buckets(int(resource_type), name):
            has_acls = True
            result = _bucket_result(bucket, principal, host, operation)
            if result == _DENY:
                return False
            allowed = allowed or result == _ALLOW
        if allowed:
            return True
        return not has_acls and self.allow_if_no_acl

    def _matching_buckets(self, rtype: int, name: str) -> Iterator[_Bucket]:
        """The ACL buckets whose resource pattern matches `name`: its literal bucket, the
        prefixed ones (shortest prefix first), then the literal wildcard's."""
        bucket = self._literal.get((rtype, name))
        if bucket is not None:
            yield bucket
        lengths = self._prefix_lengths.get(rtype)
        if lengths:
            prefixed = self._prefixed[rtype]
            size = len(name)
            for length in lengths:
                if length > size:
                    break
                bucket = prefixed.get(name[:length])
                if bucket is not None:
                    yield bucket
        if name != WILDCARD:
            bucket = self._literal.get((rtype, WILDCARD))
            if bucket is not None:
                yield bucket

    def denial_rule(self, principal: str, host: str, operation: AclOperation,
                    resource_type: ResourceType, name: str) -> str:
        """The rule of a denied decision as Kafka's audit log names it (`MatchingRule`):
        the DENY ACL that matched, else `DefaultDeny`. Only for logging: a scan."""
        for acl in sorted(self._acls):
            if (acl.resource_type == resource_type
                    and acl.principal in (principal, WILDCARD_PRINCIPAL)
                    and _applies_to(acl, name)
                    and acl_result(acl, operation, host) == _DENY):
                return f"MatchingAcl(acl={standard_acl_text(acl)})"
        return "DefaultDeny"

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType,
                              name: str) -> int:
        """`AuthHelper.authorizedOperations`: the bitfield of supported operations allowed."""
        bits = 0
        for op in SUPPORTED_OPERATIONS.get(resource_type, ()):
            if self.authorize(principal, host, op, resource_type, name):
                bits |= 1 << int(op)
        return bits

    def authorize_by_resource_type(self, principal: str, host: str, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        """`Authorizer.authorizeByResourceType`: may the principal perform the operation on
        at least one resource of the type (used for IDEMPOTENT_WRITE's fallback)."""
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        deny: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        allow: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        wildcard_allow = False
        for acl in self._acls:
            if acl.resource_type != resource_type:
                continue
            if not host_matches(acl.host, host):
                continue
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.operation != operation and acl.operation != _ALL:
                continue
            literal_wildcard = acl.pattern_type == _LITERAL and acl.resource_name == WILDCARD
            if acl.permission_type == AclPermissionType.DENY:
                if literal_wildcard:
                    return False
                deny[acl.pattern_type].add(acl.resource_name)
            elif acl.permission_type == AclPermissionType.ALLOW:
                if literal_wildcard:
                    wildcard_allow = True
                else:
                    allow[acl.pattern_type].add(acl.resource_name)
        return wildcard_allow or _any_undominated_allow(allow, deny)


def _applies_to(acl: AclBinding, name: str) -> bool:
    if acl.pattern_type == _LITERAL:
        return acl.resource_name in (name, WILDCARD)
    return name.startswith(acl.resource_name)


def standard_acl_text(acl: AclBinding) -> str:
    """Kafka's `StandardAcl` record as Java prints it."""
    return (f"StandardAcl[resourceType={acl.resource_type.name}, "
            f"resourceName={acl.resource_name}, patternType={acl.pattern_type.name}, "
            f"principal={acl.principal}, host={acl.host}, operation={acl.operation.name}, "
            f"permissionType={acl.permission_type.name}]")


def _any_undominated_allow(allow: dict[PatternType, set[str]],
                           deny: dict[PatternType, set[str]]) -> bool:
    for pattern_type, names in allow.items():
        for name in names:
            if pattern_type == _LITERAL and name in deny[_LITERAL]:
                continue
            if not any(name[:i] in deny[PatternType.PREFIXED] for i in range(1, len(name) + 1)):
                return True
    return False
