"""DescribeUserScramCredentials / AlterUserScramCredentials against Kafka's rules
(`ScramImage.describe`, `ScramControlManager.alterCredentials`): error codes and messages
per user, the duplicate rules, iterations bounds, and what is stored."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from groupcoord.apis import alter_user_scram_credentials as alter
from groupcoord.apis import describe_user_scram_credentials as describe
from groupcoord.security.scram import SHA_256, SHA_512, credential_from_salted, salted_password
from groupcoord.security.scram_store import ScramCredentialStore
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from groupcoord.wire.generated.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    UserName,
)

SALT = b"0123456789abcdef"


class Ctx:
    def __init__(self, data_dir: Path) -> None:
        self.scram_credentials = ScramCredentialStore(str(data_dir))
        self.authorizer = None  # no authorizer: every check passes


def upsert(name: str, mechanism: int = 1, iterations: int = 4096,
           password: bytes = b"pw") -> ScramCredentialUpsertion:
    hash_name = {1: "sha256", 2: "sha512"}.get(mechanism, "sha256")
    return ScramCredentialUpsertion(name=name, mechanism=mechanism, iterations=iterations,
                                    salt=SALT, salted_password=salted_password(
                                        hash_name, password, SALT, 4096))


def call_alter(ctx: Ctx, deletions: list[Any] = (), upsertions: list[Any] = ()) -> dict[str, Any]:
    request = AlterUserScramCredentialsRequest(deletions=list(deletions),
                                               upsertions=list(upsertions))
    response = asyncio.run(alter.handle(ctx, None, request, 0))  # type: ignore[arg-type]
    return {r.user: (r.error_code, r.error_message) for r in response.results}


def call_describe(ctx: Ctx, users: list[str] | None) -> list[Any]:
    request = DescribeUserScramCredentialsRequest(
        users=None if users is None else [UserName(name=u) for u in users])
    response = asyncio.run(describe.handle(ctx, None, request, 0))  # type: ignore[arg-type]
    assert response.error_code == 0
    return [(r.user, r.error_code, r.error_message,
             [(i.mechanism, i.iterations) for i in r.credential_infos]) for r in response.results]


def test_upsert_stores_kafkas_keys_and_describe_lists_them(tmp_path: Path) -> None:
    ctx = Ctx(tmp_path)
    assert call_alter(ctx, upsertions=[upsert("alice"), upsert("bob", 2, 8192)]) == {
        "alice": (0, None), "bob": (0, None)}
    salted = salted_password("sha256", b"pw", SALT, 4096)
    assert ctx.scram_credentials.lookup("alice", SHA_256.name) == credential_from_salted(
        "sha256", salted, SALT, 4096)
    assert call_describe(ctx, None) == [("alice", 0, "", [(1, 4096)]),
                                        ("bob", 0, "", [(2, 8192)])]
    assert call_describe(ctx, []) == call_describe(ctx, None)
    assert ScramCredentialStore(str(tmp_path)).lookup("bob", SHA_512.name) is not None


def test_describe_errors(tmp_path: Path) -> None:
    ctx = Ctx(tmp_path)
    call_alter(ctx, upsertions=[upsert("alice")])
    assert call_describe(ctx, ["alice", "nobody", "alice"]) == [
        ("alice", ErrorCode.DUPLICATE_RESOURCE,
         "Cannot describe SCRAM credentials for the same user twice in a single request: alice",
         []),
        ("nobody", ErrorCode.RESOURCE_NOT_FOUND,
         "Attempt to describe a user credential that does not exist: nobody", []),
    ]


@pytest.mark.parametrize("upsertion,code,message", [
    (upsert("alice", iterations=4095), ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
    (upsert("alice", iterations=16385), ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
    (upsert("alice", mechanism=0), ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
    (upsert("alice", mechanism=3), ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
    (upsert(""), ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
])
def test_upsertion_validation(tmp_path: Path, upsertion: Any, code: int, message: str) -> None:
    ctx = Ctx(tmp_path)
    assert call_alter(ctx, upsertions=[upsertion]) == {upsertion.name: (code, message)}
    assert ctx.scram_credentials.users() == {}
    assert call_alter(ctx, upsertions=[upsert("ok", iterations=16384)]) == {"ok": (0, None)}


def test_duplicates_and_deletions(tmp_path: Path) -> None:
    ctx = Ctx(tmp_path)
    call_alter(ctx, upsertions=[upsert("alice"), upsert("carol")])
    twice = (ErrorCode.DUPLICATE_RESOURCE,
             "A user credential cannot be altered twice in the same request")
    # Two changes of one user, even of different mechanisms, refuse both.
    assert call_alter(ctx, deletions=[ScramCredentialDeletion(name="alice", mechanism=1)],
                      upsertions=[upsert("alice", 2)]) == {"alice": twice}
    assert call_alter(ctx, upsertions=[upsert("bob"), upsert("bob", 2), upsert("bob")]) == {
        "bob": twice}
    assert set(ctx.scram_credentials.users()) == {"alice", "carol"}
    assert call_alter(ctx, deletions=[ScramCredentialDeletion(name="alice", mechanism=2),
                                      ScramCredentialDeletion(name="carol", mechanism=1)]) == {
        "alice": (ErrorCode.RESOURCE_NOT_FOUND,
                  "Attempt to delete a user credential that does not exist"),
        "carol": (0, None)}
    assert set(ctx.scram_credentials.users()) == {"alice"}
    order = AlterUserScramCredentialsRequest(
        deletions=[ScramCredentialDeletion(name="alice", mechanism=1)],
        upsertions=[upsert("dave", iterations=1), upsert("erin")])
    response = asyncio.run(alter.handle(ctx, None, order, 0))  # type: ignore[arg-type]
    # Kafka's order: deletions, then upsertions, then the errors.
    assert [r.user for r in response.results] == ["alice", "erin", "dave"]


def test_storage_failure_answers_every_user_with_storage_error(tmp_path: Path) -> None:
    ctx = Ctx(tmp_path / "data")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "scram-credentials.json.tmp").mkdir()  # the temp file cannot be made
    request = AlterUserScramCredentialsRequest(deletions=[], upsertions=[upsert("alice")])
    with pytest.raises(alter.ApiError) as raised:
        asyncio.run(alter.handle(ctx, None, request, 0))  # type: ignore[arg-type]
    response = alter.error_response(request, 0, raised.value.code)
    assert [(r.user, r.error_code) for r in response.results] == [
        ("alice", ErrorCode.KAFKA_STORAGE_ERROR)]
