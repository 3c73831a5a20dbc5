"""Durable ACLs: Kafka's create/delete semantics, replay from the data dir, and a disk that
refuses the write changing nothing."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from groupcoord.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from groupcoord.security.acl_store import ACL_FILE, AclStore, AclStoreError, DurableAuthorizer
from groupcoord.storage.faults import FaultInjectingFileIO, FaultRule
from groupcoord.wire.errors import ErrorCode

Op, RT, PT, Perm = AclOperation, ResourceType, PatternType, AclPermissionType


def acl(name: str, op: AclOperation = Op.READ, *, rt: ResourceType = RT.TOPIC,
        pt: PatternType = PT.LITERAL, principal: str = "User:alice", host: str = "*",
        perm: AclPermissionType = Perm.ALLOW) -> AclBinding:
    return AclBinding(rt, name, pt, principal, host, op, perm)


def any_filter(**kw: object) -> AclBindingFilter:
    fields: dict[str, object] = {"resource_type": RT.ANY, "resource_name": None,
                                     "pattern_type": PT.ANY, "principal": None, "host": None,
                                     "operation": Op.ANY, "permission_type": Perm.ANY}
    fields.update(kw)
    return AclBindingFilter(**fields)  # type: ignore[arg-type]


def test_create_validates_like_kafka(tmp_path: Path) -> None:
    auth = DurableAuthorizer(AclStore(str(tmp_path)))
    results = auth.create_acls([
        acl("t"), acl("t"),  # a duplicate succeeds and is stored once
        acl("x", rt=RT.ANY), acl("x", pt=PT.MATCH), acl("x", Op.ANY),
        acl("x", perm=Perm.ANY), acl(""), acl("x", principal="alice"),
        acl("other", rt=RT.CLUSTER), acl("x", host="10.0.0.0/99"),
        acl("kafka-cluster", Op.ALTER, rt=RT.CLUSTER), acl("x", host="10.0.0.0/8"),
    ])
    codes = [r.error_code for r in results]
    assert codes == [0, 0] + [ErrorCode.INVALID_REQUEST] * 8 + [0, 0]
    assert results[8].error_message == "The only valid name for the CLUSTER resource is kafka-cluster"
    assert results[6].error_message == "Invalid empty resource name"
    assert len(auth) == 3


def test_acls_survive_a_restart(tmp_path: Path) -> None:
    auth = DurableAuthorizer(AclStore(str(tmp_path)))
    auth.create_acls([acl("t"), acl("g", rt=RT.GROUP, pt=PT.PREFIXED, perm=Perm.DENY)])
    again = DurableAuthorizer(AclStore(str(tmp_path)))
    assert again.acls() == auth.acls()
    assert again.authorize("User:alice", "h", Op.READ, RT.TOPIC, "t")


def test_delete_reports_matches_per_filter_and_removes_them_together(tmp_path: Path) -> None:
    auth = DurableAuthorizer(AclStore(str(tmp_path)))
    auth.create_acls([acl("t"), acl("t", Op.WRITE), acl("u", principal="User:bob")])
    results = auth.delete_acls([
        any_filter(resource_type=RT.TOPIC, resource_name="t", pattern_type=PT.LITERAL),
        any_filter(operation=Op.WRITE),  # matches an ACL the first filter also matched
        any_filter(resource_type=RT.UNKNOWN),
        any_filter(operation=Op.UNKNOWN),
    ])
    assert [len(r.matching) for r in results] == [2, 1, 0, 0]
    assert [r.error_code for r in results] == [0, 0, ErrorCode.INVALID_REQUEST,
                                               ErrorCode.INVALID_REQUEST]
    assert [r.error_message for r in results[2:]] == ["Unknown patternFilter.", "Unknown entryFilter."]
    assert [a.resource_name for a in auth.acls()] == ["u"]
    assert [a.resource_name for a in DurableAuthorizer(AclStore(str(tmp_path))).acls()] == ["u"]


@pytest.mark.parametrize("op", ["write", "fsync"])
def test_a_failed_write_answers_an_error_and_changes_nothing(tmp_path: Path, op: str) -> None:
    io = FaultInjectingFileIO()
    auth = DurableAuthorizer(AclStore(str(tmp_path), io))
    auth.create_acls([acl("t")])
    io.add(FaultRule(op, errno.EIO, suffix=".tmp", times=2))  # type: ignore[arg-type]
    created = auth.create_acls([acl("u"), acl("", Op.READ)])
    assert [r.error_code for r in created] == [ErrorCode.UNKNOWN_SERVER_ERROR,
                                               ErrorCode.INVALID_REQUEST]
    deleted = auth.delete_acls([any_filter()])
    assert deleted[0].error_code == ErrorCode.UNKNOWN_SERVER_ERROR and not deleted[0].matching
    assert [a.resource_name for a in auth.acls()] == ["t"]
    assert not auth.authorize("User:alice", "h", Op.READ, RT.TOPIC, "u")
    assert [a.resource_name for a in DurableAuthorizer(AclStore(str(tmp_path))).acls()] == ["t"]
    assert not (tmp_path / (ACL_FILE + ".tmp")).exists()


def test_a_damaged_acl_file_stops_the_start(tmp_path: Path) -> None:
    (tmp_path / ACL_FILE).write_text("{not json")
    with pytest.raises(AclStoreError):
        DurableAuthorizer(AclStore(str(tmp_path)))


def test_one_request_changes_at_most_10000_acls(tmp_path: Path) -> None:
    auth = DurableAuthorizer(AclStore(str(tmp_path)))
    too_many = [acl(f"t{i}") for i in range(10_001)]
    results = auth.create_acls([*too_many, acl("")])
    assert {r.error_code for r in results[:-1]} == {ErrorCode.POLICY_VIOLATION}
    assert results[-1].error_code == ErrorCode.INVALID_REQUEST
    assert len(auth) == 0
    assert {r.error_code for r in auth.create_acls(too_many[:10_000])} == {0}
    auth.create_acls([acl("u")])
    deleted = auth.delete_acls([any_filter(), any_filter(resource_type=RT.GROUP)])
    assert [r.error_code for r in deleted] == [ErrorCode.INVALID_REQUEST] * 2
    assert len(auth) == 10_001
