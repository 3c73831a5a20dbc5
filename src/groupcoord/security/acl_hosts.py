"""The host of an ACL and the client address it is matched against, as Kafka 4.4.

Kafka's `StandardAuthorizer` matches an ACL's host against the client's
`InetAddress.getHostAddress()`: the bare address (`127.0.0.1`; IPv6 in Java's uncompressed
form, `0:0:0:0:0:0:0:1`, with `%zone` when scoped), never the `/127.0.0.1` of
`InetAddress.toString()` that the group APIs report as a member's client host. An ACL
applies when its host is `*`, equals that string exactly (so an ACL for `::1` never
matches the IPv6 loopback, whose address reads `0:0:0:0:0:0:0:1`), or is a CIDR block that
holds it (KIP-1276, `CidrUtils.isInRange`: IPv4 blocks through commons-net's `SubnetUtils`,
blocks with a `:` through `SubnetUtils6`; a host the block cannot parse is outside it).

CreateAcls accepts any host without a `/` (`AclControlManager.validateHostPattern`) and
a host with one only when `CidrUtils.validate` parses it; the refusal's message carries
commons-net's own words, reproduced here.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from functools import lru_cache

WILDCARD_HOST = "*"

# commons-net `SubnetUtils`: four 1-3 digit octets and a 1-2 digit prefix, ASCII only.
_IPV4_CIDR = re.compile(r"([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})/([0-9]{1,2})")
_IPV4_ADDRESS = re.compile(r"([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})")
# Java's `Integer.parseInt`: an optional sign and ASCII digits, within 32 bits.
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1


class InvalidCidr(ValueError):
    """A host with `/` that commons-net does not parse; the text is its message."""


@dataclass(frozen=True, slots=True)
class CidrBlock:
    """A parsed CIDR host pattern: the inclusive range of addresses it holds."""

    ipv6: bool
    low: int
    high: int

    def holds(self, address: str) -> bool:
        """`SubnetInfo.isInRange(address)`; False for an address that does not parse."""
        if self.ipv6:
            value = _ipv6_value(address)
            return value is not None and self.low <= value <= self.high
        match = _IPV4_ADDRESS.fullmatch(address)
        if match is None or any(int(octet) > 255 for octet in match.groups()):
            return False
        value = int.from_bytes(bytes(int(octet) for octet in match.groups()), "big")
        # SubnetUtils refuses 0.0.0.0 in any block ("cannot ever be in range").
        return value != 0 and self.low <= value <= self.high


def _range(address: int, prefix: int, bits: int) -> tuple[int, int]:
    host_mask = (1 << (bits - prefix)) - 1
    network = address & ~host_mask & ((1 << bits) - 1)
    return network, network | host_mask


def _ipv6_value(text: str) -> int | None:
    """The 128-bit value of an IPv6 literal as Java's `InetAddress.getByName` reads it, or
    None where Java would not make an `Inet6Address` of it (an IPv4-mapped address becomes
    IPv4; a zone must be a number or the name of an interface of this host)."""
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if not text.isascii():
        return None
    base, percent, zone = text.partition("%")
    if percent and not (zone.isdigit() or _is_interface(zone)):
        return None
    try:
        parsed = ipaddress.IPv6Address(base)
    except ValueError:
        return None
    if parsed.ipv4_mapped is not None:
        return None
    return int(parsed)


def _is_interface(name: str) -> bool:
    try:
        socket.if_nametoindex(name)
    except OSError:
        return False
    return True


@lru_cache(maxsize=4096)
def parse_cidr(pattern: str) -> CidrBlock:
    """`CidrUtils.validate`: the block, or InvalidCidr with commons-net's message."""
    if ":" in pattern:
        return _parse_ipv6(pattern)
    match = _IPV4_CIDR.fullmatch(pattern)
    if match is None:
        raise InvalidCidr(f"Could not parse [{pattern}]")
    octets = [int(octet) for octet in match.groups()[:4]]
    for octet in octets:
        if octet > 255:
            raise InvalidCidr(f"Value [{octet}] not in range [0,255]")
    prefix = int(match.group(5))
    if prefix > 32:
        raise InvalidCidr(f"Value [{prefix}] not in range [0,32]")
    low, high = _range(int.from_bytes(bytes(octets), "big"), prefix, 32)
    return CidrBlock(False, low, high)


def _parse_ipv6(pattern: str) -> CidrBlock:
    address, _, prefix_text = pattern.partition("/")
    if not _JAVA_INT.fullmatch(prefix_text) or not _INT_MIN <= int(prefix_text) <= _INT_MAX:
        raise InvalidCidr(f"Could not parse [{pattern}] - invalid prefix length")
    prefix = int(prefix_text)
    if not 0 <= prefix <= 128:
        raise InvalidCidr(f"Could not parse [{pattern}] - prefix length must be between 0 "
                          "and 128")
    value = _ipv6_value(address)
    if value is None:
        if _is_ipv4_mapped(address):
            raise InvalidCidr(f"Could not parse [{address}] - not an IPv6 address")
        raise InvalidCidr(f"Could not parse [{address}]")
    low, high = _range(value, prefix, 128)
    return CidrBlock(True, low, high)


def _is_ipv4_mapped(text: str) -> bool:
    base = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        return ipaddress.IPv6Address(base.partition("%")[0]).ipv4_mapped is not None
    except ValueError:
        return False


def check_cidr_host(host: str) -> None:
    """The CIDR half of `AclControlManager.validateHostPattern`: a host with `/` must be a
    block (InvalidCidr otherwise); any other host is taken as an exact address."""
    if host != WILDCARD_HOST and "/" in host:
        parse_cidr(host)


def host_matches(acl_host: str, address: str) -> bool:
    """Does an ACL with this host apply to a client at `address` (bare, Java's form)?"""
    if acl_host == WILDCARD_HOST or acl_host == address:
        return True
    return "/" in acl_host and _in_block(acl_host, address)


@lru_cache(maxsize=65536)  # (block, client address) pairs are few: parse and test once
def _in_block(acl_host: str, address: str) -> bool:
    try:
        block = parse_cidr(acl_host)
    except InvalidCidr:
        return False
    return block.holds(address)
