"""The sticky task assignor against the cases of Kafka's `StickyTaskAssignorTest`
(group-coordinator/src/test/java/org/apache/kafka/coordinator/group/streams/assignor/
StickyTaskAssignorTest.java, 4.4), each test named after the Java case it follows."""

from __future__ import annotations

from groupcoord.coordinator.streams.assignor import MemberSpec, SubtopologySpec, assign

SUB = "test-subtopology"


def member(process: str, active: dict[str, set[int]] | None = None,
           standby: dict[str, set[int]] | None = None,
           offsets: dict[tuple[str, int], int] | None = None) -> MemberSpec:
    return MemberSpec(process, {s: frozenset(p) for s, p in (active or {}).items()},
                      {s: frozenset(p) for s, p in (standby or {}).items()}, offsets or {})


def topology(tasks: int, stateful: bool, *subtopologies: str) -> dict[str, SubtopologySpec]:
    return {s: SubtopologySpec(tasks, stateful) for s in subtopologies or (SUB,)}


def active(result: dict, member_id: str, sub: str = SUB) -> set[int]:
    return set(result[member_id].active.get(sub, ()))


def standby(result: dict, member_id: str, sub: str = SUB) -> set[int]:
    return set(result[member_id].standby.get(sub, ()))


def test_should_assign_one_active_task_to_each_process_when_task_count_same_as_process_count(
) -> None:
    result = assign({"m1": member("p1"), "m2": member("p2"), "m3": member("p3")},
                    topology(3, False), 0)
    assert [len(active(result, m)) for m in ("m1", "m2", "m3")] == [1, 1, 1]
    assert set().union(*(active(result, m) for m in result)) == {0, 1, 2}


def test_should_not_migrate_active_task_to_other_process() -> None:
    result = assign({"member1": member("process1", {SUB: {0}}),
                     "member2": member("process2", {SUB: {1}})}, topology(3, False), 0)
    assert 0 in active(result, "member1") and 1 in active(result, "member2")
    assert len(active(result, "member1")) + len(active(result, "member2")) == 3
    result = assign({"member2": member("process2", {SUB: {1}}),
                     "member3": member("process1", {SUB: {2}})}, topology(3, False), 0)
    assert 1 in active(result, "member2") and 2 in active(result, "member3")


def test_should_migrate_active_tasks_to_new_process_without_changing_all_assignments() -> None:
    result = assign({"member1": member("process1", {SUB: {0, 2}}),
                     "member2": member("process2", {SUB: {1}}),
                     "member3": member("process3")}, topology(3, False), 0)
    assert active(result, "member2") == {1}
    assert len(active(result, "member1")) == 1 and active(result, "member1") <= {0, 2}
    assert active(result, "member1") | active(result, "member3") == {0, 2}


def test_should_assign_tasks_to_client_with_previous_standby_tasks() -> None:
    result = assign({"member1": member("process1", standby={SUB: {2}}),
                     "member2": member("process2", standby={SUB: {1}}),
                     "member3": member("process3", standby={SUB: {0}})}, topology(3, False), 0)
    assert (active(result, "member1"), active(result, "member2"),
            active(result, "member3")) == ({2}, {1}, {0})


def test_should_not_assign_standby_tasks_to_client_with_previous_standby_and_current_active(
) -> None:
    result = assign({"member1": member("process1", standby={SUB: {0}}),
                     "member2": member("process2", standby={SUB: {1}})}, topology(2, True), 1)
    assert active(result, "member1") == {0} and standby(result, "member1") == {1}
    assert active(result, "member2") == {1} and standby(result, "member2") == {0}


def test_should_assign_based_on_capacity_when_multiple_client_have_standby_tasks() -> None:
    result = assign({"member1": member("process1", {SUB: {0}}, {SUB: {1}}),
                     "member2_1": member("process2", {SUB: {2}}, {SUB: {1}}),
                     "member2_2": member("process2")}, topology(3, False), 0)
    assert active(result, "member1") == {0}
    assert active(result, "member2_1") == {2}
    assert active(result, "member2_2") == {1}


def test_should_assign_standby_tasks_to_different_client_than_corresponding_active_task(
) -> None:
    members = {f"member{i + 1}": member(f"process{i + 1}", {SUB: {i}}) for i in range(4)}
    result = assign(members, topology(4, True), 1)
    for i in range(4):
        assert i not in standby(result, f"member{i + 1}")
        assert len(standby(result, f"member{i + 1}")) <= 2
    assert sum(1 for m in result if standby(result, m)) >= 3
    assert set().union(*(standby(result, m) for m in result)) == {0, 1, 2, 3}


def test_should_not_assign_standby_task_replicas_when_no_client_available_without_the_task(
) -> None:
    result = assign({"member1": member("process1", {SUB: {0}})}, topology(1, True), 1)
    assert active(result, "member1") == {0} and standby(result, "member1") == set()


def test_should_assign_each_active_task_to_one_client_when_more_clients_than_tasks() -> None:
    members = {f"m{i}": member(f"p{i}") for i in range(5)}
    result = assign(members, topology(3, False), 0)
    owners = [m for m in result for _ in active(result, m)]
    assert len(owners) == 3 and len(set(owners)) == 3


def test_should_assign_more_tasks_to_client_with_more_capacity() -> None:
    """Capacity is members per process: process2 has two members, so twice the tasks."""
    result = assign({"m1": member("p1"), "m2a": member("p2"), "m2b": member("p2")},
                    topology(6, False), 0)
    p2 = len(active(result, "m2a")) + len(active(result, "m2b"))
    assert (len(active(result, "m1")), p2) == (2, 4)


def test_should_range_assign_tasks_when_scaling_up() -> None:
    result = assign({"member1": member("process1", {"s1": {0, 1}, "s2": {0, 1}}),
                     "member2": member("process2")}, topology(2, True, "s1", "s2"), 1)
    for m in ("member1", "member2"):
        for s in ("s1", "s2"):
            assert len(active(result, m, s)) == 1 and len(standby(result, m, s)) == 1
    for s in ("s1", "s2"):
        assert active(result, "member1", s) | active(result, "member2", s) == {0, 1}


def test_should_range_assign_tasks_when_starting_empty() -> None:
    result = assign({"member1": member("process1"), "member2": member("process2")},
                    topology(2, True, "s1", "s2"), 1)
    for m in ("member1", "member2"):
        for s in ("s1", "s2"):
            assert len(active(result, m, s)) == 1 and len(standby(result, m, s)) == 1


def test_standby_prefers_most_caught_up_reported_offsets() -> None:
    """`rankStandbyCandidates`: previous standbys first, then the highest offset sum; a
    task with offsets but no standby assignment is a candidate after previous standbys."""
    result = assign({"owner": member("p0", {SUB: {0}}),
                     "lagging": member("p1", offsets={(SUB, 0): 10}),
                     "caught-up": member("p2", offsets={(SUB, 0): 500})},
                    topology(1, True), 1)
    assert active(result, "owner") == {0}
    assert standby(result, "caught-up") == {0} and standby(result, "lagging") == set()


def test_every_task_assigned_once_and_never_with_its_own_standby() -> None:
    members = {f"m{i}": member(f"p{i % 3}") for i in range(7)}
    result = assign(members, topology(8, True, "a", "b", "c"), 2)
    for s in ("a", "b", "c"):
        owners = [m for m in result for p in active(result, m, s)]
        assert len(owners) == 8
        for p in range(8):
            processes_with_task = [members[m].process_id for m in result
                                   if p in active(result, m, s) | standby(result, m, s)]
            assert len(processes_with_task) == len(set(processes_with_task)) == 3
