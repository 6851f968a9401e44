"""The UI's sessions and login throttle on a clock of the test's own: lifetimes, revocation, bounds."""

from __future__ import annotations

from dataclasses import dataclass

from deskpilot.ui.sessions import SKEW_MS, Sessions
from deskpilot.ui.throttle import OVERFLOW, Throttle, client_key


@dataclass
class Clock:
    now: float = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


TOKEN = "unit-token-0123456789"


def test_a_session_expires_after_its_ttl_and_a_revoked_one_stays_revoked() -> None:
    clock = Clock()
    sessions = Sessions(TOKEN, 3600, clock=clock)
    value = sessions.issue()
    session = sessions.session(value)
    assert session is not None and session.expires == clock.now + 3600
    clock.now += 3599
    assert sessions.accepts(value)
    clock.now += 1
    assert not sessions.accepts(value)
    clock.now -= 1800
    sessions.revoke(session)
    assert not sessions.accepts(value)
    assert sessions.accepts(sessions.issue())


def test_what_is_not_a_session() -> None:
    clock = Clock()
    sessions = Sessions(TOKEN, 3600, clock=clock)
    sid, issued, mac = sessions.issue().split(".")
    assert not sessions.accepts(f"{sid}.{'١' * len(issued)}.{mac}")  # digits, not ASCII ones
    assert not sessions.accepts("")
    assert not sessions.accepts(f".{issued}.{mac}")
    assert not Sessions("another token", 3600, clock=clock).accepts(f"{sid}.{issued}.{mac}")
    # a replica's clock may run a little ahead, never a minute
    ahead = Sessions(TOKEN, 3600, clock=Clock(clock.now + (SKEW_MS + 1000) / 1000)).issue()
    assert not sessions.accepts(ahead)
    close = Sessions(TOKEN, 3600, clock=Clock(clock.now + 5)).issue()
    assert sessions.accepts(close)


def test_revocations_are_bounded_and_overflowing_them_ends_every_session() -> None:
    clock = Clock()
    sessions = Sessions(TOKEN, 60, max_revoked=3, clock=clock)
    values = [sessions.issue() for _ in range(5)]
    for value in values[:3]:
        found = sessions.session(value)
        assert found is not None
        sessions.revoke(found)
    clock.now += 61  # the three would have expired by now: forgotten, not counted
    fresh = [sessions.issue() for _ in range(5)]
    for value in fresh[:3]:
        found = sessions.session(value)
        assert found is not None
        sessions.revoke(found)
    assert [sessions.accepts(v) for v in fresh] == [False, False, False, True, True]
    found = sessions.session(fresh[3])
    assert found is not None
    sessions.revoke(found)  # a fourth while three are kept: every session ends, none is forgotten
    assert not any(sessions.accepts(v) for v in fresh)
    assert sessions.accepts(sessions.issue())


def test_the_back_off_doubles_up_to_its_cap_and_a_success_clears_it() -> None:
    clock = Clock()
    throttle = Throttle(free=2, max_delay=8, clock=clock)
    waits = [throttle.failed("a") for _ in range(7)]
    assert waits == [0, 0, 1, 2, 4, 8, 8]
    assert throttle.wait("a") == 8 and throttle.wait("b") == 0
    clock.now += 5
    assert throttle.wait("a") == 3
    throttle.succeeded("a")
    assert throttle.wait("a") == 0 and throttle.failed("a") == 0


def test_an_hour_without_a_wrong_token_forgets_the_count() -> None:
    clock = Clock()
    throttle = Throttle(free=1, max_delay=60, clock=clock)
    assert [throttle.failed("a") for _ in range(3)] == [0, 1, 2]
    clock.now += 3601
    assert throttle.failed("a") == 0


def test_the_table_is_bounded_and_flooding_it_resets_nobody() -> None:
    clock = Clock()
    throttle = Throttle(free=0, max_delay=60, capacity=100, clock=clock)
    throttle.failed("victim-of-nothing")
    throttle.failed("attacker")
    throttle.failed("attacker")  # waits 2 s
    for n in range(10_000):
        throttle.failed(f"10.0.{n // 256}.{n % 256}")
    assert len(throttle) <= 101  # the addresses it had room for, and the one count they share beyond
    assert throttle.wait("attacker") == 2  # still known: the flood did not push it out
    assert throttle.wait("203.0.113.9") > 0  # a newcomer shares the flood's count
    assert OVERFLOW in throttle._records
    clock.now += 3601  # once forgotten, room again
    assert throttle.wait("203.0.113.9") == 0
    assert throttle.failed("203.0.113.9") == 1 and "203.0.113.9" in throttle._records


def test_addresses_count_per_ipv4_host_and_per_ipv6_64() -> None:
    def key(host: str) -> str:
        return client_key({"client": (host, 1234)})

    assert key("192.0.2.7") == "192.0.2.7"
    assert key("2001:db8:1:2:3:4:5:6") == key("2001:db8:1:2:ffff::1") == "2001:db8:1:2::/64"
    assert key("2001:db8:1:3::1") != key("2001:db8:1:2::1")
    assert key("::ffff:192.0.2.7") == "192.0.2.7"
    assert client_key({}) == ""
