"""Client-side rate limiting: client-go's token bucket (``k8s.io/client-go/util/flowcontrol``).

A :class:`TokenBucketRateLimiter` admits ``qps`` requests a second on average and lets up
to ``burst`` through at once; it starts full, as ``flowcontrol.NewTokenBucketRateLimiter``
(golang.org/x/time/rate's ``Limiter``) does. Each request reserves the next token and
waits, asynchronously, until that token is due, so a burst beyond the bucket is spread
out at ``qps`` and the event loop keeps running meanwhile.

Which limiter a client gets follows client-go's ``rest.RESTClientFor`` (rest/config.go)
and controller-runtime's ``config.GetConfigWithContext`` (pkg/client/config/config.go):

- ``qps < 0`` (:data:`DISABLED`, the default): no client-side limit, as controller-runtime
  since v0.21, which leaves fairness to the server's API Priority and Fairness;
- ``qps == 0``: client-go's defaults, :data:`DEFAULT_QPS` (5) with :data:`DEFAULT_BURST`
  (10);
- ``qps > 0``: that rate; ``burst == 0`` means :data:`DEFAULT_BURST`.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from setpoint.client.errors import ConfigError

__all__ = [
    "DEFAULT_BURST",
    "DEFAULT_QPS",
    "DISABLED",
    "Clock",
    "RateLimiter",
    "TokenBucketRateLimiter",
    "rate_limiter_for",
]

DEFAULT_QPS = 5.0
"""client-go's ``rest.DefaultQPS``, taken when ``qps`` is 0."""
DEFAULT_BURST = 10
"""client-go's ``rest.DefaultBurst``, taken when ``burst`` is 0."""
DISABLED = -1.0
"""A ``qps`` that turns client-side rate limiting off (controller-runtime's default)."""


class RateLimiter(Protocol):
    """What a client asks before each request attempt (client-go's
    ``flowcontrol.RateLimiter``): :meth:`wait` returns once the request may go, and how
    many seconds it waited."""

    async def wait(self) -> float: ...


@dataclass(frozen=True, slots=True)
class Clock:
    """Where a limiter reads the time and how it waits (a test seam: a clock the test
    moves decides when the tokens come, without wall time)."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


class TokenBucketRateLimiter:
    """``qps`` tokens a second, at most ``burst`` saved, full at start."""

    def __init__(self, qps: float, burst: int, *, clock: Clock | None = None) -> None:
        if not (math.isfinite(qps) and qps > 0):
            raise ConfigError(f"qps: {qps!r} is not a positive number of requests a second: "
                              f"pass qps > 0, or qps={DISABLED:g} for no client-side limit")
        if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
            raise ConfigError(f"burst: {burst!r} is not a whole number of requests >= 1: "
                              f"pass burst >= 1 (0 takes the default, {DEFAULT_BURST})")
        self.qps = float(qps)
        self.burst = burst
        self.clock = clock or Clock()
        self._tokens = float(burst)
        self._last = self.clock.now()

    def __repr__(self) -> str:
        return f"TokenBucketRateLimiter(qps={self.qps:g}, burst={self.burst})"

    def _advance(self) -> float:
        now = self.clock.now()
        if now > self._last:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
        return now

    def try_accept(self) -> bool:
        """Take a token if one is there now (``TryAccept``); never waits."""
        self._advance()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def reserve(self) -> float:
        """Take the next token, even one not yet due, and return the seconds until it is
        (x/time/rate's ``Reserve``: the tokens may go below zero, so every waiter is
        handed its own later slot and none is starved)."""
        self._advance()
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def wait(self) -> float:
        """Wait for a token (``Wait``). A waiter cancelled before its token was due gives
        it back, as a cancelled ``Reservation`` does, so an abandoned request does not
        slow the ones after it."""
        delay = self.reserve()
        if delay <= 0:
            return 0.0
        try:
            await self.clock.sleep(delay)
        except asyncio.CancelledError:
            self._advance()
            self._tokens = min(float(self.burst), self._tokens + 1.0)
            raise
        return delay


def rate_limiter_for(qps: float, burst: int, clock: Clock | None = None,
                     ) -> TokenBucketRateLimiter | None:
    """The limiter ``qps`` and ``burst`` ask for, as ``rest.RESTClientFor`` picks it:
    None (no limit) for a negative ``qps``, client-go's defaults for zeros."""
    if isinstance(qps, bool) or not isinstance(qps, int | float) or math.isnan(qps):
        raise ConfigError(f"qps: {qps!r} is not a number: pass requests a second, "
                          f"or qps={DISABLED:g} for no client-side limit")
    if isinstance(burst, bool) or not isinstance(burst, int) or burst < 0:
        raise ConfigError(f"burst: {burst!r} is not a whole number of requests >= 0: "
                          f"pass burst >= 1 (0 takes the default, {DEFAULT_BURST})")
    if qps < 0:
        return None
    return TokenBucketRateLimiter(qps or DEFAULT_QPS, burst or DEFAULT_BURST, clock=clock)
