"""Builders of classic group responses, with Kafka's per-version normalisation.

JoinGroupResponse before v7 cannot carry a null ProtocolName (Kafka's `JoinGroupResponse`
constructor writes "" instead).
"""

from __future__ import annotations

from groupcoord.coordinator.classic.group import ClassicGroup
from groupcoord.wire.generated.join_group import JoinGroupResponse, JoinGroupResponseMember
from groupcoord.wire.generated.sync_group import SyncGroupResponse


def join_response(version: int, error_code: int = 0, member_id: str = "",
                  generation_id: int = -1, protocol_type: str | None = None,
                  protocol_name: str | None = None, leader: str = "",
                  skip_assignment: bool = False,
                  members: list[JoinGroupResponseMember] | None = None) -> JoinGroupResponse:
    if version < 7 and protocol_name is None:
        protocol_name = ""
    return JoinGroupResponse(
        error_code=int(error_code), generation_id=generation_id, protocol_type=protocol_type,
        protocol_name=protocol_name, leader=leader, skip_assignment=skip_assignment,
        member_id=member_id, members=members or [])


def join_error(version: int, error_code: int, member_id: str = "") -> JoinGroupResponse:
    return join_response(version, error_code=error_code, member_id=member_id)


def current_members(group: ClassicGroup) -> list[JoinGroupResponseMember]:
    """Members and their metadata for the selected protocol (sent only to the leader)."""
    return [
        JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                metadata=m.metadata(group.protocol_name))
        for m in group.members.values()
    ]


def generation_join_response(group: ClassicGroup, member_id: str, version: int,
                             with_members: bool, skip_assignment: bool = False,
                             leader: str | None = None) -> JoinGroupResponse:
    return join_response(
        version, member_id=member_id, generation_id=group.generation_id,
        protocol_type=group.protocol_type, protocol_name=group.protocol_name,
        leader=(group.leader_id or "") if leader is None else leader,
        skip_assignment=skip_assignment,
        members=current_members(group) if with_members else [])


def sync_response(error_code: int = 0, assignment: bytes = b"",
                  protocol_type: str | None = None,
                  protocol_name: str | None = None) -> SyncGroupResponse:
    return SyncGroupResponse(error_code=int(error_code), protocol_type=protocol_type,
                             protocol_name=protocol_name, assignment=assignment)
