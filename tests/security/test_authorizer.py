"""The authorizer against Kafka's rules (StandardAuthorizerTest / StandardAuthorizerData),
and a property: the index decides exactly as a scan of every ACL with Kafka's rules."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.security.acl import (
    WILDCARD,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from groupcoord.security.authorizer import StandardAuthorizer, parse_super_users

Op, RT, PT, Perm = AclOperation, ResourceType, PatternType, AclPermissionType
ALLOW, DENY = Perm.ALLOW, Perm.DENY
HOST = "10.0.0.1"


def acl(name: str, op: AclOperation, perm: AclPermissionType = ALLOW, *,
        rt: ResourceType = RT.TOPIC, pt: PatternType = PT.LITERAL, principal: str = "User:alice",
        host: str = "*") -> AclBinding:
    return AclBinding(rt, name, pt, principal, host, op, perm)


def can(auth: StandardAuthorizer, op: AclOperation, name: str, *, rt: ResourceType = RT.TOPIC,
        principal: str = "User:alice", host: str = HOST) -> bool:
    return auth.authorize(principal, host, op, rt, name)


def test_no_acl_denies_by_default_and_allows_with_allow_everyone() -> None:
    assert not can(StandardAuthorizer(), Op.READ, "t")
    assert can(StandardAuthorizer(allow_everyone_if_no_acl_found=True), Op.READ, "t")


def test_acls_for_someone_else_deny_even_with_allow_everyone() -> None:
    # allow.everyone.if.no.acl.found only applies to resources without any ACL.
    auth = StandardAuthorizer(allow_everyone_if_no_acl_found=True,
                              acls=[acl("t", Op.READ, principal="User:bob")])
    assert not can(auth, Op.READ, "t")
    assert can(auth, Op.READ, "t", principal="User:bob")
    assert can(auth, Op.READ, "other")


def test_deny_beats_allow_at_every_level() -> None:
    auth = StandardAuthorizer(acls=[
        acl("t", Op.READ), acl("t", Op.READ, DENY, principal="User:*"),
        acl("p", Op.ALL, pt=PT.PREFIXED), acl("p-secret", Op.READ, DENY),
        acl("x", Op.ALL), acl(WILDCARD, Op.WRITE, DENY),
    ])
    assert not can(auth, Op.READ, "t")
    assert can(auth, Op.READ, "p-open")
    assert not can(auth, Op.READ, "p-secret")
    assert can(auth, Op.READ, "x")
    assert not can(auth, Op.WRITE, "x")  # the wildcard DENY wins over the literal ALL


def test_prefixed_matches_prefixes_and_literal_matches_only_the_name() -> None:
    auth = StandardAuthorizer(acls=[acl("orders", Op.READ, pt=PT.PREFIXED),
                                    acl("pay", Op.READ)])
    assert can(auth, Op.READ, "orders")
    assert can(auth, Op.READ, "orders-eu")
    assert not can(auth, Op.READ, "order")
    assert can(auth, Op.READ, "pay")
    assert not can(auth, Op.READ, "payments")
    assert not can(auth, Op.READ, "orders", rt=RT.GROUP)  # another resource type


def test_wildcard_resource_and_wildcard_principal() -> None:
    auth = StandardAuthorizer(acls=[acl(WILDCARD, Op.READ, principal="User:*", rt=RT.GROUP)])
    assert can(auth, Op.READ, "any-group", rt=RT.GROUP, principal="User:zed")
    assert not can(auth, Op.READ, "any-topic", principal="User:zed")
    # A prefixed "*" is not a wildcard: it matches names starting with '*'.
    auth = StandardAuthorizer(acls=[acl(WILDCARD, Op.READ, pt=PT.PREFIXED)])
    assert not can(auth, Op.READ, "t")
    assert can(auth, Op.READ, "*t")
    # "User:*" is the only principal wildcard; other types are literal.
    auth = StandardAuthorizer(acls=[acl("t", Op.READ, principal="Group:*")])
    assert not can(auth, Op.READ, "t")


def test_hosts_wildcard_exact_and_cidr() -> None:
    auth = StandardAuthorizer(acls=[acl("a", Op.READ, host=HOST),
                                    acl("b", Op.READ, host="10.0.0.0/24"),
                                    acl("c", Op.READ, host="*")])
    assert can(auth, Op.READ, "a") and not can(auth, Op.READ, "a", host="10.0.0.2")
    assert can(auth, Op.READ, "b") and not can(auth, Op.READ, "b", host="10.0.1.1")
    assert can(auth, Op.READ, "c", host="::1")


def test_implied_operations_only_from_allow() -> None:
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE):
        assert can(StandardAuthorizer(acls=[acl("t", op)]), Op.DESCRIBE, "t"), op
    for op in (Op.CREATE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS):
        assert not can(StandardAuthorizer(acls=[acl("t", op)]), Op.DESCRIBE, "t"), op
    assert can(StandardAuthorizer(acls=[acl("t", Op.ALTER_CONFIGS)]), Op.DESCRIBE_CONFIGS, "t")
    assert not can(StandardAuthorizer(acls=[acl("t", Op.ALTER)]), Op.DESCRIBE_CONFIGS, "t")
    # READ does not imply WRITE, and a DENY READ does not deny DESCRIBE.
    auth = StandardAuthorizer(acls=[acl("t", Op.DESCRIBE), acl("t", Op.READ, DENY)])
    assert not can(auth, Op.WRITE, "t")
    assert can(auth, Op.DESCRIBE, "t")
    assert not can(auth, Op.READ, "t")


def test_all_allows_and_denies_every_operation() -> None:
    auth = StandardAuthorizer(acls=[acl("t", Op.ALL)])
    assert all(can(auth, op, "t") for op in (Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER_CONFIGS))
    auth = StandardAuthorizer(acls=[acl("t", Op.READ), acl("t", Op.ALL, DENY)])
    assert not can(auth, Op.READ, "t") and not can(auth, Op.DESCRIBE, "t")


def test_super_users_bypass_acls() -> None:
    users = parse_super_users(" User:admin ;User:ops;")
    assert users == {"User:admin", "User:ops"}
    auth = StandardAuthorizer(users, acls=[acl(WILDCARD, Op.ALL, DENY, principal="User:*")])
    assert can(auth, Op.WRITE, "t", principal="User:admin")
    assert not can(auth, Op.WRITE, "t", principal="User:bob")


def test_authorized_operations_bitfield() -> None:
    auth = StandardAuthorizer(acls=[acl("g", Op.READ, rt=RT.GROUP)])
    bits = auth.authorized_operations("User:alice", HOST, RT.GROUP, "g")
    assert bits == (1 << Op.READ) | (1 << Op.DESCRIBE)
    assert StandardAuthorizer().authorized_operations("User:alice", HOST, RT.GROUP, "g") == 0


def test_authorize_by_resource_type() -> None:
    def by_type(acls: list[AclBinding], **kw: bool) -> bool:
        return StandardAuthorizer(acls=acls, **kw).authorize_by_resource_type(
            "User:alice", HOST, Op.WRITE, RT.TOPIC)
    assert not by_type([])
    assert by_type([], allow_everyone_if_no_acl_found=True)
    assert by_type([acl("t", Op.WRITE)])
    assert by_type([acl("t", Op.ALL, pt=PT.PREFIXED)])
    assert not by_type([acl("t", Op.WRITE), acl("t", Op.WRITE, DENY)])
    assert not by_type([acl("t-1", Op.WRITE), acl("t", Op.WRITE, DENY, pt=PT.PREFIXED)])
    assert by_type([acl("t-1", Op.WRITE), acl("u", Op.WRITE, DENY, pt=PT.PREFIXED)])
    assert not by_type([acl(WILDCARD, Op.WRITE), acl(WILDCARD, Op.WRITE, DENY)])
    assert not by_type([acl("t", Op.READ)])


def test_filter_matching_as_kafka() -> None:
    lit, pre, star = acl("foo", Op.READ), acl("fo", Op.READ, pt=PT.PREFIXED), acl(WILDCARD, Op.READ)
    def f(name: str | None, pt: PatternType, **kw: object) -> list[AclBinding]:
        flt = AclBindingFilter(RT.TOPIC, name, pt, kw.get("principal"), kw.get("host"),  # type: ignore[arg-type]
                               kw.get("op", Op.ANY), kw.get("perm", Perm.ANY))  # type: ignore[arg-type]
        return [a for a in (lit, pre, star) if flt.matches(a)]
    assert f("foo", PT.MATCH) == [lit, pre, star]
    assert f("foo", PT.ANY) == [lit]
    assert f(None, PT.PREFIXED) == [pre]
    assert f("fo", PT.LITERAL) == []
    assert f(None, PT.ANY, principal="User:bob") == []
    assert f(None, PT.ANY, op=Op.WRITE) == []
    assert f(None, PT.ANY, perm=DENY) == []


def test_remove_restores_previous_decisions() -> None:
    auth = StandardAuthorizer(acls=[acl("t", Op.READ)])
    deny = acl("t", Op.READ, DENY, pt=PT.PREFIXED)
    auth.add(deny)
    assert not can(auth, Op.READ, "t")
    auth.remove(deny)
    assert can(auth, Op.READ, "t") and len(auth) == 1


# -- the index against a scan ---------------------------------------------------------------
NAMES = ["a", "ab", "abc", "b", "ba", WILDCARD, "*a"]
PRINCIPALS = ["User:alice", "User:bob", "User:*"]
OPS = [Op.ALL, Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS,
       Op.CREATE]
acls_strategy = st.builds(
    AclBinding, st.sampled_from([RT.TOPIC, RT.GROUP]), st.sampled_from(NAMES),
    st.sampled_from([PT.LITERAL, PT.PREFIXED]), st.sampled_from(PRINCIPALS),
    st.sampled_from(["*", HOST, "10.0.0.2", "10.0.0.0/30"]), st.sampled_from(OPS),
    st.sampled_from([ALLOW, DENY]))


def scan(acls: list[AclBinding], principal: str, host: str, op: AclOperation, rt: ResourceType,
         name: str, default: bool) -> bool:
    """Kafka's decision by brute force over every ACL."""
    applicable = [a for a in acls if a.resource_type == rt and (
        (a.pattern_type == PT.LITERAL and a.resource_name in (name, WILDCARD))
        or (a.pattern_type == PT.PREFIXED and name.startswith(a.resource_name)))]
    matching = [a for a in applicable if a.principal in (principal, "User:*")
                and (a.host in ("*", host) or (a.host == "10.0.0.0/30" and host in (HOST, "10.0.0.2")))]
    if any(a.permission_type == DENY and a.operation in (op, Op.ALL) for a in matching):
        return False
    implied = {Op.DESCRIBE: {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER},
               Op.DESCRIBE_CONFIGS: {Op.ALTER_CONFIGS}}.get(op, set())
    if any(a.permission_type == ALLOW and a.operation in {op, Op.ALL} | implied
           for a in matching):
        return True
    return default and not applicable


@settings(max_examples=300, deadline=None)
@given(st.lists(acls_strategy, max_size=25), st.lists(st.integers(0, 24), max_size=5),
       st.booleans(), st.sampled_from(["a", "ab", "abc", "abcd", "b", "c", "*a", WILDCARD]),
       st.sampled_from(["User:alice", "User:bob", "User:carol"]), st.sampled_from(OPS[1:]),
       st.sampled_from([HOST, "10.0.0.2", "10.0.0.9"]), st.sampled_from([RT.TOPIC, RT.GROUP]))
def test_index_equals_scan(acls: list[AclBinding], removals: list[int], default: bool, name: str,
                           principal: str, op: AclOperation, host: str, rt: ResourceType) -> None:
    auth = StandardAuthorizer(allow_everyone_if_no_acl_found=default, acls=acls)
    live = list(dict.fromkeys(acls))
    for i in removals:
        if live:
            gone = live.pop(i % len(live))
            auth.remove(gone)
    assert sorted(live) == auth.acls()
    assert auth.authorize(principal, host, op, rt, name) == scan(
        live, principal, host, op, rt, name, default)
