"""DescribeGroups, ListGroups and DeleteGroups views of classic groups
(`GroupMetadataManager.describeGroups/listGroups`, `ClassicGroup.validateDeleteGroup`)."""

from __future__ import annotations

from groupcoord.coordinator.classic.group import ClassicGroup
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.describe_groups import DescribedGroup, DescribedGroupMember
from groupcoord.wire.generated.list_groups import ListedGroup

S = ClassicGroupState
GROUP_TYPE = "classic"


def describe(group: ClassicGroup | None, group_id: str, version: int) -> DescribedGroup:
    if group is None or group.is_in(S.DEAD):
        if version >= 6:
            return DescribedGroup(group_id=group_id, group_state=S.DEAD.value,
                                  error_code=int(ErrorCode.GROUP_ID_NOT_FOUND),
                                  error_message=f"Group {group_id} not found.")
        return DescribedGroup(group_id=group_id, group_state=S.DEAD.value)
    stable = group.is_in(S.STABLE)
    members = [
        DescribedGroupMember(
            member_id=m.member_id, group_instance_id=m.group_instance_id,
            client_id=m.client_id, client_host=m.client_host,
            # Subscriptions are shown only once a protocol is settled (Stable).
            member_metadata=m.metadata(group.protocol_name) if stable else b"",
            member_assignment=m.assignment)
        for m in group.members.values()
    ]
    return DescribedGroup(
        group_id=group_id, group_state=group.state.value,
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "",
        members=members)


def _parse_type(name: str) -> str:
    lowered = name.strip().lower()
    return lowered if lowered in ("classic", "consumer", "share", "streams") else "unknown"


def list_groups(groups: list[ClassicGroup], states: list[str], types: list[str]
                ) -> list[ListedGroup]:
    wanted_states = {s.strip().lower() for s in states}
    wanted_types = {_parse_type(t) for t in types}
    return [
        ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type or "",
                    group_state=g.state.value, group_type=GROUP_TYPE)
        for g in groups
        if (not wanted_states or g.state.lower_name in wanted_states)
        and (not wanted_types or GROUP_TYPE in wanted_types)
    ]


def validate_delete(group: ClassicGroup | None) -> int:
    if group is None or group.is_in(S.DEAD):
        return ErrorCode.GROUP_ID_NOT_FOUND
    if not group.is_in(S.EMPTY):
        return ErrorCode.NON_EMPTY_GROUP
    return ErrorCode.NONE
