"""Slowing down token guesses at the UI: per client address, exponential back-off after wrong tokens.

A wrong token on the login page (or as a bearer shown to the UI) counts against the client's address; the
first ``free`` are free, then each wrong one makes the address wait 1 s, 2 s, 4 s ... at most ``max_delay``
before its next try, which is answered 429 with ``Retry-After`` until then (the token is not even checked).
A right token clears the address's count, as does an hour without a wrong one.

The address is the one the UI's server concluded: uvicorn takes ``X-Forwarded-For`` only from the proxies
it trusts (``FORWARDED_ALLOW_IPS``, loopback by default), never from anyone else. IPv6 clients count per /64
network, which is what one host usually gets. The table is bounded: once ``capacity`` addresses are being
counted, an address not yet in it shares one count with every other such address rather than push out what
is known, so flooding from many addresses never resets anyone's wait.
"""

from __future__ import annotations

import ipaddress
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import Scope

FORGET_SECONDS = 3600.0
CAPACITY = 10_000
OVERFLOW = "*"  # the shared count of addresses beyond the capacity


@dataclass
class _Record:
    failures: int
    last: float  # clock time of the last wrong token
    until: float  # no try before this


def client_key(scope: Scope) -> str:
    """The address a request is counted under: the client's IP (IPv6: its /64), as the server concluded."""
    client = scope.get("client")
    host = str(client[0]) if client else ""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
    return str(ip)


class Throttle:
    """The counts (at most ``capacity`` addresses and the shared one), in the event loop's thread only: no
    locking, and no await between a check and its count."""

    def __init__(
        self,
        free: int = 5,
        max_delay: float = 300.0,
        *,
        forget: float = FORGET_SECONDS,
        capacity: int = CAPACITY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.free = free
        self.max_delay = max_delay
        self.forget = max(forget, max_delay)
        self.capacity = capacity
        self._clock = clock
        self._records: OrderedDict[str, _Record] = OrderedDict()  # oldest wrong token first

    def __len__(self) -> int:
        return len(self._records)

    def delay(self, failures: int) -> float:
        """The wait after the ``failures``-th wrong token in a row."""
        if failures <= self.free:
            return 0.0
        return float(min(2.0 ** min(failures - self.free - 1, 32), self.max_delay))

    def _key(self, key: str) -> str:
        """``key``, or the shared count when the table is full and ``key`` is not in it."""
        if key in self._records or len(self._records) < self.capacity:
            return key
        self._drop_forgotten()
        return key if len(self._records) < self.capacity else OVERFLOW

    def _drop_forgotten(self) -> None:
        now = self._clock()
        while self._records:
            oldest = next(iter(self._records.values()))
            if now - oldest.last <= self.forget:
                break
            self._records.popitem(last=False)

    def wait(self, key: str) -> float:
        """Seconds before ``key`` may try a token again (0: now)."""
        record = self._records.get(self._key(key))
        return 0.0 if record is None else max(0.0, record.until - self._clock())

    def failed(self, key: str) -> float:
        """Count a wrong token; returns the wait it imposes."""
        now = self._clock()
        key = self._key(key)
        record = self._records.pop(key, None)
        if record is None or now - record.last > self.forget:
            record = _Record(0, now, now)
        record.failures += 1
        record.last = now
        record.until = now + self.delay(record.failures)
        self._records[key] = record  # the most recent last
        return record.until - now

    def succeeded(self, key: str) -> None:
        """A right token: the address starts afresh (the shared count stays)."""
        self._records.pop(key, None)
