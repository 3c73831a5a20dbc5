"""Regex subscriptions resolved asynchronously (GroupMetadataManagerTest:
testConsumerGroupMemberJoinsWithNewRegex, ...WithUpdatedRegex, ...PicksUpExistingResolvedRegex,
testConsumerGroupMemberJoinRefreshesExpiredRegexes, testResolvedRegularExpressionsRemovedWhen
MembersLeaveOrFenced, testConsumerHeartbeatRegexValidation). The heartbeat records the regex;
the zero-delay refresh timer, fired with `advance(0)`, resolves it."""

from __future__ import annotations

from cg_harness import CgHarness, kinds, tid

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.consumer.timers import regex_refresh_key
from groupcoord.wire.errors import ErrorCode as E

KEY = regex_refresh_key("cg")


def _regex_records(h: CgHarness) -> list[str]:
    return [r.key.regular_expression for r in h.log if kinds([r]) == ["Regex"]]


def test_new_regex_answers_at_once_then_refresh_resolves_and_bumps() -> None:
    h = CgHarness(topics={"foo": 2, "food": 1, "bar": 1, "__internal": 1})
    resp = h.hb("a", 0, topics=None, regex="foo.*")
    assert (resp.error_code, resp.member_epoch, h.assigned(resp)) == (0, 1, {})
    assert "Regex" not in kinds(h.log) and h.group().regexes == {}
    assert h.timers[KEY] == h.now  # the refresh runs as its own operation
    start = len(h.log)
    h.advance(0)
    assert kinds(h.log[start:]) == ["Regex", "GroupMeta"]
    value = h.log[start].value
    assert (value.topics, value.version, value.timestamp) == (["foo", "food"], h.version, h.now)
    assert h.group().group_epoch == 2 and h.group().assignment_epoch == 1
    resp = h.hb("a", 1, owned={})
    assert resp.member_epoch == 2
    assert h.assigned(resp) == {"foo": [0, 1], "food": [0]}
    assert h.fresh_replay().snapshot() == h.shard.snapshot()


def test_full_match_and_min_interval_gates_a_second_new_regex() -> None:
    h = CgHarness(topics={"foo": 1, "fo": 1})
    h.hb("a", 0, topics=None, regex="foo.*")
    h.advance(0)
    r = h.hb("b", 0, topics=None, regex="f")
    assert KEY not in h.timers  # within 10 s of the last refresh, even for a new regex
    assert h.assigned(r) == {} and "f" not in h.group().regexes
    h.advance(10_001)
    h.hb("b", r.member_epoch, owned={})
    h.advance(0)
    # Full match, as RE2/J `matches()`: "f" matches neither "foo" nor "fo".
    assert h.group().regexes["f"].topics == frozenset()
    assert h.group().regexes["foo.*"].topics == frozenset({"foo"})


def test_invalid_regex() -> None:
    h = CgHarness()
    resp = h.hb("a", 0, topics=None, regex="(?<=x)y")
    assert resp.error_code == E.INVALID_REGULAR_EXPRESSION
    assert h.log == [] and KEY not in h.timers


def test_same_regex_from_several_members_resolves_once() -> None:
    h = CgHarness(topics={"foo": 4, "bar": 1})
    ra = h.hb("a", 0, topics=None, regex="f.*")
    rb = h.hb("b", 0, topics=None, regex="f.*")
    assert h.shard.consumer.regex_refreshes == {"cg": frozenset({"f.*"})}
    epoch = h.group().group_epoch
    h.advance(0)
    assert _regex_records(h) == ["f.*"]
    assert h.group().group_epoch == epoch + 1
    a = h.assigned(h.hb("a", ra.member_epoch, owned={}))
    b = h.assigned(h.hb("b", rb.member_epoch, owned={}))
    assert sorted(a["foo"] + b["foo"]) == [0, 1, 2, 3]


def test_existing_resolved_regex_bumps_at_once_and_is_dropped_with_last_member() -> None:
    h = CgHarness(topics={"foo": 2, "bar": 1})
    h.hb("a", 0, topics=None, regex="f.*")
    h.advance(0)
    epoch = h.group().group_epoch
    h.hb("b", 0, topics=None, regex="f.*")
    assert h.group().group_epoch == epoch + 1 and KEY not in h.timers
    assert _regex_records(h) == ["f.*"]
    h.hb("a", -1)
    assert "f.*" in h.group().regexes
    h.hb("b", -1)
    assert "Regex-" in kinds(h.log) and h.group().regexes == {}


def test_created_topic_is_picked_up_by_a_later_refresh() -> None:
    h = CgHarness(topics={"foo": 1})
    r = h.hb("a", 0, topics=None, regex="fo.*")
    h.advance(0)
    r = h.hb("a", r.member_epoch, owned={})
    assert h.assigned(r) == {"foo": [0]}
    h.set_topics({"foo": 1, "fox": 2})
    h.advance(5_000)
    h.hb("a", r.member_epoch, owned={"foo": [0]})
    assert KEY not in h.timers  # within 10 s of the last resolution
    h.advance(5_001)
    resp = h.hb("a", r.member_epoch, owned={"foo": [0]})
    assert resp.assignment is None and h.timers[KEY] == h.now
    h.advance(0)
    assert h.group().regexes["fo.*"].topics == frozenset({"foo", "fox"})
    assert h.group().regexes["fo.*"].version == h.version
    resp = h.hb("a", r.member_epoch, owned={"foo": [0]})
    assert h.assigned(resp) == {"foo": [0], "fox": [0, 1]}
    assert tid("fox") in h.group().target["a"]
    assert h.fresh_replay().snapshot() == h.shard.snapshot()


def test_periodic_refresh_rewrites_the_regex_without_a_bump() -> None:
    h = CgHarness(GroupCoordinatorConfig(group_consumer_regex_refresh_interval_ms=60_000,
                                         group_consumer_assignment_interval_ms=0),
                  topics={"foo": 1})
    r = h.hb("a", 0, topics=None, regex="fo.*")
    h.advance(0)
    r = h.hb("a", r.member_epoch, owned={})
    epoch, start = h.group().group_epoch, len(h.log)
    h.advance(30_000)
    h.hb("a", r.member_epoch, owned={"foo": [0]})
    assert KEY not in h.timers  # nothing new, refresh interval not reached
    h.advance(30_001)
    h.hb("a", r.member_epoch, owned={"foo": [0]})
    h.advance(0)
    assert kinds(h.log[start:]) == ["Regex"]
    assert h.group().regexes["fo.*"].timestamp_ms == h.now
    assert h.group().group_epoch == epoch


def test_refresh_after_the_last_subscriber_left_writes_nothing() -> None:
    h = CgHarness(topics={"foo": 1})
    h.hb("a", 0, topics=None, regex="fo.*")
    h.hb("a", -1)
    start = len(h.log)
    h.advance(0)
    assert h.log[start:] == [] and h.shard.consumer.regex_refreshes == {}


def test_pending_refresh_is_dropped_on_load_and_rearmed_by_a_heartbeat() -> None:
    h = CgHarness(topics={"foo": 1})
    r = h.hb("a", 0, topics=None, regex="fo.*")
    h.timers.pop(KEY)  # the runtime's timers die with the shard
    h.apply(h.shard.on_loaded(h.now))
    assert h.shard.consumer.regex_refreshes == {}
    h.hb("a", r.member_epoch, owned={})
    assert h.shard.consumer.regex_refreshes == {"cg": frozenset({"fo.*"})}
    h.advance(0)
    assert h.group().regexes["fo.*"].topics == frozenset({"foo"})
