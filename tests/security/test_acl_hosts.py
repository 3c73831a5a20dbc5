"""ACL host patterns and client addresses against Kafka 4.4.

The tables are what Kafka 4.4's own `CidrUtils` (kafka-clients 4.4.0 with its shaded
commons-net) answered for these inputs, run on a JVM: `validate` (the message of its
IllegalArgumentException) and `isInRange` for the client addresses Kafka hands the
authorizer (`InetAddress.getHostAddress()`).
"""

from __future__ import annotations

import pytest

from groupcoord.security.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    InvalidAcl,
    validate_new_acl,
)
from groupcoord.security.acl import PatternType as PT
from groupcoord.security.acl import ResourceType as RT
from groupcoord.security.acl_hosts import (
    InvalidCidr,
    host_matches,
    parse_cidr,
)
from groupcoord.security.authorizer import StandardAuthorizer
from groupcoord.security.client_address import java_host_address

V4, V4_TOP, V4_NET, OTHER, V6 = "127.0.0.1", "127.255.255.255", "127.0.0.0", "10.0.0.1", \
    "0:0:0:0:0:0:0:1"
ADDRESSES = (V4, V4_TOP, V4_NET, OTHER, V6, "0.0.0.0", "/127.0.0.1", "::1")

# pattern -> the addresses of ADDRESSES it holds (Kafka's isInRange)
ACCEPTED = {
    "127.0.0.0/8": {V4, V4_TOP, V4_NET},
    "127.0.0.1/8": {V4, V4_TOP, V4_NET},
    "127.0.0.1/32": {V4},
    "127.0.0.0/7": {V4, V4_TOP, V4_NET},
    "0.0.0.0/0": {V4, V4_TOP, V4_NET, OTHER},  # never 0.0.0.0 itself
    "0.0.0.0/32": set(),
    "127.000.000.001/8": {V4, V4_TOP, V4_NET},
    "127.0.0.1/08": {V4, V4_TOP, V4_NET},
    "128.0.0.0/1": set(),
    "::1/128": {V6, "::1"},
    "::/0": {V6, "::1"},
    "0:0:0:0:0:0:0:1/128": {V6, "::1"},
    "[::1]/128": {V6, "::1"},
    "::1/0128": {V6, "::1"},
    "fe80::/10": set(),
}

REFUSED = {
    "127.0.0.0/33": "Value [33] not in range [0,32]",
    "127.0.0.0/-1": "Could not parse [127.0.0.0/-1]",
    "300.0.0.0/8": "Value [300] not in range [0,255]",
    "127.0.0/8": "Could not parse [127.0.0/8]",
    "127.0.0.1/": "Could not parse [127.0.0.1/]",
    "/8": "Could not parse [/8]",
    "abc/8": "Could not parse [abc/8]",
    "127.0.0.0/8/9": "Could not parse [127.0.0.0/8/9]",
    " 127.0.0.0/8": "Could not parse [ 127.0.0.0/8]",
    "127.0.0.0/8 ": "Could not parse [127.0.0.0/8 ]",
    "127.0.0.1/255.0.0.0": "Could not parse [127.0.0.1/255.0.0.0]",
    "127.0.0.1/1234": "Could not parse [127.0.0.1/1234]",
    "::1/129": "Could not parse [::1/129] - prefix length must be between 0 and 128",
    "::1/-1": "Could not parse [::1/-1] - prefix length must be between 0 and 128",
    "::1/": "Could not parse [::1/] - invalid prefix length",
    "::1/ 128": "Could not parse [::1/ 128] - invalid prefix length",
    "::1/1x": "Could not parse [::1/1x] - invalid prefix length",
    "::ffff:127.0.0.1/128": "Could not parse [::ffff:127.0.0.1] - not an IPv6 address",
    "::ffff:127.0.0.0/104": "Could not parse [::ffff:127.0.0.0] - not an IPv6 address",
    "1:2:3/64": "Could not parse [1:2:3]",
    "::g/64": "Could not parse [::g]",
}


@pytest.mark.parametrize("pattern", sorted(ACCEPTED))
def test_blocks_kafka_accepts_hold_what_kafka_says(pattern: str) -> None:
    parse_cidr(pattern)
    held = {a for a in ADDRESSES if host_matches(pattern, a)}
    assert held == ACCEPTED[pattern]


@pytest.mark.parametrize("pattern", sorted(REFUSED))
def test_blocks_kafka_refuses_with_its_message(pattern: str) -> None:
    with pytest.raises(InvalidCidr) as refused:
        parse_cidr(pattern)
    assert str(refused.value) == REFUSED[pattern]
    assert not any(host_matches(pattern, a) for a in ADDRESSES)
    binding = AclBinding(RT.TOPIC, "t", PT.LITERAL, "User:a", pattern, AclOperation.READ,
                         AclPermissionType.ALLOW)
    with pytest.raises(InvalidAcl) as invalid:
        validate_new_acl(binding)
    assert str(invalid.value) == f"Invalid CIDR notation '{pattern}': {REFUSED[pattern]}"


def test_hosts_without_a_slash_are_accepted_and_matched_exactly() -> None:
    for host in ("127.0.0.1", "localhost", "::1", "127.000.000.001", "anything at all"):
        validate_new_acl(AclBinding(RT.TOPIC, "t", PT.LITERAL, "User:a", host,
                                    AclOperation.READ, AclPermissionType.ALLOW))
    assert host_matches("*", V4) and host_matches("*", V6)
    assert host_matches(V4, V4) and not host_matches("127.000.000.001", V4)
    # Java prints the IPv6 loopback uncompressed: an ACL for `::1` never names it.
    assert host_matches(V6, V6) and not host_matches("::1", V6)
    assert not host_matches("/127.0.0.1", V4)


def test_the_address_kafka_hands_the_authorizer() -> None:
    assert java_host_address("127.0.0.1") == "127.0.0.1"
    assert java_host_address("::1") == V6
    assert java_host_address("2001:db8::0a0b") == "2001:db8:0:0:0:0:0:a0b"
    assert java_host_address("fe80::1%lo") == "fe80:0:0:0:0:0:0:1%lo"
    assert java_host_address("::ffff:127.0.0.1") == "127.0.0.1"  # Java makes it IPv4


def test_the_authorizer_matches_the_bare_address() -> None:
    deny = AclBinding(RT.TOPIC, "t", PT.LITERAL, "User:*", "127.0.0.0/8", AclOperation.WRITE,
                      AclPermissionType.DENY)
    allow = AclBinding(RT.TOPIC, "t", PT.LITERAL, "User:a", "*", AclOperation.ALL,
                       AclPermissionType.ALLOW)
    auth = StandardAuthorizer(acls=[deny, allow])
    assert not auth.authorize("User:a", V4, AclOperation.WRITE, RT.TOPIC, "t")
    assert auth.authorize("User:a", V6, AclOperation.WRITE, RT.TOPIC, "t")
    assert auth.authorize("User:a", V4, AclOperation.READ, RT.TOPIC, "t")
    assert auth.denial_rule("User:a", V4, AclOperation.WRITE, RT.TOPIC, "t") == (
        "MatchingAcl(acl=StandardAcl[resourceType=TOPIC, resourceName=t, "
        "patternType=LITERAL, principal=User:*, host=127.0.0.0/8, operation=WRITE, "
        "permissionType=DENY])")
    assert auth.denial_rule("User:b", V4, AclOperation.READ, RT.TOPIC, "t") == "DefaultDeny"
    only_from = StandardAuthorizer(acls=[AclBinding(
        RT.TOPIC, "t", PT.LITERAL, "User:a", OTHER, AclOperation.READ,
        AclPermissionType.ALLOW)])
    assert not only_from.authorize("User:a", V4, AclOperation.READ, RT.TOPIC, "t")
    assert only_from.authorize("User:a", OTHER, AclOperation.READ, RT.TOPIC, "t")
