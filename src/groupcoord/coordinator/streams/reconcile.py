"""Moving a member toward its target tasks (`streams.CurrentAssignmentBuilder`).

Revoke before assign: a member first gives up the tasks it must lose (UNREVOKED_TASKS,
same epoch) and only once its heartbeat no longer reports them moves to the target
epoch and receives new tasks. A task still held elsewhere (an active task by any process,
a standby or warm-up copy by another member of the same process) is not handed out
yet (UNRELEASED_TASKS). Role changes that depend on no other member (active demoted to
standby, standby <-> warm-up) take effect at once so the client recycles the task; a
promotion to active waits until the previous owner released the task.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from groupcoord.coordinator.streams.member import MemberState, StreamsGroupMember
from groupcoord.coordinator.streams.tasks import NO_TASKS, TasksTuple, TasksWithEpochs

ActiveOwner = Callable[[str, int], str | None]
ReplicaOwners = Callable[[str, int], set[str]]
MutTasks = dict[str, set[int]]
MutEpochTasks = dict[str, dict[int, int]]


class FencedMember(Exception):
    """FENCED_MEMBER_EPOCH raised while reconciling."""


@dataclass(frozen=True, slots=True)
class Reconciler:
    member: StreamsGroupMember
    target_epoch: int
    target: TasksTuple
    active_owner: ActiveOwner
    standby_owners: ReplicaOwners
    warmup_owners: ReplicaOwners
    owned: TasksWithEpochs | None

    def build(self) -> StreamsGroupMember:
        m = self.member
        if m.state == MemberState.STABLE:
            if m.member_epoch != self.target_epoch:
                return self._next(m.member_epoch, m.assigned)
            return m
        if m.state == MemberState.UNREVOKED_TASKS:
            if self._not_released(m.pending_revocation):
                return m
            return self._next(m.member_epoch + 1, m.assigned)
        if m.state == MemberState.UNRELEASED_TASKS:
            return self._next(m.member_epoch, m.assigned)
        if self.owned is None or not self.owned.is_empty():
            raise FencedMember("The streams group member is in a unknown state. The member "
                               "must abandon all its tasks and rejoin.")
        return self._next(self.target_epoch, m.assigned)

    def _not_released(self, pending: TasksWithEpochs) -> bool:
        """Without an owned-tasks report nothing is proven released (`hasNotReleased`)."""
        return self.owned is None or self.owned.contains_any(pending)

    def _next(self, epoch: int, current: TasksWithEpochs) -> StreamsGroupMember:
        act_keep: MutEpochTasks = {}
        act_revoke: MutEpochTasks = {}
        act_add: MutEpochTasks = {}
        unreleased = self._diff_active(current.active, act_keep, act_revoke, act_add)
        sb_keep: MutTasks = {}
        sb_revoke: MutTasks = {}
        sb_add: MutTasks = {}
        unreleased |= _diff(current.standby, self.target.standby, sb_keep, sb_revoke, sb_add,
                            lambda s, p: self._unreleased_standby(current, s, p))
        wu_keep: MutTasks = {}
        wu_revoke: MutTasks = {}
        wu_add: MutTasks = {}
        unreleased |= _diff(current.warmup, self.target.warmup, wu_keep, wu_revoke, wu_add,
                            lambda s, p: self._unreleased_warmup(current, s, p))
        # Demotion active -> standby and conversions standby <-> warm-up: granted now.
        for s, parts in current.active.items():
            for p in parts:
                if p in sb_add.get(s, ()):
                    _grant(sb_add, sb_keep, s, p)
        _convert(current.standby, sb_revoke, wu_add, wu_keep)
        _convert(current.warmup, wu_revoke, sb_add, sb_keep)
        # Promotions to active: no client-side revocation; kept until granted.
        self._drop_promoted(current.standby, sb_revoke)
        self._drop_promoted(current.warmup, wu_revoke)
        revoke = TasksWithEpochs(act_revoke, _frozen(sb_revoke), _frozen(wu_revoke))
        revoking = not revoke.is_empty() and self._not_released(revoke)
        self._keep_promoted(current.standby, sb_keep, act_add, revoking)
        self._keep_promoted(current.warmup, wu_keep, act_add, revoking)
        keep = TasksWithEpochs(act_keep, _frozen(sb_keep), _frozen(wu_keep))
        add = TasksWithEpochs(act_add, _frozen(sb_add), _frozen(wu_add))
        return self._new_member(epoch, revoke, keep, add, unreleased)

    def _diff_active(self, current: dict[str, dict[int, int]], keep: MutEpochTasks,
                     revoke: MutEpochTasks, add: MutEpochTasks) -> bool:
        unreleased = False
        for s in set(current) | set(self.target.active):
            mine = current.get(s, {})
            target = self.target.active.get(s, frozenset())
            kept = {p: e for p, e in mine.items() if p in target}
            revoked = {p: e for p, e in mine.items() if p not in kept}
            added = {p: self.target_epoch for p in target if p not in kept}
            for p in list(added):
                if self._unreleased_active(s, p):
                    del added[p]
                    unreleased = True
            for out, part in ((keep, kept), (revoke, revoked), (add, added)):
                if part:
                    out[s] = part
        return unreleased

    def _unreleased_active(self, s: str, p: int) -> bool:
        return self.active_owner(s, p) is not None \
            or self._held_elsewhere_here(self.standby_owners, self.member.assigned.standby, s, p) \
            or self._held_elsewhere_here(self.warmup_owners, self.member.assigned.warmup, s, p)

    def _unreleased_standby(self, current: TasksWithEpochs, s: str, p: int) -> bool:
        pid = self.member.process_id
        run_elsewhere_here = self.active_owner(s, p) == pid and p not in current.active.get(s, {})
        return run_elsewhere_here or pid in self.standby_owners(s, p) \
            or self._held_elsewhere_here(self.warmup_owners, current.warmup, s, p)

    def _unreleased_warmup(self, current: TasksWithEpochs, s: str, p: int) -> bool:
        pid = self.member.process_id
        return self.active_owner(s, p) == pid \
            or self._held_elsewhere_here(self.standby_owners, current.standby, s, p) \
            or pid in self.warmup_owners(s, p)

    def _held_elsewhere_here(self, owners: ReplicaOwners, mine: dict[str, frozenset[int]],
                             s: str, p: int) -> bool:
        return self.member.process_id in owners(s, p) and p not in mine.get(s, frozenset())

    def _drop_promoted(self, replicas: dict[str, frozenset[int]], revoke: MutTasks) -> None:
        for s, parts in replicas.items():
            target_active = self.target.active.get(s, frozenset())
            for p in parts:
                if p in target_active:
                    _remove(revoke, s, p)

    def _keep_promoted(self, replicas: dict[str, frozenset[int]], keep: MutTasks,
                       act_add: MutEpochTasks, revoking: bool) -> None:
        for s, parts in replicas.items():
            target_active = self.target.active.get(s, frozenset())
            granted = act_add.get(s, {})
            for p in parts:
                promoted_now = not revoking and p in granted
                if p in target_active and not promoted_now:
                    keep.setdefault(s, set()).add(p)

    def _new_member(self, epoch: int, revoke: TasksWithEpochs, keep: TasksWithEpochs,
                    add: TasksWithEpochs, unreleased: bool) -> StreamsGroupMember:
        m = self.member
        if not revoke.is_empty() and self._not_released(revoke):
            return replace(m.with_epoch(epoch), state=MemberState.UNREVOKED_TASKS,
                           assigned=keep, pending_revocation=revoke)
        if not add.is_empty():
            state = MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE
            return replace(m.with_epoch(self.target_epoch), state=state,
                           assigned=keep.merge(add), pending_revocation=NO_TASKS)
        state = MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE
        return replace(m.with_epoch(self.target_epoch), state=state, assigned=keep,
                       pending_revocation=NO_TASKS)


def _diff(current: dict[str, frozenset[int]], target: dict[str, frozenset[int]],
          keep: MutTasks, revoke: MutTasks, add: MutTasks,
          unreleased: Callable[[str, int], bool]) -> bool:
    """`computeAssignmentDifference`: kept = current & target, revoke = current - kept,
    add = target - kept - unreleased; returns whether any task was unreleased."""
    found = False
    for s in set(current) | set(target):
        mine, wanted = current.get(s, frozenset()), target.get(s, frozenset())
        kept = set(mine & wanted)
        revoked = set(mine - kept)
        added = {p for p in wanted - kept if not unreleased(s, p)}
        found |= len(added) != len(wanted - kept)
        for out, part in ((keep, kept), (revoke, revoked), (add, added)):
            if part:
                out[s] = part
    return found


def _grant(pending: MutTasks, assigned: MutTasks, s: str, p: int) -> None:
    _remove(pending, s, p)
    assigned.setdefault(s, set()).add(p)


def _convert(outgoing: dict[str, frozenset[int]], out_revoke: MutTasks,
             in_add: MutTasks, in_keep: MutTasks) -> None:
    """`convertReplicaRole`: a task moving between standby and warm-up on this member."""
    for s, parts in outgoing.items():
        for p in parts:
            if p in in_add.get(s, ()):
                _grant(in_add, in_keep, s, p)
                _remove(out_revoke, s, p)


def _remove(tasks: MutTasks, s: str, p: int) -> None:
    parts = tasks.get(s)
    if parts is not None and p in parts:
        parts.discard(p)
        if not parts:
            del tasks[s]


def _frozen(tasks: MutTasks) -> dict[str, frozenset[int]]:
    return {s: frozenset(p) for s, p in tasks.items() if p}
