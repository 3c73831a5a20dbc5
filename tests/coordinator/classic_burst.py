"""A deterministic crowd of classic clients joining one group through the manual-clock
harness, for the `group.max.size` tests.

Each joiner runs the client side of the classic protocol as a small state machine (join,
MEMBER_ID_REQUIRED retry, parked join, SyncGroup, heartbeat, rejoin on
REBALANCE_IN_PROGRESS). `Burst.step` lets one joiner take its next action, or moves the
clock a little, in an order drawn from a seeded `random.Random`: thousands of joins
interleave with join phases, initial delays and syncs exactly as a burst of concurrent
clients would reach the single-writer shard. Joiners arrive in waves of random size, so
later waves meet a group that is filling, full, or rebalancing. `observe` runs after every operation so a
test can check an invariant at each step.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from coord_harness import GROUP, Harness

from groupcoord.coordinator.classic.group import ClassicGroup
from groupcoord.coordinator.result import Result
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated.join_group import JoinGroupResponse
from groupcoord.wire.generated.sync_group import SyncGroupResponse

# Long enough that nobody expires while the crowd is driven (the simulated time stays far
# below): the only way out of the group is GROUP_MAX_SIZE_REACHED.
SESSION_MS = 600_000
REBALANCE_MS = 60_000


class Kind(enum.Enum):
    REQUIRED = "dynamic, v9: MEMBER_ID_REQUIRED first"
    DIRECT = "dynamic, v3: joins at once"
    STATIC = "static, v9: group.instance.id"


class Stage(enum.Enum):
    NEW = "new"
    PENDING = "pending"  # told MEMBER_ID_REQUIRED, not back yet
    PARKED = "parked"  # JoinGroup waiting for the join phase to end
    JOINED = "joined"  # has a generation, SyncGroup not sent
    SYNCING = "syncing"  # SyncGroup parked
    SYNCED = "synced"
    REJOIN = "rejoin"  # told REBALANCE_IN_PROGRESS
    REJECTED = "rejected"  # got GROUP_MAX_SIZE_REACHED


IDLE = (Stage.PARKED, Stage.SYNCING, Stage.REJECTED)
DONE = (Stage.SYNCED, Stage.REJECTED)


@dataclass
class Joiner:
    index: int
    kind: Kind
    stage: Stage = Stage.NEW
    member_id: str = ""
    token: int = 0
    generation: int = -1
    members: list[str] = field(default_factory=list)
    max_size_errors: int = 0

    @property
    def version(self) -> int:
        return 3 if self.kind is Kind.DIRECT else 9

    @property
    def instance_id(self) -> str | None:
        return f"instance-{self.index}" if self.kind is Kind.STATIC else None


class RecordingHarness(Harness):
    """The harness, noting which reply tokens each applied result released."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.released: list[int] = []
        super().__init__(*args, **kwargs)

    def apply(self, result: Result) -> Result:
        self.released.extend(reply.token for reply in result.deferred)
        return super().apply(result)


class Burst:
    def __init__(self, h: RecordingHarness, kinds: list[Kind], seed: int,
                 observe: Callable[[], None], clock_step_ms: int = 50) -> None:
        self.h = h
        self.rnd = random.Random(seed)
        self.joiners = [Joiner(i, kinds[i % len(kinds)]) for i in range(len(kinds))]
        self.rnd.shuffle(self.joiners)
        self.observe = observe
        self.clock_step_ms = clock_step_ms
        self.other_errors: list[tuple[str, int]] = []
        # Joiners with an action to take, in a list for O(1) random picks.
        self.ready: list[Joiner] = []
        self.slot: dict[int, int] = {}
        # Not arrived yet: released in waves so that newcomers also reach a group that is
        # already full and rebalancing, not only an empty one.
        self.unreleased = list(self.joiners)
        self.next_wave_step = 0
        self.steps = 0
        self.waiting: dict[int, Joiner] = {}
        self.done = 0

    def group(self) -> ClassicGroup:
        group = self.h.shard.classic.get(GROUP)
        assert group is not None
        return group

    # -- driving -----------------------------------------------------------------------
    def step(self, clock_probability: float = 0.03) -> None:
        """One action of a random joiner that has one, or a clock move."""
        self.steps += 1
        if self.unreleased and self.steps >= self.next_wave_step:
            self._release_wave()
        if not self.ready or self.rnd.random() < clock_probability:
            self.h.advance(self.clock_step_ms)
        else:
            self._act(self.ready[self.rnd.randrange(len(self.ready))])
        self._collect_released()
        self.observe()

    def run(self, max_steps: int) -> int:
        """Step until every joiner is a synced member or rejected and the group is Stable;
        returns the number of steps."""
        for steps in range(1, max_steps + 1):
            self.step()
            if self.done == len(self.joiners) and self.group().state.value == "Stable":
                return steps
        raise AssertionError(f"not settled after {max_steps} steps: "
                             f"{sorted({j.stage.value for j in self.joiners})}")

    def _release_wave(self) -> None:
        size = self.rnd.randrange(1, len(self.joiners) // 4 + 1)
        wave, self.unreleased = self.unreleased[:size], self.unreleased[size:]
        for j in wave:
            self.slot[id(j)] = len(self.ready)
            self.ready.append(j)
        self.next_wave_step = self.steps + self.rnd.randrange(len(self.joiners) // 2,
                                                              len(self.joiners) * 2)

    def _move(self, j: Joiner, stage: Stage) -> None:
        was_ready = j.stage not in IDLE
        was_done = j.stage in DONE
        j.stage = stage
        if was_ready and stage in IDLE:
            index = self.slot.pop(id(j))
            last = self.ready.pop()
            if last is not j:
                self.ready[index] = last
                self.slot[id(last)] = index
        elif not was_ready and stage not in IDLE:
            self.slot[id(j)] = len(self.ready)
            self.ready.append(j)
        self.done += (stage in DONE) - was_done

    # -- one client --------------------------------------------------------------------
    def _act(self, j: Joiner) -> None:
        if j.stage in (Stage.NEW, Stage.PENDING, Stage.REJOIN):
            member_id = "" if j.stage is Stage.NEW else j.member_id
            token, result = self.h.join(member_id=member_id, version=j.version,
                                        instance_id=j.instance_id, client_id=f"c{j.index}",
                                        session_ms=SESSION_MS, rebalance_ms=REBALANCE_MS)
            self._on_join(j, token, result.response)
        elif j.stage is Stage.JOINED:
            leader = j.member_id == self.group().leader_id
            assignments = {m: f"a-{m}".encode() for m in j.members} if leader else None
            token, result = self.h.sync(j.member_id, j.generation, assignments,
                                        instance_id=j.instance_id)
            self._on_sync(j, token, result.response)
        else:
            assert j.stage is Stage.SYNCED
            code = self.h.heartbeat(j.member_id, j.generation, instance_id=j.instance_id)
            if code == E.REBALANCE_IN_PROGRESS:
                self._move(j, Stage.REJOIN)
            elif code != E.NONE:
                self.other_errors.append((j.member_id, code))

    def _on_join(self, j: Joiner, token: int, response: JoinGroupResponse | None) -> None:
        if response is None:
            j.token = token
            self.waiting[token] = j
            self._move(j, Stage.PARKED)
            return
        code = response.error_code
        if code == E.MEMBER_ID_REQUIRED:
            j.member_id = response.member_id
            self._move(j, Stage.PENDING)
        elif code == E.GROUP_MAX_SIZE_REACHED:
            j.max_size_errors += 1
            self._move(j, Stage.REJECTED)
        elif code == E.NONE:
            j.member_id = response.member_id
            j.generation = response.generation_id
            j.members = [m.member_id for m in response.members]
            self._move(j, Stage.JOINED)
        else:
            self.other_errors.append((j.member_id, code))
            self._move(j, Stage.REJOIN)

    def _on_sync(self, j: Joiner, token: int, response: SyncGroupResponse | None) -> None:
        if response is None:
            j.token = token
            self.waiting[token] = j
            self._move(j, Stage.SYNCING)
        elif response.error_code == E.NONE:
            self._move(j, Stage.SYNCED)
        elif response.error_code == E.REBALANCE_IN_PROGRESS:
            self._move(j, Stage.REJOIN)
        else:
            self.other_errors.append((j.member_id, response.error_code))
            self._move(j, Stage.REJOIN)

    def _collect_released(self) -> None:
        released, self.h.released = self.h.released, []
        for token in released:
            j = self.waiting.pop(token, None)
            if j is None:
                continue
            response = self.h.replies.pop(token)
            if j.stage is Stage.PARKED:
                self._on_join(j, token, response)
            else:
                self._on_sync(j, token, response)
