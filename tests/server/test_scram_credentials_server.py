"""SCRAM users managed online: AlterUserScramCredentials over the wire (upsert with the
client's SaltedPassword, as Kafka's admin client sends it), then a SCRAM login with the new
password works at once and after a restart; a deletion locks the user out."""

from __future__ import annotations

import os
from pathlib import Path

from broker_inproc import InProcBroker, run
from helpers.sasl_wire import connect, scram_login

from groupcoord.security.config import SecurityConfig
from groupcoord.security.scram import salted_password
from groupcoord.server.config import Listener
from groupcoord.wire.generated.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from groupcoord.wire.generated.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)


def broker(data: Path) -> InProcBroker:
    return InProcBroker(data, listeners=(Listener("127.0.0.1", 0),
                                         Listener("127.0.0.1", 0, "SASL_PLAINTEXT")),
                        security=SecurityConfig())


def test_online_upsert_login_restart_delete(tmp_path: Path) -> None:
    salt = os.urandom(16)
    upsert = AlterUserScramCredentialsRequest(deletions=[], upsertions=[
        ScramCredentialUpsertion(name="alice", mechanism=2, iterations=4096, salt=salt,
                                 salted_password=salted_password("sha512", b"pw", salt, 4096))])

    async def main() -> None:
        async with broker(tmp_path) as b:
            admin = await connect(b.port)
            answer = await admin.call(upsert, 0, AlterUserScramCredentialsResponse)
            assert [(r.user, r.error_code) for r in answer.results] == [("alice", 0)]
            final, _ = await scram_login(await connect(b.broker.bound[1].port),
                                         "SCRAM-SHA-512", "alice", "pw")
            assert final.error_code == 0
            wrong, _ = await scram_login(await connect(b.broker.bound[1].port),
                                         "SCRAM-SHA-256", "alice", "pw")
            assert wrong.error_code == 58  # no SHA-256 credential was added
        async with broker(tmp_path) as b:
            admin = await connect(b.port)
            described = await admin.call(DescribeUserScramCredentialsRequest(users=None), 0,
                                         DescribeUserScramCredentialsResponse)
            assert [(r.user, [(i.mechanism, i.iterations) for i in r.credential_infos])
                    for r in described.results] == [("alice", [(2, 4096)])]
            final, _ = await scram_login(await connect(b.broker.bound[1].port),
                                         "SCRAM-SHA-512", "alice", "pw")
            assert final.error_code == 0
            removed = await admin.call(AlterUserScramCredentialsRequest(
                deletions=[ScramCredentialDeletion(name="alice", mechanism=2)], upsertions=[]),
                0, AlterUserScramCredentialsResponse)
            assert removed.results[0].error_code == 0
            gone, _ = await scram_login(await connect(b.broker.bound[1].port),
                                        "SCRAM-SHA-512", "alice", "pw")
            assert gone.error_code == 58
    run(main())
