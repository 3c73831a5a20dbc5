"""A JoinGroup request normalised across versions, and what a join sets on a member
(its protocols and timeouts, and the parked reply). Shared by the new-member,
existing-member and static-member paths of `join` and `static`.
"""

from __future__ import annotations

from groupcoord.coordinator.classic.group import ClassicGroupMember
from groupcoord.coordinator.result import OpContext


class JoinArgs:
    """A JoinGroup request normalised across versions."""

    __slots__ = (
        "group_id",
        "instance_id",
        "member_id",
        "protocol_type",
        "protocols",
        "reason",
        "rebalance_timeout_ms",
        "session_timeout_ms",
        "version",
    )

    def __init__(self, request, version: int) -> None:
        self.group_id: str = request.group_id
        self.member_id: str = request.member_id or ""
        self.instance_id: str | None = request.group_instance_id if version >= 5 else None
        self.session_timeout_ms: int = request.session_timeout_ms
        # v0 has no rebalance timeout: Kafka uses the session timeout.
        rebalance = request.rebalance_timeout_ms
        self.rebalance_timeout_ms: int = (self.session_timeout_ms
                                          if version == 0 or rebalance < 0 else rebalance)
        self.protocol_type: str = request.protocol_type
        self.protocols: list[tuple[str, bytes]] = [
            (p.name, bytes(p.metadata)) for p in request.protocols]
        self.reason: str = (request.reason if version >= 8 else None) or "not provided"
        self.version = version

    @property
    def protocol_names(self) -> list[str]:
        return [n for n, _ in self.protocols]


def park_join(member: ClassicGroupMember, ctx: OpContext, version: int) -> None:
    member.join_token = ctx.reply_token
    member.join_version = version


def update_member(member: ClassicGroupMember, args: JoinArgs, ctx: OpContext | None) -> None:
    member.protocols = args.protocols
    member.rebalance_timeout_ms = args.rebalance_timeout_ms
    member.session_timeout_ms = args.session_timeout_ms
    if ctx is not None:
        park_join(member, ctx, args.version)
