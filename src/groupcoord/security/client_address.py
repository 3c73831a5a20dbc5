"""The client address as Kafka's authorizer sees it: Java's `InetAddress.getHostAddress()`.

Its own module because every connection computes it before the listener is bound: it keeps
`ipaddress` (needed for IPv6 peers only) and the ACL host matching off the start-up path.
"""

from __future__ import annotations


def java_host_address(address: str) -> str:
    """`InetAddress.getHostAddress()` of a peer address as Python's socket reports it:
    IPv4 unchanged, IPv6 as eight lower-case hex groups without leading zeros and without
    `::` compression, an IPv4-mapped IPv6 address as its IPv4 address (Java never keeps one
    as IPv6), a zone kept after `%`."""
    if ":" not in address:
        return address
    base, _, zone = address.partition("%")
    import ipaddress  # IPv6 peers only: off the start-up path

    parsed = ipaddress.IPv6Address(base)
    if parsed.ipv4_mapped is not None:
        return str(parsed.ipv4_mapped)
    literal = ":".join(format(int(group, 16), "x") for group in parsed.exploded.split(":"))
    return f"{literal}%{zone}" if zone else literal
