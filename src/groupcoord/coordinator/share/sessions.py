"""Share sessions: the epoch rules of ShareFetch and ShareAcknowledge.

Mirrors Kafka's `ShareSessionCache` + `SharePartitionManager.newContext` /
`acknowledgeSessionUpdate` and `ShareRequestMetadata`. A session is keyed by
(group id, member id) and holds the partitions the member fetches from and the epoch it
must send next:

- ShareFetch epoch 0 opens a session (replacing an older one); it may carry no acks.
- epoch -1 closes it (the caller releases the member's records).
- epoch n > 0 must equal the expected epoch; the next expected is n + 1, wrapping to 1.
- ShareAcknowledge never opens a session: epoch 0 -> INVALID_SHARE_SESSION_EPOCH.

Sessions are soft state: they are never written to a log.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from groupcoord.wire.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INT32_MAX = 2**31 - 1

TopicPartition = tuple[bytes, int]


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1
    partitions: dict[TopicPartition, None] = field(default_factory=dict)
    connection_id: str = ""
    # Where the next fetch starts in `partitions`, so that one busy partition cannot
    # starve the others of the request's record budget.
    rotation: int = 0

    def bump(self) -> None:
        self.epoch = 1 if self.epoch >= INT32_MAX else self.epoch + 1


class ShareSessionError(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(ErrorCode(code).name)
        self.code = code


class ShareSessionCache:
    """(group id, member id) -> ShareSession, bounded by `max_sessions`."""

    def __init__(self, max_sessions: int = 2000) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.get((group_id, member_id))

    def fetch_context(self, group_id: str, member_id: str, epoch: int, has_acks: bool,
                      added: Iterable[TopicPartition], forgotten: Iterable[TopicPartition],
                      connection_id: str = "") -> ShareSession:
        """Validate a ShareFetch's epoch and update the session; raise ShareSessionError.

        For epoch -1 the closed session is returned (already removed from the cache).
        """
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            if has_acks:
                raise ShareSessionError(ErrorCode.INVALID_REQUEST)
            if key not in self.sessions and len(self.sessions) >= self.max_sessions:
                raise ShareSessionError(ErrorCode.SHARE_SESSION_LIMIT_REACHED)
            session = self.sessions[key] = ShareSession(group_id, member_id,
                                                        connection_id=connection_id)
        else:
            session = self._existing(key, epoch)
            if epoch == FINAL_EPOCH:
                del self.sessions[key]
                return session
        for tp in forgotten:
            session.partitions.pop(tp, None)
        for tp in added:
            session.partitions[tp] = None
        if epoch != INITIAL_EPOCH:
            session.bump()
        return session

    def acknowledge_context(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """Validate a ShareAcknowledge's epoch; -1 closes the session."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            raise ShareSessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        session = self._existing(key, epoch)
        if epoch == FINAL_EPOCH:
            del self.sessions[key]
        else:
            session.bump()
        return session

    def _existing(self, key: tuple[str, str], epoch: int) -> ShareSession:
        session = self.sessions.get(key)
        if session is None:
            raise ShareSessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
        if epoch != FINAL_EPOCH and epoch != session.epoch:
            raise ShareSessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        return session

    def remove_connection(self, connection_id: str) -> list[ShareSession]:
        """Drop the sessions opened on a closed connection (Kafka: `onMemberLeave`)."""
        gone = [s for s in self.sessions.values() if s.connection_id == connection_id]
        for session in gone:
            del self.sessions[(session.group_id, session.member_id)]
        return gone
